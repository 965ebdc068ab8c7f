"""AWS event-stream framing: the parser against real Bedrock captures, any chunking, corruption and the bounds."""

from __future__ import annotations

import base64
import gc
import json
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_reasoning_proxy.answer.tap import ResponseTap, TapResult
from llm_reasoning_proxy.shared.limits import MAX_KNOWN_HEADER_BLOCK_BYTES, MAX_KNOWN_HEADER_BLOCKS
from llm_reasoning_proxy.wire.anthropic.format import AnthropicMessages
from llm_reasoning_proxy.wire.bedrock_converse.format import BedrockConverse
from llm_reasoning_proxy.wire.event_stream import (
    MAX_FRAME_BYTES,
    MAX_HEADERS_BYTES,
    CorruptFrame,
    EventStreamParser,
    Frame,
    FrameEvents,
    encode_frame,
    event_frame,
    frame_event,
)

from tests.support import capture
from tests.support.aws_frames import by_hand

FIXTURES = Path(__file__).parent / "fixtures" / "bedrock"
STREAMS = sorted(FIXTURES.glob("*.eventstream"))


def frames_of(raw: bytes, pieces: list[bytes] | None = None) -> list[Frame]:
    parser = EventStreamParser()
    frames = [frame for piece in (pieces or [raw]) for frame in parser.feed(piece)]
    assert parser.pending == 0
    return frames


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_real_converse_streams_parse_frame_by_frame(path: Path) -> None:
    raw = path.read_bytes()
    frames = frames_of(raw)
    assert [(frame.headers, frame.payload) for frame in frames] == by_hand(raw)
    assert {frame.message_type for frame in frames} == {"event"}
    assert frames[0].event_type == "messageStart" and frames[-1].event_type == "metadata"
    assert all(json.loads(frame.payload)["p"] for frame in frames)  # the random-length padding key


def test_the_first_frame_is_laid_out_as_documented() -> None:
    raw = (FIXTURES / "pydanticai_claude37_converse_stream_redacted_reasoning_0_response_200.eventstream").read_bytes()
    assert raw[:12].hex() == "00000082000000522b610c43"  # total 130, headers 82, prelude CRC
    (first, *_) = frames_of(raw)
    assert first.payload == b'{"p":"abcde","role":"assistant"}'
    assert len(encode_frame(first.headers, first.payload)) == 130
    assert encode_frame(first.headers, first.payload) == raw[:130]  # the encoder writes what Bedrock wrote


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_chunking_gives_the_same_frames(data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from(STREAMS)).read_bytes()
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=60))
    assert frames_of(raw, capture.split(raw, cuts)) == frames_of(raw)


def test_byte_by_byte_gives_the_same_frames() -> None:
    for path in STREAMS:
        raw = path.read_bytes()
        assert frames_of(raw, [raw[i : i + 1] for i in range(len(raw))]) == frames_of(raw)


HEADER_VALUES = st.one_of(
    st.booleans(),
    st.integers(-(2**31), 2**31 - 1),
    st.binary(max_size=40),
    st.text(max_size=40),
    st.uuids(),
)


@settings(max_examples=200, deadline=None)
@given(
    headers=st.dictionaries(st.text(st.characters(codec="ascii"), min_size=1, max_size=20), HEADER_VALUES, max_size=6),
    payload=st.binary(max_size=300),
)
def test_every_header_type_round_trips(headers: dict, payload: bytes) -> None:
    (frame,) = frames_of(encode_frame(headers, payload))
    assert frame == Frame(headers, payload)


def test_headers_of_every_documented_type_are_read() -> None:
    """Byte, short, long and timestamp, which the encoder does not write (Bedrock sends strings only)."""
    raw_headers = (
        b"\x01a\x02\xff"  # byte -1
        b"\x01b\x03\x01\x00"  # short 256
        b"\x01c\x05" + struct.pack(">q", -5) + b"\x01d\x08" + struct.pack(">q", 1_700_000_000_000)  # long, timestamp
    )
    prelude = struct.pack(">II", 16 + len(raw_headers) + 2, len(raw_headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw_headers + b"{}"
    (frame,) = frames_of(body + struct.pack(">I", zlib.crc32(body)))
    assert frame.headers == {"a": -1, "b": 256, "c": -5, "d": 1_700_000_000_000} and frame.payload == b"{}"


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_changed_byte_of_a_frame_is_refused(data: st.DataObject) -> None:
    raw = event_frame("contentBlockDelta", data.draw(st.binary(max_size=200)))
    at = data.draw(st.integers(0, len(raw) - 1))
    spoilt = bytearray(raw)
    spoilt[at] ^= data.draw(st.integers(1, 255))
    parser = EventStreamParser()
    with pytest.raises(CorruptFrame):
        parser.feed(bytes(spoilt))
        raise AssertionError(f"a frame with byte {at} changed was accepted")  # pragma: no cover


def test_a_frame_announcing_more_than_the_limits_is_refused_before_it_is_held() -> None:
    prelude = struct.pack(">II", MAX_FRAME_BYTES + 1, 0)
    with pytest.raises(CorruptFrame, match="over the event-stream limits"):
        EventStreamParser().feed(prelude + struct.pack(">I", zlib.crc32(prelude)))


def test_an_unfinished_frame_is_held_and_counted() -> None:
    raw = event_frame("messageStart", b'{"role":"assistant"}')
    parser = EventStreamParser()
    assert parser.feed(raw[:-3]) == [] and parser.pending == len(raw) - 3
    assert len(parser.feed(raw[-3:])) == 1 and parser.pending == 0


def chunk_frame(event: dict) -> bytes:
    """One InvokeModelWithResponseStream frame: the model's event, base64 in `bytes` (anthropic-sdk-python
    lib/bedrock/_stream_decoder.py reads it so), with Bedrock's padding."""
    payload = {"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": "abcdefghij"}
    return event_frame("chunk", json.dumps(payload).encode())


def test_a_chunk_frame_gives_the_model_event_inside_it() -> None:
    (frame,) = frames_of(chunk_frame({"type": "message_stop"}))
    event = frame_event(frame)
    assert event is not None and json.loads(event.data) == {"type": "message_stop"} and event.event == "chunk"
    exception = encode_frame(
        {":exception-type": "throttlingException", ":content-type": "application/json", ":message-type": "exception"},
        b'{"message":"Too many requests"}',
    )
    (frame,) = frames_of(exception)
    assert frame_event(frame) is None and frame.exception_type == "throttlingException"
    events = FrameEvents()
    assert events.feed(exception + event_frame("chunk", b'{"p":"x"}')) == []
    assert events.exceptions == ["throttlingException"] and events.unreadable == 1


ANTHROPIC_STREAM = (
    Path(__file__).parent / "fixtures" / "anthropic" / "codecompanion_claude37_thinking_signature_delta_stream.sse"
)


def invoke_stream_from(sse: bytes) -> bytes:
    """A real Anthropic stream as InvokeModelWithResponseStream wraps it: each event's data in a chunk frame."""
    events = [line[len(b"data:") :].strip() for line in sse.splitlines() if line.startswith(b"data:")]
    return b"".join(chunk_frame(json.loads(event)) for event in events)


@pytest.mark.parametrize("size", [None, 1, 7, 100])
def test_an_invoke_stream_gives_what_its_anthropic_stream_gives(size: int | None) -> None:
    sse = ANTHROPIC_STREAM.read_bytes()
    expected = capture.tap_records(AnthropicMessages(), sse, sse=True)
    assert expected and expected[0].fields["thinking_blocks"][0]["signature"]
    assert tap(AnthropicMessages(), invoke_stream_from(sse), size).records == tuple(expected)


def tap(wire_format, raw: bytes, size: int | None | list[int] = None) -> TapResult:
    results: list[TapResult] = []
    response_tap = ResponseTap(
        wire_format.reader(),
        sse=True,
        aws_frames=True,
        content_encoding=None,
        read=True,
        keep_body=False,
        on_finish=results.append,
    )
    for piece in capture.pieces(raw, size):
        assert response_tap(piece) is piece  # the client gets every piece as it came
    assert response_tap(b"") == b""
    (result,) = results
    return result


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_corrupt_frames_never_raise_past_the_tap(data: st.DataObject) -> None:
    raw = bytearray(data.draw(st.sampled_from(STREAMS)).read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw += data.draw(st.binary(max_size=64))
    cuts = data.draw(st.lists(st.integers(0, len(raw)), max_size=20))
    result = tap(BedrockConverse(), bytes(raw), cuts)  # every piece passed through, and the tap finished
    assert result.read and (
        result.problem is None or "not readable" in result.problem or "into a frame" in result.problem
    )


def test_garbage_stops_the_copy_and_says_so() -> None:
    result = tap(BedrockConverse(), b"data: this is SSE, not frames\n\n" * 3)
    assert result.problem is not None and result.problem.startswith("stream not readable: CorruptFrame")
    assert result.records == ()


def test_a_stream_cut_inside_a_frame_says_so() -> None:
    raw = STREAMS[0].read_bytes()
    parser = EventStreamParser()
    parser.feed(raw[:-10])
    result = tap(BedrockConverse(), raw[:-10])
    assert result.problem == f"the stream ended {parser.pending} bytes into a frame; that frame not read"


def cpu_seconds(feed: Callable[[], object]) -> float:
    """The fastest of three runs, in CPU time, with the cyclic garbage collector held off (tests/test_linear_time.py)."""
    best = float("inf")
    for _ in range(3):
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            feed()
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    return best


def many_frames(count: int) -> bytes:
    delta = {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "a thought "}}, "p": "abc"}
    return b"".join([event_frame("contentBlockDelta", json.dumps(delta).encode())] * count)


def one_frame_in_pieces(size: int) -> list[bytes]:
    raw = event_frame("contentBlockDelta", b'{"delta":{"text":"' + b"x" * size + b'"}}')
    return [raw[at : at + 512] for at in range(0, len(raw), 512)]


@pytest.mark.slow
@pytest.mark.parametrize("case", ["many small frames", "one frame in many pieces"])
def test_ten_times_the_input_costs_about_ten_times_the_time(case: str) -> None:
    """Linear in what it reads, as every reader is: a parser that copied what it holds on each piece would be
    quadratic in a frame fed in small pieces."""

    def run(scale: int) -> float:
        if case == "many small frames":
            raw = many_frames(2000 * scale)
            pieces = [raw[at : at + 4096] for at in range(0, len(raw), 4096)]
        else:
            pieces = one_frame_in_pieces(200_000 * scale)

        def feed() -> None:
            parser = EventStreamParser()
            assert [frame for piece in pieces for frame in parser.feed(piece)]

        return cpu_seconds(feed)

    small, large = run(1), run(10)
    assert large < 30 * max(small, 0.002), f"{case}: {small:.4f}s, then {large:.4f}s for ten times as much"


def distinct_header_frames(count: int, headers_bytes: int, **first: str) -> list[bytes]:
    """Well-formed frames whose headers are all unlike: `first` as string headers (`message_type="event"` is
    `:message-type` `event`), then boolean headers of 6-byte names, up to `headers_bytes` in all."""
    # A string header: its name's length, ":" and the name, its type, its value's length (2 bytes), the value.
    size = headers_bytes - sum(5 + len(name) + len(value) for name, value in first.items())
    return [
        encode_frame(
            {f":{name.replace('_', '-')}": value for name, value in first.items()}
            | {f"{frame:02x}{index:04x}": True for index in range(size // 8)},
            b"{}",
        )
        for frame in range(count)
    ]


def held_by(make: Callable[[], object]) -> tuple[object, int]:
    """What `make` returns, and the bytes still allocated once it returned (what that object holds): only what was
    allocated on the way from this file's code, so that another thread of the test session (a fake provider's,
    say) allocating meanwhile is not counted."""
    gc.collect()
    tracemalloc.start(128)
    try:
        made = make()
        gc.collect()
        ours = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, __file__, all_frames=True)])
        return made, sum(stat.size for stat in ours.statistics("filename"))
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_a_parser_remembers_only_small_header_blocks() -> None:
    """A stream repeats a few small blocks of headers, parsed once each; a frame may carry 128 KiB of headers
    (16,000 of them, 1.6 MB parsed), which a parser remembering them would hold for as long as the stream lasts."""
    large = distinct_header_frames(8, MAX_HEADERS_BYTES)
    ordinary = many_frames(3)

    def parsed() -> EventStreamParser:
        parser = EventStreamParser()
        for raw in large:
            assert len(parser.feed(raw)[0].headers) == MAX_HEADERS_BYTES // 8
        first, second, third = parser.feed(ordinary)
        assert first.headers is second.headers is third.headers  # one parse for the three
        return parser

    _, held = held_by(parsed)
    assert held < 64 * 1024, f"the parser holds {held} bytes after 8 frames of 128 KiB of headers"


def test_the_headers_remembered_are_let_go_of_when_the_stream_ends() -> None:
    frames = distinct_header_frames(MAX_KNOWN_HEADER_BLOCKS, MAX_KNOWN_HEADER_BLOCK_BYTES, message_type="event")
    assert all(MAX_KNOWN_HEADER_BLOCK_BYTES - 8 < len(raw) - 18 <= MAX_KNOWN_HEADER_BLOCK_BYTES for raw in frames)

    def ended() -> FrameEvents:
        events = FrameEvents()
        assert sum(len(events.feed(raw)) for raw in frames) == len(frames)
        events.close()
        return events

    ended()  # what a first stream sets up once for every later one is not what a stream holds
    _, held = held_by(ended)
    assert held < 4 * 1024, f"a stream that ended holds {held} bytes"
