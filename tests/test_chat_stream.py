"""One assembly of a chat completion (wire/chat_completions/stream.py) for the capture and the transcript: the same
choices, reasoning and tool calls, with the answer text kept only for people to read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_reasoning_proxy import wire
from llm_reasoning_proxy.answer.tap import read_recorded
from llm_reasoning_proxy.shared.limits import Budget
from llm_reasoning_proxy.transcripts import read_answer
from llm_reasoning_proxy.wire.assembly import AnswerLimits
from llm_reasoning_proxy.wire.chat_completions.keep import AnswerKeep, BudgetKeep
from llm_reasoning_proxy.wire.chat_completions.stream import ChatStream
from llm_reasoning_proxy.wire.chat_completions.transcript import message_of

from tests.test_capture_fixtures import tap_records

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT = "chat_completions"


def sse(*chunks: dict) -> bytes:
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


def delta(**fields) -> dict:
    return {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": fields}]}


CHUNKS = [
    delta(role="assistant", content="<think>\nhmm\n</think>\n\nThe answer", reasoning_content="why"),
    delta(content=" goes on", tool_calls=[{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{"}}]),
    delta(tool_calls=[{"index": 0, "function": {"arguments": "}"}}]),
]


def test_without_text_the_content_is_read_only_for_its_think_block() -> None:
    stream = ChatStream(BudgetKeep(Budget()))
    for chunk in CHUNKS:
        stream.feed(chunk, think=True)
    (choice,) = stream.choices.values()
    assert set(choice.texts) == {"reasoning_content"}  # no answer text held
    assert choice.fields() == {"reasoning_content": "why", "<think>": "<think>\nhmm\n</think>\n\n"}
    assert [(slot.id, slot.name, slot.arguments.pieces) for slot in choice.calls.values()] == [
        ("call_1", "f", ["{", "}"])
    ]


def test_with_text_the_same_assembly_keeps_the_content() -> None:
    stream = ChatStream(AnswerKeep(AnswerLimits()), keep_text=True)
    for chunk in CHUNKS:
        stream.feed(chunk)
    (choice,) = stream.choices.values()
    assert "".join(choice.texts["content"].pieces) == "<think>\nhmm\n</think>\n\nThe answer goes on"
    assert choice.think is None  # the block stays in the content, where the transcript reads it
    assert [(slot.id, slot.name, slot.arguments.pieces) for slot in choice.calls.values()] == [
        ("call_1", "f", ["{", "}"])
    ]


def test_the_transcript_shows_the_call_ids_the_capture_keeps() -> None:
    """Qwen sends `"id": ""` with every fragment after a call's first: the call keeps the id it was given."""
    raw = (FIXTURES / "dashscope/vercel_qwen3max_tool_call_stream.sse").read_bytes()
    reader = wire.by_name(FORMAT).reader()
    read_recorded(reader, raw, sse=True)
    captured = [slot.id for choice in reader.stream.choices.values() for slot in choice.calls.values()]
    calls = [part for part in read_answer(FORMAT, raw, sse=True).parts() if part.kind == "tool_call"]
    assert [call.call_id for call in calls] == captured == ["call_eee11723464a4b9eb8cee71d"]


def test_a_streamed_answers_reasoning_details_are_shown_as_the_client_sends_them_back() -> None:
    """OpenRouter's summary and encrypted entry share index 0: two entries, as captured and as sent back, so that a
    comparison with the next request pairs them."""
    raw = (FIXTURES / "openrouter/codecompanion_gpt54mini_tool_call_reasoning_stream.sse").read_bytes()
    (record,) = tap_records(raw, sse=True)
    answer = read_answer(FORMAT, raw, sse=True)
    sent_back = message_of({"role": "assistant", "reasoning_details": record.fields["reasoning_details"]}, "m")
    shown = [(part.kind, part.field) for part in answer.parts() if part.field.startswith("reasoning_details")]
    assert shown == [(part.kind, part.field) for part in sent_back.parts]
    assert shown == [("reasoning", "reasoning_details[0]"), ("opaque", "reasoning_details[1].data")]


def test_fragments_without_an_index_continue_the_call_they_follow() -> None:
    raw = sse(
        delta(reasoning_content="r"),
        delta(tool_calls=[{"id": "call_a", "function": {"name": "f", "arguments": '{"x":'}}]),
        delta(tool_calls=[{"function": {"arguments": "1}"}}]),
        delta(tool_calls=[{"id": "call_b", "function": {"name": "g", "arguments": "{}"}}]),
    )
    calls = [part for part in read_answer(FORMAT, raw, sse=True).parts() if part.kind == "tool_call"]
    assert [(call.call_id, call.name, call.text) for call in calls] == [
        ("call_a", "f", '{"x":1}'),
        ("call_b", "g", "{}"),
    ]
    (record,) = tap_records(raw, sse=True)
    assert [(call.id, call.name) for call in record.tool_calls] == [("call_a", "f"), ("call_b", "g")]


def test_past_the_assembly_bound_the_rest_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.wire import assembly

    monkeypatch.setattr(assembly, "MAX_ASSEMBLED_CHARS", 100)
    answer = read_answer(FORMAT, sse(*[delta(content="x" * 30)] * 10), sse=True)
    text, note = answer.parts()
    assert text.text == "x" * 90 and (note.field, note.text) == ("cut", "210 more characters streamed, not kept here")


def test_mistral_thinking_chunks_and_text_chunks_in_one_assembly() -> None:
    def chunk(*content: dict) -> dict:
        return delta(content=list(content))

    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Okay"}]}
    more = {"type": "thinking", "thinking": [{"type": "text", "text": ", so"}]}
    closing = {"type": "thinking", "thinking": []}
    raw = sse(chunk(thinking), chunk(more), chunk(closing), chunk({"type": "text", "text": "Hi"}))
    (reasoning, text) = read_answer(FORMAT, raw, sse=True).parts()
    assert (reasoning.kind, reasoning.field, reasoning.text) == ("reasoning", "thinking", "Okay, so")
    assert (text.kind, text.text) == ("text", "Hi")
    stream = ChatStream(BudgetKeep(Budget()))
    for doc in json.loads("[" + ",".join(line[6:] for line in raw.decode().split("\n\n") if "{" in line) + "]"):
        stream.feed(doc)
    (choice,) = stream.choices.values()
    assert choice.fields() == {"thinking": [{"type": "thinking", "thinking": [{"type": "text", "text": "Okay, so"}]}]}
