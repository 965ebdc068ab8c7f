"""Unit tests for addon/answer/provenance.py and each wire format's removal of values issued elsewhere."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from llm_reasoning_proxy.answer.provenance import Origin, foreign_lookup, issued_values, record_origins, value_digest
from llm_reasoning_proxy.cache import CacheLimits, MemoryStore
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.anthropic.format import AnthropicMessages
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions
from llm_reasoning_proxy.wire.gemini.format import PLACEHOLDER_BASE64, GeminiNative
from llm_reasoning_proxy.wire.responses.format import Responses

SCOPE = "api.example.com:443|account-a"
MINE = Origin(SCOPE, "model-y")
FROM_X = Origin(SCOPE, "model-x")


def store_with(*issued: tuple[Origin, list[str]]) -> MemoryStore:
    store = MemoryStore(CacheLimits(max_age=3600, max_entries=1000))
    for origin, values in issued:
        record_origins(store, origin, values)
    return store


def lookup(*issued: tuple[Origin, list[str]]):
    return foreign_lookup(store_with(*issued), MINE)


def test_a_digest_is_one_way_and_domain_separated() -> None:
    import hashlib

    assert value_digest("sig") == value_digest("sig") != value_digest("sig2")
    assert value_digest("sig") != hashlib.sha256(b"sig").hexdigest()[:32]
    assert len(value_digest("x" * 100_000)) == 32


def test_origins_say_why_a_value_is_foreign() -> None:
    assert FROM_X.foreign_to(MINE) == "issued for model model-x, not model-y"
    assert Origin("other.example:443|account-a", "model-y").foreign_to(MINE) == (
        "issued by other.example:443, not api.example.com:443"
    )
    named = Origin(MINE.scope, MINE.model, named=True)
    assert Origin("api.example.com:443|account-b", "model-y", named=True).foreign_to(named) == (
        "issued to another account"
    )
    assert Origin("api.example.com:443|key-b", "model-y").foreign_to(MINE) == "issued for model model-y, not model-y"
    assert Origin(SCOPE, None).foreign_to(MINE) == "issued for a request that named no model, not model-y"
    assert Origin.decode(FROM_X.encode()) == FROM_X
    assert Origin.decode("not json") is None and Origin.decode('["a", 3]') is None


def test_a_value_is_foreign_only_when_known_and_never_issued_here() -> None:
    foreign = lookup((FROM_X, ["x-only", "both"]), (MINE, ["both", "mine"]))
    assert foreign(["x-only", "both", "mine", "never-seen"]) == {"x-only": "issued for model model-x, not model-y"}
    assert foreign([]) == {}


def test_issued_values_are_the_signed_ones_of_the_turn_and_its_calls() -> None:
    record = ReasoningRecord(
        wire_format="anthropic_messages",
        fields={
            "thinking_blocks": [
                {"type": "thinking", "thinking": "plain text is not signed", "signature": "SIG1"},
                {"type": "redacted_thinking", "data": "DATA1"},
            ],
            "thinking": "plain text is not signed",
        },
        tool_calls=[ToolCallRef(id="c1", name="f", fields={"signature": "SIG2", "other": "x"})],
    )
    assert issued_values(record, AnthropicMessages.signed_fields) == ["SIG1", "DATA1", "SIG2"]
    assert issued_values(ReasoningRecord(wire_format="x"), AnthropicMessages.signed_fields) == []


# --- Anthropic ----------------------------------------------------------------------------------------------

THINKING = {"type": "enabled", "budget_tokens": 1024}


def thinking(signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": "hmm", "signature": signature}


def use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "ls", "input": {}}


def result(call_id: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a"}]}


def anthropic_doc() -> dict[str, Any]:
    return {
        "model": "model-y",
        "thinking": THINKING,
        "messages": [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": [thinking("X1"), use("toolu_1")]},
            result("toolu_1"),
            {"role": "assistant", "content": [thinking("X2"), {"type": "text", "text": "done"}]},
            {"role": "user", "content": "second question"},
            {"role": "assistant", "content": [thinking("X3"), use("toolu_3")]},
            result("toolu_3"),
        ],
    }


def test_anthropic_removes_foreign_blocks_of_finished_turns_and_keeps_the_current_loops() -> None:
    doc = anthropic_doc()
    before = copy.deepcopy(doc)
    actions, kept = AnthropicMessages().remove_foreign(doc, lookup((FROM_X, ["X1", "X2", "X3"])))
    assert [(a.kind, a.location, a.fields, a.tool_call_id) for a in actions] == [
        ("foreign_removed", "messages[1].content[0]", ["thinking"], "toolu_1"),
        ("foreign_removed", "messages[3].content[0]", ["thinking"], None),
    ]
    assert actions[0].describe() == (
        "removed thinking at messages[1].content[0] (tool call toolu_1): issued for model model-x, not model-y"
    )
    assert doc["messages"][1]["content"] == [use("toolu_1")]
    assert doc["messages"][3]["content"] == [{"type": "text", "text": "done"}]
    assert doc["messages"][5] == before["messages"][5]  # the current loop's last assistant message needs its block
    assert len(kept) == 1 and kept[0][0] == 5
    assert kept[0][1].startswith("thinking block at messages[5].content[0] issued for model model-x")


def test_anthropic_leaves_unknown_and_own_values_alone() -> None:
    doc = anthropic_doc()
    before = copy.deepcopy(doc)
    assert AnthropicMessages().remove_foreign(doc, lookup((MINE, ["X1", "X2", "X3"]))) == ([], [])
    assert AnthropicMessages().remove_foreign(doc, lookup()) == ([], [])
    assert doc == before


def test_anthropic_without_thinking_the_last_message_loses_its_foreign_block_too() -> None:
    doc = anthropic_doc()
    del doc["thinking"]
    actions, kept = AnthropicMessages().remove_foreign(doc, lookup((FROM_X, ["X3"])))
    assert [a.location for a in actions] == ["messages[5].content[0]"] and kept == []


def test_anthropic_a_message_that_is_only_a_foreign_block_stays() -> None:
    doc = {
        "model": "model-y",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "D1"}]},
            {"role": "user", "content": "q2"},
        ],
    }
    actions, kept = AnthropicMessages().remove_foreign(doc, lookup((FROM_X, ["D1"])))
    assert actions == [] and kept[0][0] == 1 and "all the message holds" in kept[0][1]


# --- Responses ----------------------------------------------------------------------------------------------


def test_responses_drops_foreign_reasoning_items() -> None:
    items = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs_1", "encrypted_content": "ENC1", "summary": []},
        {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "a"},
        {"type": "reasoning", "id": "rs_2", "encrypted_content": "ENC2", "summary": []},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ]
    doc = {"model": "model-y", "input": items}
    actions, kept = Responses().remove_foreign(doc, lookup((FROM_X, ["ENC1"]), (MINE, ["ENC2"])))
    assert [(a.location, a.fields, a.tool_call_id) for a in actions] == [("input[1]", ["reasoning rs_1"], "call_1")]
    assert [item.get("id") for item in doc["input"]] == [None, None, None, "rs_2", None]
    assert kept == []


# --- Gemini -------------------------------------------------------------------------------------------------


def test_gemini_drops_foreign_signatures_and_the_repair_then_sends_the_placeholder() -> None:
    contents = [
        {"role": "user", "parts": [{"text": "q"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "U0lHMQ=="}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
    ]
    doc = {"contents": contents}
    path = "/v1beta/models/gemini-3-flash-preview:generateContent"
    gemini_context = RepairContext(path=path, model="gemini-3-flash-preview", placeholder="auto")
    gemini = GeminiNative()
    actions, _ = gemini.remove_foreign(doc, lookup((FROM_X, ["U0lHMQ=="])))
    assert [(a.kind, a.location, a.fields) for a in actions] == [
        ("foreign_removed", "contents[1].parts[0]", ["thoughtSignature"])
    ]
    assert "thoughtSignature" not in contents[1]["parts"][0]
    repairs = gemini.repair(doc, CacheView({}, "gemini-3-flash-preview"), gemini_context)
    assert [(a.kind, a.degraded) for a in repairs] == [("placeholder", True)]
    assert contents[1]["parts"][0]["thoughtSignature"] == PLACEHOLDER_BASE64


# --- chat completions ---------------------------------------------------------------------------------------


def call(call_id: str, signature: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    if signature is not None:
        found["extra_content"] = {"google": {"thought_signature": signature}}
    return found


@pytest.mark.parametrize("where", ["earlier turn", "current turn"])
def test_chat_removes_foreign_values_of_finished_turns_only(where: str) -> None:
    assistant = {
        "role": "assistant",
        "content": None,
        "reasoning_text": "plain",
        "reasoning_opaque": "OPAQUE-X",
        "reasoning_details": [
            {"type": "reasoning.encrypted", "data": "ENC-X"},
            {"type": "reasoning.text", "text": "t"},
        ],
        "tool_calls": [call("call_1", "TS-X")],
    }
    messages = [{"role": "user", "content": "q"}, assistant, {"role": "tool", "tool_call_id": "call_1", "content": "a"}]
    if where == "earlier turn":
        messages += [{"role": "assistant", "content": "done"}, {"role": "user", "content": "q2"}]
    before = copy.deepcopy(messages)
    foreign = lookup((FROM_X, ["OPAQUE-X", "ENC-X", "TS-X"]))
    actions, kept = ChatCompletions().remove_foreign({"messages": messages}, foreign)
    if where == "current turn":
        assert actions == [] and messages == before and [index for index, _ in kept] == [1, 1, 1]
        return
    assert kept == []
    assert sorted(field for a in actions for field in a.fields) == [
        "reasoning_details[0]",
        "reasoning_opaque",
        "tool_calls[0].extra_content",
    ]
    assert messages[1] == {
        "role": "assistant",
        "content": None,
        "reasoning_text": "plain",
        "reasoning_details": [{"type": "reasoning.text", "text": "t"}],
        "tool_calls": [call("call_1")],
    }


def context() -> RepairContext:
    return RepairContext(path="/v1/messages", model="model-y")


def test_the_offline_check_removes_what_an_earlier_exchange_issued_for_another_model() -> None:
    import json

    from llm_reasoning_proxy.offline.check import check_flows
    from mitmproxy import http
    from mitmproxy.test import tflow, tutils

    def exchange(model: str, items: list[dict], output: list[dict]) -> http.HTTPFlow:
        flow = tflow.tflow()
        flow.request = tutils.treq(
            host="api.openai.com",
            port=443,
            scheme=b"https",
            path=b"/v1/responses",
            method=b"POST",
            headers=http.Headers(authorization="Bearer sk-test", content_type="application/json"),
            content=json.dumps({"model": model, "input": items, "store": False}).encode(),
        )
        flow.response = tutils.tresp(
            headers=http.Headers(content_type="application/json"),
            content=json.dumps({"id": "resp_1", "model": model, "output": output}).encode(),
        )
        return flow

    question = {"role": "user", "content": "q"}
    reasoning = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAA-ENC", "summary": []}
    answer = {"type": "message", "id": "msg_1", "role": "assistant", "content": [{"type": "output_text", "text": "a"}]}
    follow_up = [question, reasoning, answer, {"role": "user", "content": "q2"}]
    first, second = check_flows(
        [exchange("gpt-5", [question], [reasoning, answer]), exchange("gpt-5-mini", follow_up, [])]
    )
    assert first.actions == []
    assert [(a.kind, a.location, a.reason) for a in second.actions] == [
        ("foreign_removed", "input[1]", "issued for model gpt-5, not gpt-5-mini")
    ]
