"""Repair of chat completions requests, as pure functions over parsed bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT = ChatCompletions()
OPAQUE = "XLn4be0+/abc=="


def record(*ids: str, **fields: str) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="chat_completions",
        fields=fields or {"reasoning_opaque": OPAQUE, "reasoning_text": "Some reasoning"},
        tool_calls=[ToolCallRef(id=i) for i in ids],
        response_id="resp-1",
    )


def call(call_id: str, name: str = "list_directory") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": '{"path":"deleteme"}'}}


def conversation(assistant: dict, *more: dict) -> dict:
    return {
        "model": "gemini-3-pro-preview",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "What is in deleteme?"},
            assistant,
            *more,
            {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        ],
    }


CONTEXT = RepairContext(path="/v1/chat/completions", model=None)


def cached_for(doc: dict, records: list[ReasoningRecord], model: str | None = None) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def test_restores_opaque_and_text_and_nulls_empty_content() -> None:
    doc = conversation({"role": "assistant", "content": [], "tool_calls": [call("call_1")]})
    actions = FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT)
    message = doc["messages"][2]
    assert message == {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("call_1")],
        "reasoning_opaque": OPAQUE,
        "reasoning_text": "Some reasoning",
    }
    assert [a.describe() for a in actions] == [
        "content [] -> null on messages[2]",
        "restored reasoning_opaque, reasoning_text on messages[2] (tool call call_1)",
    ]


def test_parallel_calls_take_the_record_of_any_of_their_ids() -> None:
    doc = conversation({"role": "assistant", "content": None, "tool_calls": [call("call_0"), call("call_1")]})
    FORMAT.repair(doc, cached_for(doc, [record("call_0", "call_1")]), CONTEXT)
    assert doc["messages"][2]["reasoning_opaque"] == OPAQUE


def test_values_the_client_sent_are_kept() -> None:
    doc = conversation(
        {"role": "assistant", "content": None, "reasoning_opaque": "theirs", "tool_calls": [call("call_1")]}
    )
    actions = FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT)
    assert doc["messages"][2]["reasoning_opaque"] == "theirs"
    assert doc["messages"][2]["reasoning_text"] == "Some reasoning"
    assert actions[0].fields == ["reasoning_text"]


def test_null_counts_as_missing() -> None:
    doc = conversation({"role": "assistant", "content": "", "reasoning_content": None, "tool_calls": [call("call_1")]})
    FORMAT.repair(doc, cached_for(doc, [record("call_1", reasoning_content="thinking")]), CONTEXT)
    assert doc["messages"][2]["reasoning_content"] == "thinking"
    assert doc["messages"][2]["content"] == ""  # an empty string is a value the client chose


def test_empty_reasoning_content_from_the_provider_is_put_back() -> None:
    doc = conversation({"role": "assistant", "content": "", "tool_calls": [call("call_1")]})
    FORMAT.repair(doc, cached_for(doc, [record("call_1", reasoning_content="")]), CONTEXT)
    assert doc["messages"][2]["reasoning_content"] == ""


def test_split_messages_are_merged_then_restored() -> None:
    text = {"role": "assistant", "content": "I will look.", "reasoning_text": "Some reasoning"}
    calls = {"role": "assistant", "content": [], "tool_calls": [call("call_1")]}
    doc = conversation(text, calls)
    actions = FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT)
    assert len(doc["messages"]) == 4
    assert doc["messages"][2] == {
        "role": "assistant",
        "content": "I will look.",
        "reasoning_text": "Some reasoning",
        "tool_calls": [call("call_1")],
        "reasoning_opaque": OPAQUE,
    }
    assert [a.kind for a in actions] == ["merged", "restored"]


def test_a_merge_is_described_by_what_it_did_and_where() -> None:
    text = {"role": "assistant", "content": "I will look."}
    doc = conversation(text, {"role": "assistant", "tool_calls": [call("call_1")]})
    merged, _ = FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT)
    assert merged.describe() == "merged split assistant messages into messages[2]"


def test_text_only_then_tool_calls_merges_when_the_calls_are_cached() -> None:
    doc = conversation(
        {"role": "assistant", "content": "I will look."}, {"role": "assistant", "tool_calls": [call("call_1")]}
    )
    FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT)
    assert doc["messages"][2]["content"] == "I will look." and doc["messages"][2]["reasoning_opaque"] == OPAQUE


def test_consecutive_plain_assistant_messages_are_left_alone() -> None:
    doc = conversation(
        {"role": "assistant", "content": "Hello."},
        {"role": "assistant", "content": None, "tool_calls": [call("call_1")]},
    )
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, CacheView({}, None), CONTEXT) == []
    assert doc == before


@pytest.mark.parametrize(
    "assistant",
    [
        {"role": "assistant", "content": [], "tool_calls": [call("call_1")]},
        {"role": "assistant", "content": "x", "reasoning_text": "t"},
    ],
)
def test_repair_is_idempotent(assistant: dict) -> None:
    doc = conversation(assistant, {"role": "assistant", "content": None, "tool_calls": [call("call_1")]})
    cached = cached_for(doc, [record("call_1")])
    FORMAT.repair(doc, cached, CONTEXT)
    once = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cached_for(doc, [record("call_1")]), CONTEXT) == []
    assert doc == once


def test_unknown_ids_and_odd_shapes_are_left_alone() -> None:
    for doc in [
        {"messages": "nope"},
        {"messages": [None, 3, {"role": "assistant", "tool_calls": "x"}]},
        conversation({"role": "assistant", "content": None, "tool_calls": [call("call_other")]}),
        [],
    ]:
        before = copy.deepcopy(doc)
        assert FORMAT.repair(doc, CacheView({}, None), CONTEXT) == []
        assert doc == before


def test_deepseek_fixture_history_round_trip() -> None:
    """Strip reasoning_content from a real DeepSeek request and get it back from the turn-1 response."""
    request = json.loads(
        (FIXTURES / "deepseek/pydanticai_deepseek_reasoning_content_tool_calls_roundtrip_1_request.json").read_text()
    )
    response = json.loads(
        (
            FIXTURES / "deepseek/pydanticai_deepseek_reasoning_content_tool_calls_roundtrip_0_response_200.json"
        ).read_text()
    )
    reader = FORMAT.reader()
    reader.feed_document(response)
    (captured,) = reader.records(complete=True)
    original = copy.deepcopy(request)
    stripped = copy.deepcopy(request)
    del stripped["messages"][3]["reasoning_content"]
    actions = FORMAT.repair(stripped, cached_for(stripped, [captured]), CONTEXT)
    assert [a.index for a in actions] == [3]
    assert stripped == original


def test_claims_and_cheap_checks() -> None:
    assert FORMAT.claims("POST", "/v1/chat/completions", b'{"messages": []}')
    assert FORMAT.claims("POST", "/chat/completions/?x=1", b'{"messages": []}')
    assert not FORMAT.claims("GET", "/v1/chat/completions", b'{"messages": []}')
    assert not FORMAT.claims("POST", "/v1/completions", b'{"messages": []}')
    assert not FORMAT.claims("POST", "/v1/chat/completions", b'{"prompt": "x"}')
    assert FORMAT.may_need_repair(b'{"messages":[{"tool_calls":[]}]}')
    assert not FORMAT.may_need_repair(b'{"messages":[{"role":"tool","tool_call_id":"x"}],"tools":[]}')


@pytest.mark.parametrize(
    "body, model",
    [
        (b'{"model":"gemini-3-pro-preview","messages":[]}', "gemini-3-pro-preview"),
        (b'{"messages":[{"content":"say \\"model\\": \\"x\\""}], "model" : "m\\u00e9"}', "m\u00e9"),
        (b'{"model":"a","tools":[{"parameters":{"model":"b"}}]}', None),  # ambiguous: do not guess
        (b'{"messages":[]}', None),
    ],
)
def test_sniff_model(body: bytes, model: str | None) -> None:
    assert jsoncodec.sniff_model(body) == model


def _named(*ids: str) -> ReasoningRecord:
    calls = [ToolCallRef(id=i, name="list_directory", arguments='{"path":"deleteme"}') for i in ids]
    return record().model_copy(update={"tool_calls": calls})


def test_a_call_whose_id_was_rewritten_is_found_by_name_and_arguments() -> None:
    doc = conversation({"role": "assistant", "content": None, "tool_calls": [call("call_rewritten")]})
    cache = cached_for(doc, [_named("call_1")])
    hit = cache.call("call_rewritten", "list_directory", '{"path":"deleteme"}')
    assert hit is not None and (hit.call.id, hit.via) == ("call_1", "fingerprint")


def test_a_call_is_not_given_the_reasoning_of_another_call_in_the_request_with_the_same_name_and_arguments() -> None:
    """The captured call is in the request under its own id: the other one is a later call, not it renamed."""
    first = {"role": "assistant", "content": None, "tool_calls": [call("call_1")]}
    later = {"role": "assistant", "content": None, "tool_calls": [call("call_2")]}
    doc = conversation(first, {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"}, later)
    cache = cached_for(doc, [_named("call_1")])
    assert cache.call("call_2", "list_directory", '{"path":"deleteme"}') is None
    assert cache.call("call_1", "list_directory", '{"path":"deleteme"}').via == "id"
    FORMAT.repair(doc, cache, CONTEXT)
    assert doc["messages"][2]["reasoning_opaque"] == OPAQUE and "reasoning_opaque" not in doc["messages"][4]
