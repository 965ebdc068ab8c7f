"""Capture over real provider captures: the same records whatever the chunking or encoding."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import brotli
import pytest
import zstandard
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.answer.tap import ResponseTap, read_recorded
from llm_reasoning_proxy.shared.limits import MAX_CHOICES
from llm_reasoning_proxy.shared.records import ReasoningRecord, arguments_digest
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions

from tests.support import capture

FIXTURES = Path(__file__).parent / "fixtures"
# Text-field streams, which the simple oracle below can read; every chat stream must chunk the same.
STREAMS = sorted(FIXTURES.glob("copilot/*.sse")) + sorted(FIXTURES.glob("deepseek/*.sse"))
CHAT_STREAMS = STREAMS + sorted(FIXTURES.glob("openrouter/*.sse"))
DOCUMENTS = sorted(FIXTURES.glob("deepseek/*_response_200.json"))
FIELDS = ("reasoning_text", "reasoning_opaque", "reasoning_content")


def tap_records(raw: bytes, **options) -> list[ReasoningRecord]:
    return capture.tap_records(ChatCompletions(), raw, **options)


def oracle(lines: list[dict]) -> dict:
    """What a careful reader gets from chunk documents, written the simplest possible way."""
    fields: dict[str, str] = {}
    calls: dict[int, str] = {}
    for doc in lines:
        for choice in doc.get("choices", []):
            part = choice.get("delta") or choice.get("message") or {}
            for name in FIELDS:
                if isinstance(part.get(name), str):
                    fields[name] = fields.get(name, "") + part[name]
            for position, call in enumerate(part.get("tool_calls") or []):
                if call.get("id"):
                    calls[call.get("index", position)] = call["id"]
    return {"fields": fields, "ids": [calls[i] for i in sorted(calls)]}


def assert_matches(records: list[ReasoningRecord], expected: dict) -> None:
    if not expected["fields"]:
        assert records == []
        return
    (record,) = records
    assert record.fields == expected["fields"]
    assert record.tool_call_ids == expected["ids"]


def sse_documents(raw: bytes) -> list[dict]:
    docs = []
    for line in raw.decode().splitlines():
        payload = line[len("data:") :].strip() if line.startswith("data:") else ""
        if payload and payload != "[DONE]":
            docs.append(json.loads(payload))
    return docs


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_stream_capture_is_independent_of_chunking(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    assert_matches(tap_records(raw, sse=True, size=size), oracle(sse_documents(raw)))


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [1, 7, 100])
def test_every_chat_stream_gives_the_same_records_for_any_chunking(path: Path, size: int) -> None:
    raw = path.read_bytes()
    assert tap_records(raw, sse=True, size=size) == tap_records(raw, sse=True, size=None)


@pytest.mark.parametrize("path", CHAT_STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize(
    "encoding, compress",
    [
        ("gzip", gzip.compress),
        ("br", brotli.compress),
        ("zstd", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_compressed_stream_capture(path: Path, encoding: str, compress) -> None:
    raw = path.read_bytes()
    assert tap_records(compress(raw), sse=True, size=7, encoding=encoding) == tap_records(raw, sse=True, size=None)


@pytest.mark.parametrize("path", STREAMS[:3], ids=lambda p: p.name)
def test_a_stream_sent_without_its_content_type_is_read_as_one(path: Path) -> None:
    """Read as an event stream once it is not JSON: one that starts with `data:` (as every chat stream does)
    as much as one that starts with `event:` or a comment."""
    raw = path.read_bytes()
    assert raw.startswith(b"data:")
    assert tap_records(raw, sse=False, size=7) == tap_records(raw, sse=True, size=None) != []


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_document_capture(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    assert_matches(tap_records(raw, sse=False, size=size), oracle([json.loads(raw)]))


def test_copilot_parallel_calls_share_the_first_chunks_opaque() -> None:
    raw = (FIXTURES / "copilot/opencode_tidewave_reasoning_with_tool_calls.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.tool_call_ids == ["call_abc123", "call_def456"]
    assert record.fields["reasoning_opaque"] == "4CUQ6696CwSXOdQ5rtvDimqA91tBzfmga4ieRbmZ5P67T2NLW3"
    assert record.fields["reasoning_text"].startswith("**Understanding Dayzee's Purpose**")
    assert record.response_id == "OdwyabKMI9yel7oPlbzgwQM"
    assert [c.name for c in record.tool_calls] == ["read_file", "read_file"]


def test_copilot_opaque_on_a_content_chunk_before_the_tool_call() -> None:
    raw = (FIXTURES / "copilot/opencode_tidewave_reasoning_with_opaque_content_and_tool_calls.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=1)
    assert record.tool_call_ids == ["call_MHxqRDd5WVo3NU8wUXRaMmc0MFE"]
    assert record.fields["reasoning_opaque"].startswith("WHOd3dYFnxEBOsKUXjbX6c2rJa0f")


def test_copilot_opaque_at_end_without_tools_is_captured_but_has_no_keys() -> None:
    raw = (FIXTURES / "copilot/opencode_tidewave_reasoning_with_opaque_at_end.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.tool_call_ids == []
    assert record.fields["reasoning_opaque"] == "/PMlTqxqSJZnUBDHgnnJKLVI4eZQ"


def test_codecompanion_stub_without_blank_lines_between_events() -> None:
    # The stub keeps one data: line per chunk with no separators (unlike the real wire).
    raw = (FIXTURES / "copilot/codecompanion_gemini3_tool_call_reasoning_opaque_stream.sse").read_bytes()
    assert b"\n\n" not in raw
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.tool_call_ids == ["call_MHxoeW9qWnVicVd6R0FkMFZ3UWw"]
    assert record.fields["reasoning_opaque"].startswith("lgxMQq0m/J6cVjsaH8bbfhxHtAvK4Y+BfAp1pc+7cey9")
    assert record.response_model == "gemini-3-pro-preview"


def test_deepseek_stream_reasoning_content_and_parallel_calls() -> None:
    raw = (FIXTURES / "deepseek/codecompanion_deepseek_v4_reasoning_content_tool_calls_stream.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.tool_call_ids == ["call_00_xzVVyar4M7TXmqAvwt5lz3v2", "call_01_FiLq2fgCjbR43jdNrxI4OYGD"]
    assert record.fields["reasoning_content"].startswith("The user wants")
    assert set(record.fields) == {"reasoning_content"}
    # The cache keeps a digest of the arguments, never their text.
    streamed: dict[int, str] = {}
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            for call in json.loads(line[6:])["choices"][0]["delta"].get("tool_calls") or []:
                streamed[call["index"]] = streamed.get(call["index"], "") + call["function"].get("arguments", "")
    assert [json.loads(streamed[i])["location"] for i in sorted(streamed)] == ["London, UK", "Paris, France"]
    assert [c.arguments_sha256 for c in record.tool_calls] == [arguments_digest(streamed[i]) for i in sorted(streamed)]


def test_cut_stream_keeps_only_turns_whose_tool_calls_began() -> None:
    stub = (FIXTURES / "deepseek/codecompanion_deepseek_v4_reasoning_content_tool_calls_stream.sse").read_bytes()
    lines = [line for line in stub.split(b"\n") if line]
    raw = b"\n\n".join(lines) + b"\n\n"  # the stub lacks blank lines; give it real wire framing
    reasoning_only = b"\n\n".join(line for line in lines if b"tool_calls" not in line and b"[DONE]" not in line)
    assert tap_records(reasoning_only[: len(reasoning_only) // 2], sse=True, complete=False) == []

    second_call = raw.index(b"call_01_")  # cut inside the second tool call
    (record,) = tap_records(raw[:second_call], sse=True, complete=False)
    assert record.tool_call_ids == ["call_00_xzVVyar4M7TXmqAvwt5lz3v2"]
    assert record.complete is False


def test_a_text_field_past_the_limit_stops_the_answer_being_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.shared import limits

    monkeypatch.setattr(limits, "MAX_VALUE_BYTES", 100)
    chunks = [{"id": "r", "choices": [{"index": 0, "delta": {"reasoning_content": "x" * 40}}]} for _ in range(5)]
    chunks.append(
        {
            "id": "r",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "reasoning_opaque": "OPQ",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    },
                }
            ],
        }
    )
    raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    reader = ChatCompletions().reader()
    read_recorded(reader, raw, sse=True)
    # What it held is let go, and nothing after the bound is kept (not even the tool call that came later).
    assert reader.records(complete=True) == []
    assert reader.budget.over == "its reasoning_content is over the 0 MiB limit per stored value"


def choices_answer(count: int) -> bytes:
    """A streamed answer of `count` choices, each with its reasoning and a tool call."""
    chunks = []
    for index in range(count):
        call = {"index": 0, "id": f"call_{index}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        delta = {"reasoning_content": f"r{index}", "tool_calls": [call]}
        chunks.append({"id": "r", "model": "m", "choices": [{"index": index, "delta": delta}]})
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("count", [MAX_CHOICES, MAX_CHOICES + 1, 10 * MAX_CHOICES])
def test_the_reader_keeps_at_most_max_choices_choices(count: int) -> None:
    """Each choice of an answer is kept apart; past MAX_CHOICES of them no more are, and the answer is read to its end
    but not cached."""
    reader = ChatCompletions().reader()
    read_recorded(reader, choices_answer(count), sse=True)
    kept = reader.records(complete=True)
    assert [record.tool_call_ids for record in kept] == [[f"call_{index}"] for index in range(MAX_CHOICES)]
    assert reader.budget.over == (None if count == MAX_CHOICES else f"it has more than {MAX_CHOICES} choices")


def test_reasoning_fragments_of_two_choices_stay_apart() -> None:
    """The fast path for plain reasoning fragments must not fold a second choice into the first."""
    chunks = []
    for word in ("alpha ", "beta ", "gamma"):
        for index in (0, 1):
            delta = {"reasoning_content": f"{index}:{word}"}
            chunks.append({"id": "r", "choices": [{"index": index, "delta": delta, "finish_reason": None}]})
    for index in (0, 1):
        call = {"index": 0, "id": f"call_{index}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        chunks.append({"id": "r", "choices": [{"index": index, "delta": {"tool_calls": [call]}}]})
    raw = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
    first, second = tap_records(raw, sse=True, size="events")
    assert first.fields == {"reasoning_content": "0:alpha 0:beta 0:gamma"}
    assert second.fields == {"reasoning_content": "1:alpha 1:beta 1:gamma"}
    assert tap_records(raw, sse=True, size=None) == [first, second]


def test_reasoning_fragments_with_escapes_and_split_surrogates_join_exactly() -> None:
    pieces = ['He said \\"hi\\" ', "caf\\u00e9 \\n", "\\ud83d", "\\ude00 done"]  # already JSON-escaped
    chunks = [
        b'data: {"id":"r","choices":[{"index":0,"delta":{"reasoning_content":"' + p.encode() + b'"}}]}\n\n'
        for p in pieces
    ]
    chunks.append(
        b'data: {"id":"r","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1",'
        b'"type":"function","function":{"name":"f","arguments":"{}"}}]}}]}\n\n'
    )
    (record,) = tap_records(b"".join(chunks), sse=True, size="events")
    assert record.fields["reasoning_content"] == 'He said "hi" café \n😀 done'


# Each fixture directory's wire format; a stream event a reader cannot parse ends up in the log as a `skipped`.
FORMAT_OF_DIRECTORY = {
    "anthropic": "anthropic_messages",
    "copilot": "chat_completions",
    "deepseek": "chat_completions",
    "gemini": "gemini_native",
    "gemini-openai-compat": "chat_completions",
    "mistral": "chat_completions",
    "openai-responses": "openai_responses",
    "openrouter": "chat_completions",
    "zai": "chat_completions",
    "dashscope": "chat_completions",
}
ALL_STREAMS = sorted(FIXTURES.glob("*/*.sse"))


def unreadable_events(path: Path, raw: bytes) -> int:
    reader = formats.by_name(FORMAT_OF_DIRECTORY[path.parent.name]).reader()
    tap = ResponseTap(reader, sse=True, content_encoding=None, read=True, keep_body=False)
    tap(raw)
    tap(b"")
    return reader.unreadable


@pytest.mark.parametrize("path", ALL_STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_event_of_a_real_stream_is_counted_unreadable(path: Path) -> None:
    raw = path.read_bytes()
    assert unreadable_events(path, raw) == 0
    # The same stream with every JSON line cut short: the events that carry reasoning are counted.
    spoilt = re.sub(rb"(?m)^(data: ?\{.*?).{3}(\r?)$", rb"\1\2", raw)
    assert spoilt != raw and unreadable_events(path, spoilt) >= 1
