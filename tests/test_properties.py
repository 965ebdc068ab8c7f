"""Properties of repair and capture over generated conversations, in process (no mitmdump).

Conversations run through the addon's real hooks against the fake providers' own rule checks
(`tests/support/generators.py`): the request hook repairs what the client sent, the fake judges the
result, and its answer is captured through the real `ResponseTap`, fed in pieces.
"""

from __future__ import annotations

from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.answer import tap as response_tap
from llm_reasoning_proxy.wire import RepairContext
from llm_reasoning_proxy.wire.sse import SSEEvent, SSEParser

from tests.support.capture import split, tap_records
from tests.support.fake_provider import Options, _Compressor
from tests.support.generators import (
    CASES,
    SSE,
    Conversation,
    Exchange,
    InProcessProxy,
    cut_points,
    repairs,
    styles,
)

CASE_NAMES = sorted(CASES)
# Conversations are a handful of requests each; these counts keep the file well under half a minute.
CONVERSATION_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)


@pytest.fixture(scope="module")
def proxy() -> InProcessProxy:
    return InProcessProxy()


def conversation(
    case: str, proxy: InProcessProxy, data: st.DataObject, *, faithful: bool, quirks: bool
) -> Conversation:
    _, kind, variant = CASES[case]
    style = data.draw(styles, label="json style")
    return kind(proxy=proxy, data=data, faithful=faithful, quirks=quirks, style=style, variant=variant)


def claimed(exchange: Exchange, case: str) -> None:
    # An unclaimed request is left alone trivially; each property is about requests the proxy looked at.
    assert exchange.flow.metadata["llm"]["format"] == CASES[case][0]


# --- 1. repair is idempotent --------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_NAMES)
@CONVERSATION_SETTINGS
@given(data=st.data())
def test_repairing_a_repaired_request_changes_nothing(proxy: InProcessProxy, case: str, data: st.DataObject) -> None:
    chat = conversation(case, proxy, data, faithful=False, quirks=data.draw(st.booleans(), label="quirks"))
    for exchange in chat.run():
        claimed(exchange, case)
        again = proxy.send(chat.url, exchange.sent, exchange.credential)
        assert repairs(again) == [], f"second repair of {repairs(exchange.flow)}"
        assert again.request.raw_content == exchange.sent


# --- 2. a request that needs no repair goes on byte for byte ------------------------------------

SCENARIOS = ["client kept everything", "nothing cached", "no tool calls"]


@pytest.mark.parametrize("case", CASE_NAMES)
@CONVERSATION_SETTINGS
@given(data=st.data())
def test_a_request_needing_no_repair_is_forwarded_byte_for_byte(
    proxy: InProcessProxy, case: str, data: st.DataObject
) -> None:
    # Responses replays msg_ items, which need their reasoning back even in a conversation without tool calls.
    scenario = data.draw(st.sampled_from(SCENARIOS[:2] if case == "responses" else SCENARIOS), label="scenario")
    chat = conversation(case, proxy, data, faithful=scenario == SCENARIOS[0], quirks=False)
    for exchange in chat.run(steps=0 if scenario == "no tool calls" else None):
        claimed(exchange, case)
        flow = exchange.flow
        if scenario == "nothing cached":
            # The conversation goes on through the cache; the same bytes are sent again under a credential
            # the proxy never saw (and with no Gemini placeholder or recovery, which are sent precisely when nothing
            # is cached (tests/test_e2e_recover.py); the values it carries were issued to another account, which
            # `test_foreign_values_...` covers).
            with proxy.settings(signature_placeholder="off", remove_foreign=False, recover=False):
                flow = proxy.send(chat.url, exchange.body, proxy.credential())
        assert repairs(flow) == []
        assert flow.request.raw_content == exchange.body


# --- 3. what the client dropped comes back, and the provider takes it ---------------------------


@pytest.mark.parametrize("case", CASE_NAMES)
@CONVERSATION_SETTINGS
@given(data=st.data())
def test_repaired_requests_satisfy_the_provider(proxy: InProcessProxy, case: str, data: st.DataObject) -> None:
    # The fake's own rule check runs on every repaired request inside `run` (Conversation.provide).
    chat = conversation(case, proxy, data, faithful=False, quirks=data.draw(st.booleans(), label="quirks"))
    for exchange in chat.run():
        claimed(exchange, case)
        done = repairs(exchange.flow)
        assert not [r for r in done if "placeholder" in r], f"a placeholder although the answer was captured: {done}"
        doc = exchange.sent_doc
        chat.verify(doc)
        wire = formats.by_name(CASES[case][0])
        path = exchange.flow.request.path
        context = RepairContext(path, wire.request_model(path, exchange.sent, doc), exchange.flow.request.pretty_host)
        assert wire.check(doc, context) == []


# --- 4. SSE parsing and capture do not depend on chunking --------------------------------------

MARKERS = (b"reasoning", b"tool_calls")
ENDINGS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}
field_values = st.lists(
    st.sampled_from([b"reasoning", b"tool_calls", b"text", b" ", b":", b"data", b"{}", "é".encode(), b"xxxxx"]),
    max_size=5,
).map(b"".join)


@st.composite
def sse_streams(draw: st.DrawFn) -> tuple[bytes, list[SSEEvent] | None]:
    """A stream and, when its line endings are uniform, the events WHATWG parsing gives."""
    how = draw(st.sampled_from([*ENDINGS, "mixed"]), label="line endings")

    def ending() -> bytes:
        return ENDINGS[draw(st.sampled_from(sorted(ENDINGS)))] if how == "mixed" else ENDINGS[how]

    stream, expected, last_id = b"", [], None
    for _ in range(draw(st.integers(0, 6), label="events")):
        lines, data, name = [], [], None
        for _ in range(draw(st.integers(0, 5), label="lines")):
            kind = draw(st.sampled_from(["data", "data", "data", "comment", "event", "id", "retry", "bare"]))
            value = draw(field_values)
            if kind == "data":
                line = b"data:" + draw(st.sampled_from([b"", b" "])) + value
                data.append(line[5:][1:] if line[5:].startswith(b" ") else line[5:])
            elif kind == "bare":  # a field name alone: an empty data line
                line = b"data"
                data.append(b"")
            elif kind == "comment":
                line = b":" + value
            elif kind == "event":
                name = draw(st.sampled_from(["message_start", "response.output_item.done", "x"]))
                line = f"event: {name}".encode()
            elif kind == "id":
                last_id = str(draw(st.integers(0, 99)))
                line = f"id: {last_id}".encode()
            else:
                line = b"retry: 10"
            lines.append(line)
        stream += b"".join(line + ending() for line in lines) + ending()
        if data:
            expected.append(SSEEvent(b"\n".join(data), name, last_id))
    return stream, expected if how != "mixed" else None


def parse(chunks: list[bytes], **fast: object) -> list[SSEEvent]:
    parser = SSEParser()
    events = []
    for chunk in chunks:
        events += parser.feed(chunk, **fast)  # type: ignore[arg-type]
    return events + parser.close()


def relevant(events: list[SSEEvent]) -> list[tuple[bytes, str | None]]:
    return [(e.data, e.event) for e in events if any(m in e.data for m in MARKERS)]


def is_subsequence(part: list[object], whole: list[object]) -> bool:
    rest = iter(whole)
    return all(any(x == y for y in rest) for x in part)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(
    generated=sse_streams(),
    fractions=st.lists(st.integers(1, 999), max_size=12),
    after_cr=st.booleans(),
    bytewise=st.booleans(),
    skip=st.booleans(),
    markers=st.booleans(),
)
def test_sse_parser_gives_the_same_events_for_any_chunking(
    generated: tuple[bytes, list[SSEEvent] | None],
    fractions: list[int],
    after_cr: bool,
    bytewise: bool,
    skip: bool,
    markers: bool,
) -> None:
    stream, expected = generated
    cuts = {len(stream) * f // 1000 for f in fractions}
    if after_cr:  # the CR of a CRLF in one chunk, its LF in the next
        cuts |= {at + 1 for at, byte in enumerate(stream) if byte == 0x0D}
    if bytewise:
        cuts |= set(range(len(stream)))
    whole = parse([stream])
    if expected is not None:
        assert whole == expected
    fast = {}
    if skip:
        fast["skip"] = lambda chunk: not any(m in chunk for m in MARKERS)
    if markers:
        fast["markers"] = MARKERS
    chunked = parse(split(stream, sorted(cuts)), **fast)
    # The last event id is compared in test_last_event_id_survives_the_fast_path.
    pairs = [(e.data, e.event) for e in chunked]
    if not fast:
        assert pairs == [(e.data, e.event) for e in whole]
        return
    # The fast paths may leave out events that hold no marker, nothing else.
    assert relevant(chunked) == relevant(whole)
    assert is_subsequence(pairs, [(e.data, e.event) for e in whole])


def test_last_event_id_survives_the_fast_path() -> None:
    stream = b"id: 1\ndata: x\n\ndata: y\n\n"
    assert parse([stream[:15], stream[15:]]) == parse([stream])


def recorded_stream(case: str, proxy: InProcessProxy, data: st.DataObject) -> tuple[bytes, bool]:
    """A streamed answer of the fake to a first request, and whether it carries state to capture."""
    chat = conversation(case, proxy, data, faithful=True, quirks=False)
    chat.force_stream()
    chat.user("What is in the directory?")
    options = Options(
        parallel=data.draw(st.integers(1, 3), label="parallel"),
        steps=data.draw(st.integers(0, 1), label="steps"),
        content=data.draw(st.sampled_from([None, "Let me look."]), label="content"),
        events=data.draw(st.integers(0, 3), label="filler events"),
    )
    raw, sse, _ = chat.provide(chat.request(), options)
    assert sse
    # Responses and Gemini answers carry state (a reasoning item, a text signature) even without tool calls.
    return raw, chat.issues_state and (options.steps > 0 or case in ("responses", "gemini"))


def reframed(data: st.DataObject, raw: bytes) -> bytes:
    """The same events with other line endings and comment lines between lines."""
    lines = raw.replace(b"\r\n", b"\n").split(b"\n")
    for at in cut_points(data, len(lines), 4):
        lines.insert(at, b": keep-alive")
    return ENDINGS[data.draw(st.sampled_from(sorted(ENDINGS)), label="line endings")].join(lines)


def tapped(fmt: str, raw: bytes, cuts: list[int], encoding: str | None, *, aws_frames: bool = False) -> list[object]:
    return list(tap_records(formats.by_name(fmt), raw, sse=True, size=cuts, encoding=encoding, aws_frames=aws_frames))


@pytest.mark.parametrize("case", CASE_NAMES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_capture_gives_the_same_records_for_any_chunking(proxy: InProcessProxy, case: str, data: st.DataObject) -> None:
    fmt = CASES[case][0]
    frames = CASES[case][1].stream_type != SSE  # binary frames (Bedrock): no lines to end otherwise
    raw, has_state = recorded_stream(case, proxy, data)
    expected = tapped(fmt, raw, [], None, aws_frames=frames)
    assert bool(expected) == has_state  # else the property would hold for nothing
    stream = raw if frames else reframed(data, raw)
    encoding = data.draw(st.sampled_from([None, "gzip", "deflate", "br", "zstd"]), label="encoding")
    if encoding is not None:
        compressor = _Compressor(encoding)
        stream = compressor.piece(stream) + compressor.end()
    cuts = cut_points(data, len(stream), 40)
    # The tap reads its backlog in batches; small batches make the parser see the cuts.
    batch = data.draw(st.sampled_from([1, 2, 3, response_tap.BACKLOG_CHUNKS]), label="batch")
    # The copy is held unread up to a bound, and read as it passes from there on.
    held = data.draw(st.sampled_from([0, 100, response_tap.MAX_HELD_STREAM_BYTES]), label="held")
    with (
        mock.patch.object(response_tap, "BACKLOG_CHUNKS", batch),
        mock.patch.object(response_tap, "MAX_HELD_STREAM_BYTES", held),
    ):
        assert tapped(fmt, stream, cuts, encoding, aws_frames=frames) == expected
