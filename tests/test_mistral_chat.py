"""Mistral's thinking chunks on chat completions: read out of real answers (streamed and whole), given back at the
start of an assistant message's content, and another provider's reasoning field named as what Mistral refuses."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy.diagnosis import classify
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.chat_completions.fields import message_lacks
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions

from tests.test_capture_fixtures import sse_documents, tap_records

FIXTURES = Path(__file__).parent / "fixtures" / "mistral"
STREAM = FIXTURES / "pydanticai_magistral_medium_stream_thinking_chunks_0_response_200.sse"
ANSWER = FIXTURES / "pydanticai_magistral_medium_thinking_part_1_response_200.json"
REPLAY = FIXTURES / "pydanticai_magistral_medium_thinking_part_1_request.json"
FORMAT = ChatCompletions()
MODEL = "magistral-medium-latest"
CONTEXT = RepairContext(path="/v1/chat/completions", model=MODEL, host="api.mistral.ai")
THINKING = {"type": "thinking", "thinking": [{"type": "text", "text": "List it, then answer."}]}


def streamed_thinking(raw: bytes) -> str:
    """The thinking text of a stream, read the simplest possible way."""
    return "".join(
        part["text"]
        for doc in sse_documents(raw)
        for choice in doc["choices"]
        if isinstance(choice["delta"].get("content"), list)
        for chunk in choice["delta"]["content"]
        for part in chunk["thinking"]
    )


@pytest.mark.parametrize("size", [None, 1, 7, "events"])
def test_a_streamed_answer_gives_one_thinking_chunk_with_the_whole_text(size: int | str | None) -> None:
    raw = STREAM.read_bytes()
    (record,) = tap_records(raw, sse=True, size=size)
    (chunk,) = record.fields["thinking"]
    text = streamed_thinking(raw)
    assert text.startswith("Okay, the user is asking how to cross the street.") and text.endswith(
        "into a clear and concise response."
    )
    assert chunk == {"type": "thinking", "thinking": [{"type": "text", "text": text}]}
    assert record.response_id == "9f9d90210f194076abeee223863eaaf0" and record.response_model == MODEL
    assert record.keys() == []  # a text answer: logged, nothing to key it by


def test_a_whole_answer_keeps_its_thinking_chunk_as_sent() -> None:
    doc = jsoncodec.loads(ANSWER.read_bytes())
    (record,) = tap_records(ANSWER.read_bytes(), sse=False)
    assert record.fields == {"thinking": [doc["choices"][0]["message"]["content"][0]]}
    assert record.fields["thinking"][0]["thinking"][0]["text"].startswith("**Analogizing crossing a river**")


def test_answer_text_that_quotes_the_word_thinking_is_not_read_as_thinking() -> None:
    chunks = [
        {"id": "a" * 32, "model": MODEL, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
        {"id": "a" * 32, "model": MODEL, "choices": [{"index": 0, "delta": {"content": 'Say "thinking" aloud.'}}]},
    ]
    raw = b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"
    assert tap_records(raw, sse=True, size=None) == []


def test_a_closed_chunk_and_a_later_one_stay_two() -> None:
    def delta(content: object) -> bytes:
        doc = {"id": "b" * 32, "model": MODEL, "choices": [{"index": 0, "delta": {"content": content}}]}
        return b"data: " + json.dumps(doc).encode() + b"\n\n"

    def piece(text: str) -> list[dict]:
        return [{"type": "thinking", "thinking": [{"type": "text", "text": text}]}]

    raw = b"".join(
        [
            delta(piece("First")),
            delta(piece(" thought.")),
            delta([{"type": "thinking", "thinking": []}]),
            delta("Some text."),
            delta(piece("Second.")),
        ]
    )
    (record,) = tap_records(raw, sse=True, size=5)
    assert [chunk["thinking"][0]["text"] for chunk in record.fields["thinking"]] == ["First thought.", "Second."]


def test_the_replayed_request_mistral_accepted_lacks_nothing() -> None:
    """The real request that sent thinking back (as a text turn's content[0]) needs no repair."""
    request = jsoncodec.loads(REPLAY.read_bytes())
    assistant = request["messages"][1]
    assert assistant["content"][0]["type"] == "thinking" and assistant["prefix"] is False
    assert not message_lacks(assistant, "thinking")
    assert FORMAT.check(request, CONTEXT) == []


def record(call_id: str, chunks: list[dict], model: str = MODEL) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="chat_completions",
        fields={"thinking": chunks},
        tool_calls=[ToolCallRef(id=call_id, name="list_directory", arguments='{"path": "deleteme"}')],
        response_id="c" * 32,
        request_model=model,
    )


def turn_two(content: object) -> dict:
    call = {"id": "D681PevKs", "type": "function", "function": {"name": "list_directory", "arguments": '{"path": '}}
    call["function"]["arguments"] += '"deleteme"}'
    return {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "What is in deleteme?"},
            {"role": "assistant", "content": content, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "D681PevKs", "content": "a.txt"},
        ],
    }


def cached(doc: dict, records: list[ReasoningRecord]) -> CacheView:
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, MODEL) if k in stored}, MODEL)


@pytest.mark.parametrize(
    "sent, content",
    [
        (None, [THINKING]),
        ("", [THINKING]),
        ("I will look.", [THINKING, {"type": "text", "text": "I will look."}]),
        ([{"type": "text", "text": "I will look."}], [THINKING, {"type": "text", "text": "I will look."}]),
    ],
    ids=["null", "empty", "text", "text-chunks"],
)
def test_a_tool_call_turn_gets_its_thinking_back_at_the_start_of_its_content(sent: object, content: list) -> None:
    doc = turn_two(copy.deepcopy(sent))
    cache = cached(doc, [record("D681PevKs", [THINKING])])
    actions = FORMAT.repair(doc, cache, CONTEXT)
    assert doc["messages"][1]["content"] == content
    assert set(doc["messages"][1]) == {"role", "content", "tool_calls"}  # no field Mistral did not issue
    assert [a.describe() for a in actions] == ["restored thinking on messages[1] (tool call D681PevKs)"]
    assert FORMAT.repair(doc, cache, CONTEXT) == []  # idempotent


def test_restored_chunks_are_copies() -> None:
    captured = record("D681PevKs", [copy.deepcopy(THINKING)])
    doc = turn_two(None)
    FORMAT.repair(doc, cached(doc, [captured]), CONTEXT)
    doc["messages"][1]["content"][0]["thinking"][0]["text"] = "changed later by someone"
    assert captured.fields["thinking"] == [THINKING]


def test_a_turn_that_kept_its_thinking_is_left_as_sent() -> None:
    doc = turn_two([THINKING, {"type": "text", "text": "I will look."}])
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cached(doc, [record("D681PevKs", [THINKING])]), CONTEXT) == []
    assert doc == before


def test_reasoning_content_sent_to_mistral_is_what_it_refuses() -> None:
    doc = turn_two(None)
    doc["messages"][1]["reasoning_content"] = "From a DeepSeek turn."
    (violation,) = FORMAT.check(doc, CONTEXT)
    assert (violation.rule, violation.location) == ("message_field_not_permitted", "messages[1]")
    assert violation.describe() == "messages[1]: reasoning_content on an assistant message, which mistral does not take"
    # The same request to DeepSeek is what DeepSeek wants.
    deepseek = RepairContext(path="/v1/chat/completions", model="deepseek-v4-pro", host="api.deepseek.com")
    assert FORMAT.check({**doc, "model": "deepseek-v4-pro"}, deepseek) == []


@pytest.mark.parametrize(
    "host, model, serves",
    [
        ("api.mistral.ai", "any-model", True),
        ("127.0.0.1", "magistral-small-2509", True),
        ("127.0.0.1", "mistral-medium-3-5", True),
        ("api.deepseek.com", "deepseek-v4-pro", False),
        ("openrouter.ai", "mistralai/magistral-medium-2506", False),
    ],
)
def test_who_is_mistral(host: str, model: str, serves: bool) -> None:
    serving = dialects.serving(host, "/v1/chat/completions", model)
    assert (serving is not None and serving.name == "mistral") is serves


# Mistral's 422, in the envelope https://github.com/Gage-Technologies/mistral-go/issues/3 quotes, for the field
# https://github.com/charmbracelet/crush/issues/1590 names.
MISTRAL_422 = {
    "object": "error",
    "message": {
        "detail": [
            {
                "type": "extra_forbidden",
                "loc": ["body", "messages", 1, "assistant", "reasoning_content"],
                "msg": "Extra inputs are not permitted",
                "input": "From a DeepSeek turn.",
            }
        ]
    },
    "type": "invalid_request_error",
    "param": None,
    "code": None,
}


@pytest.mark.parametrize("nested", [False, True], ids=["object", "message-as-json-text"])
def test_mistrals_422_names_the_message_and_the_field(nested: bool) -> None:
    body = copy.deepcopy(MISTRAL_422)
    if nested:  # an older envelope carried the detail as a JSON text (mistralai/platform-docs-public #7)
        body["message"] = json.dumps(body["message"])
    diagnosis = classify(422, json.dumps(body))
    assert (diagnosis.rule, diagnosis.provider, diagnosis.kind) == (
        "message_field_not_permitted",
        "mistral",
        "unsupported",
    )
    assert (diagnosis.index, diagnosis.field) == (1, "reasoning_content")
    assert diagnosis.message == "body.messages.1.assistant.reasoning_content: Extra inputs are not permitted"


def test_an_extra_top_level_parameter_is_not_a_message_field() -> None:
    body = copy.deepcopy(MISTRAL_422)
    body["message"]["detail"][0]["loc"] = ["body", "frequency_penalty"]
    assert classify(422, json.dumps(body)).rule != "message_field_not_permitted"
