"""Unit tests for addon/wire/sse.py: WHATWG event-stream parsing, independent of chunking."""

from __future__ import annotations

import random

import pytest
from llm_reasoning_proxy.wire.sse import (
    SSEEvent,
    SSEOverflow,
    SSEParser,
    data_line,
    is_event_stream,
    looks_like_event_stream,
    marked_events,
    text_lines,
)
from mitmproxy import http


def parse_all(stream: bytes, chunks: list[bytes] | None = None, **kwargs) -> list[SSEEvent]:
    """Events from feeding `chunks` (default: the whole stream at once) and then closing."""
    parser = SSEParser(**kwargs)
    events: list[SSEEvent] = []
    for chunk in chunks if chunks is not None else [stream]:
        events += parser.feed(chunk)
    events += parser.close()
    return events


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def random_pieces(data: bytes, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        step = rng.randint(1, 40)
        out.append(data[i : i + step])
        i += step
    return out


def chunkings(data: bytes) -> dict[str, list[bytes]]:
    ways = {"whole": [data], "1-byte": pieces(data, 1), "7-byte": pieces(data, 7)}
    for seed in (0, 1, 2, 1234):
        ways[f"random-{seed}"] = random_pieces(data, seed)
    return ways


# --------------------------------------------------------------------------------------
# separators


@pytest.mark.parametrize(
    "stream",
    [
        b"data: one\n\ndata: two\n\n",
        b"data: one\r\n\r\ndata: two\r\n\r\n",
        b"data: one\r\rdata: two\r\r",
        b"data: one\r\n\ndata: two\n\r\n",  # mixed endings
        b"data: one\r\rdata: two\n\n",
    ],
    ids=["lf", "crlf", "cr", "mixed-crlf-lf", "mixed-cr-lf"],
)
def test_separators(stream):
    assert parse_all(stream) == [SSEEvent(b"one"), SSEEvent(b"two")]


@pytest.mark.parametrize(
    "stream",
    [b"data: one\n\n", b"data: one\r\n\r\n", b"data: one\n\r\n", b"data: one\r\n\n"],
)
def test_feed_dispatches_on_blank_line_without_close(stream):
    parser = SSEParser()
    assert parser.feed(stream) == [SSEEvent(b"one")]
    assert parser.close() == []


def test_lone_cr_event_is_dispatched_once_the_next_byte_arrives():
    # A trailing CR might be half of a CRLF, so the parser waits for the next byte.
    parser = SSEParser()
    assert parser.feed(b"data: one\r\r") == []
    assert parser.feed(b"data: two\r\r") == [SSEEvent(b"one")]
    assert parser.close() == [SSEEvent(b"two")]


# --------------------------------------------------------------------------------------
# fields


@pytest.mark.parametrize(
    "comment",
    [b": OPENROUTER PROCESSING\n", b":\n", b": keep-alive\r\n", b":no space\n"],
)
def test_comment_lines_are_ignored(comment):
    stream = comment + b"data: x\n" + comment + b"\n" + comment + b"\n"
    assert parse_all(stream) == [SSEEvent(b"x")]


def test_comment_only_stream_gives_no_events():
    assert parse_all(b": OPENROUTER PROCESSING\n\n: OPENROUTER PROCESSING\n\n") == []


@pytest.mark.parametrize(
    ("stream", "data"),
    [
        (b"data: a\ndata: b\ndata: c\n\n", b"a\nb\nc"),
        (b"data: a\r\ndata: b\r\n\r\n", b"a\nb"),
        (b"data: a\rdata: b\r\r", b"a\nb"),
        (b"data: a\ndata:\ndata: c\n\n", b"a\n\nc"),
        (b'data: {"x":\ndata:  1}\n\n', b'{"x":\n 1}'),
    ],
)
def test_multi_line_data_is_joined_with_lf(stream, data):
    assert parse_all(stream) == [SSEEvent(data)]


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data: x", b"x"),
        (b"data:x", b"x"),
        (b"data:  x", b" x"),  # only one leading space is removed
        (b"data: x ", b"x "),  # trailing spaces are kept
        (b"data:", b""),
        (b"data", b""),  # a field name without a colon has an empty value
        (b"data: a: b", b"a: b"),  # only the first colon separates
        (b"data:\tx", b"\tx"),
    ],
)
def test_data_value_leading_space(line, data):
    assert parse_all(line + b"\n\n") == [SSEEvent(data)]


def test_event_and_id_fields():
    stream = b"event: response.created\nid: 7\ndata: {}\n\n"
    assert parse_all(stream) == [SSEEvent(b"{}", event="response.created", id="7")]


def test_event_without_space_and_non_ascii():
    stream = "event:héllo\ndata: x\n\n".encode()
    assert parse_all(stream) == [SSEEvent(b"x", event="héllo")]


def test_event_type_resets_after_dispatch_but_id_persists():
    # WHATWG: the event type buffer is cleared per event, the last event id is not.
    stream = b"event: a\nid: 1\ndata: x\n\ndata: y\n\nid: 2\ndata: z\n\n"
    assert parse_all(stream) == [
        SSEEvent(b"x", event="a", id="1"),
        SSEEvent(b"y", event=None, id="1"),
        SSEEvent(b"z", event=None, id="2"),
    ]


@pytest.mark.parametrize(
    "stream",
    [
        b"event: ping\n\n",
        b"id: 3\n\n",
        b"event: ping\nid: 3\n\n",
        b"retry: 1000\n\n",
        b"\n\n\n\n",
        b"",
    ],
)
def test_event_without_data_is_not_dispatched(stream):
    assert parse_all(stream) == []


def test_event_without_data_does_not_leak_its_type_into_the_next_event():
    assert parse_all(b"event: ping\n\ndata: x\n\n") == [SSEEvent(b"x")]


def test_unknown_fields_are_ignored():
    stream = b"retry: 10\nfoo: bar\nDATA: upper\ndata: kept\n\n"
    assert parse_all(stream) == [SSEEvent(b"kept")]


# --------------------------------------------------------------------------------------
# close()


@pytest.mark.parametrize(
    ("stream", "expected"),
    [
        (b"data: last", [SSEEvent(b"last")]),
        (b"data: last\n", [SSEEvent(b"last")]),
        (b"data: last\r\n", [SSEEvent(b"last")]),
        (b"data: last\r", [SSEEvent(b"last")]),
        (b"event: done\ndata: last", [SSEEvent(b"last", event="done")]),
        (b"data: a\n\ndata: b", [SSEEvent(b"a"), SSEEvent(b"b")]),
        (b"data: a\ndata: b", [SSEEvent(b"a\nb")]),
    ],
)
def test_close_dispatches_final_event_without_blank_line(stream, expected):
    parser = SSEParser()
    fed = parser.feed(stream)
    assert fed + parser.close() == expected
    assert parser.close() == []  # nothing twice


def test_close_on_fresh_parser():
    assert SSEParser().close() == []


# --------------------------------------------------------------------------------------
# chunk boundaries


@pytest.mark.parametrize(
    "split_stream",
    [
        [b"data: a\r", b"\n\r\ndata: b\r\n\r\n"],
        [b"data: a\r\n\r", b"\ndata: b\r\n\r\n"],
        [b"data: a\r\n", b"\r\n", b"data: b\r", b"\n\r", b"\n"],
    ],
)
def test_crlf_split_between_cr_and_lf(split_stream):
    whole = b"".join(split_stream)
    assert parse_all(whole, split_stream) == parse_all(whole) == [SSEEvent(b"a"), SSEEvent(b"b")]


def test_crlf_split_does_not_produce_extra_blank_line():
    # If "\r" | "\n" were read as two line breaks, "data: a" would be dispatched early
    # and then "data: b" would be a separate event instead of a second data line.
    parser = SSEParser()
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    assert parser.feed(b"\n\r") == []
    assert parser.feed(b"\n") == [SSEEvent(b"a\nb")]
    assert parser.close() == []


def test_empty_feed_is_a_no_op():
    parser = SSEParser()
    assert parser.feed(b"") == []
    assert parser.feed(b"data: x") == []
    assert parser.feed(b"") == []
    assert parser.feed(b"\n\n") == [SSEEvent(b"x")]


def test_multibyte_utf8_split_across_chunks():
    stream = "event: é\ndata: 日本語\n\n".encode()
    expected = [SSEEvent("日本語".encode(), event="é")]
    for chunks in chunkings(stream).values():
        assert parse_all(stream, chunks) == expected


# --------------------------------------------------------------------------------------
# the same events for every chunking of realistic streams

OPENAI_CHAT = (
    b'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
    b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n'
    b": OPENROUTER PROCESSING\n\n"
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"reasoning_content":"Let me think"}}]}\n\n'
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
    b'"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}\n\n'
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
    b'"function":{"arguments":"{\\"city\\": \\"Paris\\"}"}}]}}]}\n\n'
    b'data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
    b"data: [DONE]\n\n"
)
OPENAI_CHAT_EVENTS = [
    SSEEvent(
        b'{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}'
    ),
    SSEEvent(b'{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"reasoning_content":"Let me think"}}]}'),
    SSEEvent(
        b'{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1",'
        b'"type":"function","function":{"name":"get_weather","arguments":""}}]}}]}'
    ),
    SSEEvent(
        b'{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"function":{"arguments":"{\\"city\\": \\"Paris\\"}"}}]}}]}'
    ),
    SSEEvent(b'{"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}'),
    SSEEvent(b"[DONE]"),
]

RESPONSES_API = (
    b"event: response.created\n"
    b'data: {"type":"response.created","response":{"id":"resp_1"}}\n\n'
    b"event: response.output_item.added\n"
    b'data: {"type":"response.output_item.added","item":{"type":"reasoning","encrypted_content":"gAAAAB+/=="}}\n\n'
    b": keep-alive\n\n"
    b"event: response.output_text.delta\n"
    b'data: {"type":"response.output_text.delta","delta":"Hi"}\n\n'
    b"event: response.completed\n"
    b'data: {"type":"response.completed"}\n\n'
)
RESPONSES_API_EVENTS = [
    SSEEvent(b'{"type":"response.created","response":{"id":"resp_1"}}', event="response.created"),
    SSEEvent(
        b'{"type":"response.output_item.added","item":{"type":"reasoning","encrypted_content":"gAAAAB+/=="}}',
        event="response.output_item.added",
    ),
    SSEEvent(b'{"type":"response.output_text.delta","delta":"Hi"}', event="response.output_text.delta"),
    SSEEvent(b'{"type":"response.completed"}', event="response.completed"),
]

ANTHROPIC_CRLF = (
    b"event: message_start\r\n"
    b'data: {"type":"message_start","message":{"id":"msg_1"}}\r\n\r\n'
    b"event: ping\r\n"
    b'data: {"type": "ping"}\r\n\r\n'
    b"event: content_block_delta\r\n"
    b'data: {"type":"content_block_delta","delta":{"type":"signature_delta","signature":"EqQBCkYI"}}\r\n\r\n'
    b"event: message_stop\r\n"
    b'data: {"type":"message_stop"}\r\n\r\n'
)
ANTHROPIC_CRLF_EVENTS = [
    SSEEvent(b'{"type":"message_start","message":{"id":"msg_1"}}', event="message_start"),
    SSEEvent(b'{"type": "ping"}', event="ping"),
    SSEEvent(
        b'{"type":"content_block_delta","delta":{"type":"signature_delta","signature":"EqQBCkYI"}}',
        event="content_block_delta",
    ),
    SSEEvent(b'{"type":"message_stop"}', event="message_stop"),
]

MIXED_ENDINGS = (
    b": OPENROUTER PROCESSING\r\n\r\n"
    b"id: 1\r\nevent: a\r\ndata: first\r\ndata: second\r\n\r\n"
    b"data: lf\n\n"
    b"event: b\rdata: cr\r\r"
    b"data:no-space\r\n\n"
    b"event: only-type\n\n"
    b"data: tail\n\r\n"
)
MIXED_ENDINGS_EVENTS = [
    SSEEvent(b"first\nsecond", event="a", id="1"),
    SSEEvent(b"lf", id="1"),
    SSEEvent(b"cr", event="b", id="1"),
    SSEEvent(b"no-space", id="1"),
    SSEEvent(b"tail", id="1"),
]

# A stream cut off after its last data line (no blank line), LF only.
TRUNCATED_LF = b'data: {"a":1}\n\ndata: {"b":2}\n'
TRUNCATED_LF_EVENTS = [SSEEvent(b'{"a":1}'), SSEEvent(b'{"b":2}')]

REALISTIC = {
    "openai-chat": (OPENAI_CHAT, OPENAI_CHAT_EVENTS),
    "responses-api": (RESPONSES_API, RESPONSES_API_EVENTS),
    "anthropic-crlf": (ANTHROPIC_CRLF, ANTHROPIC_CRLF_EVENTS),
    "mixed-endings": (MIXED_ENDINGS, MIXED_ENDINGS_EVENTS),
    "truncated-lf": (TRUNCATED_LF, TRUNCATED_LF_EVENTS),
}


@pytest.mark.parametrize("name", sorted(REALISTIC))
def test_realistic_stream_whole(name):
    stream, expected = REALISTIC[name]
    assert parse_all(stream) == expected


@pytest.mark.parametrize("way", ["whole", "1-byte", "7-byte", "random-0", "random-1", "random-2", "random-1234"])
@pytest.mark.parametrize("name", sorted(REALISTIC))
def test_realistic_stream_same_events_for_every_chunking(name, way):
    stream, expected = REALISTIC[name]
    chunks = chunkings(stream)[way]
    assert b"".join(chunks) == stream
    assert parse_all(stream, chunks) == expected


@pytest.mark.parametrize("name", sorted(REALISTIC))
def test_realistic_stream_every_two_chunk_split(name):
    stream, expected = REALISTIC[name]
    for cut in range(1, len(stream)):
        assert parse_all(stream, [stream[:cut], stream[cut:]]) == expected, cut


# Lone-CR line endings with no final blank line: close() must see the pending
# bytes as the lines they are, however the chunks fell.
LONE_CR_UNTERMINATED = b"data: a\r\rdata: b\rdata: c"
LONE_CR_UNTERMINATED_EVENTS = [SSEEvent(b"a"), SSEEvent(b"b\nc")]


def test_lone_cr_unterminated_whole():
    assert parse_all(LONE_CR_UNTERMINATED) == LONE_CR_UNTERMINATED_EVENTS


@pytest.mark.parametrize("way", ["1-byte", "7-byte", "random-0"])
def test_lone_cr_unterminated_same_events_for_every_chunking(way):
    chunks = chunkings(LONE_CR_UNTERMINATED)[way]
    assert parse_all(LONE_CR_UNTERMINATED, chunks) == LONE_CR_UNTERMINATED_EVENTS


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\r", b"data: b"],  # CR held back as a possible CRLF, then a chunk without line breaks
        [b"data: a\r\r", b"data: b"],
    ],
)
def test_close_after_cr_at_chunk_end_then_chunk_without_line_break(chunks):
    whole = b"".join(chunks)
    assert parse_all(whole, chunks) == parse_all(whole)


# --------------------------------------------------------------------------------------
# max_line


@pytest.mark.parametrize("chunks", [[b"x" * 11], [b"x" * 6, b"x" * 5], [b"x"] * 11])
def test_line_longer_than_max_line_raises(chunks):
    parser = SSEParser(max_line=10)
    with pytest.raises(SSEOverflow):
        for chunk in chunks:
            parser.feed(chunk)


def test_overflow_after_complete_lines():
    parser = SSEParser(max_line=10)
    assert parser.feed(b"data: a\n\n") == [SSEEvent(b"a")]
    with pytest.raises(SSEOverflow, match="10 bytes"):
        for _ in range(20):
            parser.feed(b"y")


def test_line_at_max_line_is_fine():
    parser = SSEParser(max_line=10)
    assert parser.feed(b"data: 1234") == []
    assert parser.feed(b"\n\n") == [SSEEvent(b"1234")]


def test_sse_overflow_is_a_value_error():
    assert issubclass(SSEOverflow, ValueError)


# --------------------------------------------------------------------------------------
# marked_events: the events holding a marker, found with byte searches alone


def _all_events(data: bytes) -> list[SSEEvent]:
    parser = SSEParser()
    return parser.feed(data) + parser.close()


@pytest.mark.parametrize("seed", range(20))
def test_marked_events_are_the_parsed_events_holding_a_marker(seed: int) -> None:
    rng = random.Random(seed)
    words = [b"reasoning", b"tool_calls", b"content", b"hello", b"x" * 30, b"\xc3\xa9", b"extra_content"]
    stream = b"".join(
        b"data: {" + b" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))) + b"}\n\n"
        for _ in range(rng.randint(1, 40))
    )
    markers = (b"reasoning", b"tool_calls", b"extra_content")
    expected = [e for e in _all_events(stream) if any(m in e.data for m in markers)]
    assert marked_events(stream, markers) == expected


@pytest.mark.parametrize(
    "chunk",
    [
        b'event: x\ndata: {"reasoning":1}\n\n',
        b"data: a\ndata: reasoning\n\n",
        b": comment\n\ndata: reasoning\n\n",
        b"data: reasoning\r\n\r\n",
        b"data: reasoning\n\ndata: x",
        b"id: 1\ndata: reasoning\n\n",
    ],
)
def test_marked_events_leave_anything_but_one_line_data_events_to_the_parser(chunk: bytes) -> None:
    assert marked_events(chunk, (b"reasoning",)) is None


def test_an_event_that_never_ends_is_bounded_too():
    """Many short data lines and no blank line: each line is within max_line, the event they make is not."""
    parser = SSEParser(max_line=100)
    parser.feed(b"data: 0123456789\n" * 6)
    with pytest.raises(SSEOverflow, match="event's data exceeds 100 bytes"):
        parser.feed(b"data: 0123456789\n" * 6)


def test_an_event_up_to_the_bound_is_read_whole():
    parser = SSEParser(max_line=100)
    assert parser.feed(b"data: 0123456789\n" * 9 + b"\n") == [SSEEvent(b"\n".join([b"0123456789"] * 9))]


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [
        ("text/event-stream", True),
        ("Text/Event-Stream; charset=utf-8", True),
        (" text/event-stream ", True),
        ("application/json", False),
        ("text/event-stream-ish", False),
        (None, False),
    ],
)
def test_is_event_stream_reads_the_media_type_alone(content_type: str | None, expected: bool) -> None:
    headers = http.Headers(content_type=content_type) if content_type is not None else http.Headers()
    assert is_event_stream(headers) is expected


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"data: {}\n\n", True),
        (b"data:{}\n\n", True),
        (b"event: message_start\ndata: {}\n\n", True),
        (b": keep-alive\n\n", True),
        (b"\r\n  data: {}\n\n", True),
        (bytearray(b"data: {}\n\n"), True),
        (b'{"data": 1}', False),
        (b"<html>", False),
        (b"", False),
    ],
)
def test_looks_like_event_stream_by_its_first_line(body: bytes, expected: bool) -> None:
    assert looks_like_event_stream(body) is expected


def test_text_lines_keep_each_line_break_as_it_was() -> None:
    assert text_lines("a\r\nb\rc\nd") == [("a", "\r\n"), ("b", "\r"), ("c", "\n"), ("d", "")]
    assert "".join(line + end for line, end in text_lines("x\n\n:c\r\n")) == "x\n\n:c\r\n"


def test_data_line_strips_one_space_only() -> None:
    assert data_line("data: {}") == ("data: ", "{}")
    assert data_line("data:  {}") == ("data: ", " {}")
    assert data_line("data:{}") == ("data:", "{}")
    assert data_line("event: x") is None
