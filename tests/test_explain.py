"""Explaining provider errors: locating them in the request, advice, self-healing; static rule checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.diagnosis import classify
from llm_reasoning_proxy.explain import advise, block_to_message, calls_at, locate
from llm_reasoning_proxy.formats import RepairContext, by_name
from llm_reasoning_proxy.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.scope import request_scope
from mitmproxy import http
from mitmproxy.test import taddons, tflow, tutils

from tests.support.fake_chat import DEEPSEEK_MISSING_REASONING, VERTEX_MISSING_SIGNATURE

CHAT = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u"},
    {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a"},
    {"role": "tool", "tool_call_id": "c2", "content": "b"},
    {"role": "assistant", "tool_calls": [{"id": "c3", "function": {"name": "cat", "arguments": "{}"}}]},
]


@pytest.mark.parametrize("position, index", [(1, 1), (2, 2), (3, 3), (4, 5), (9, None)])
def test_gemini_content_blocks_map_back_to_chat_messages(position: int, index: int | None) -> None:
    # system leaves; the two tool results are one block
    assert block_to_message(CHAT, position) == index


def test_a_vertex_error_through_copilot_points_at_the_chat_message_and_its_call() -> None:
    body = {"error": {"message": VERTEX_MISSING_SIGNATURE.format(name="cat", block=4), "code": "invalid_request_body"}}
    diagnosis = classify(400, json.dumps(body))
    index = locate(diagnosis, "chat_completions", {"messages": CHAT})
    assert index == 5
    assert calls_at("chat_completions", {"messages": CHAT}, index) == [("c3", "cat", "{}")]


def test_other_formats_locate_by_index_or_item_id() -> None:
    deepseek = classify(400, json.dumps({"error": {"message": DEEPSEEK_MISSING_REASONING.format(index=2)}}))
    assert locate(deepseek, "chat_completions", {"messages": CHAT}) == 2
    responses = classify(
        400,
        json.dumps(
            {
                "error": {
                    "message": "Item 'fc_9' of type 'function_call' was provided "
                    "without its required 'reasoning' item: 'rs_9'."
                }
            }
        ),
    )
    doc = {
        "input": [
            {"role": "user", "content": "x"},
            {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "ls", "arguments": "{}"},
        ]
    }
    assert locate(responses, "openai_responses", doc) == 1
    assert calls_at("openai_responses", doc, 1) == [("call_9", "ls", "{}")]
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "x"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"a": 1}}}]},
        ]
    }
    assert calls_at("gemini_native", gemini, 1) == [(None, "ls", {"a": 1})]
    assert calls_at("gemini_native", gemini, 7) == [] and calls_at("chat_completions", None, 0) == []


def test_advice_depends_on_what_the_proxy_knew_and_did() -> None:
    missing = classify(400, json.dumps({"error": {"message": DEEPSEEK_MISSING_REASONING.format(index=2)}}))
    assert "never saw the answer" in advise(missing, cache_had=False, repaired_here=False, healed=0, repair_on=True)
    assert "turn repair on" in advise(missing, cache_had=True, repaired_here=False, healed=0, repair_on=False)
    assert "report it with the flow" in advise(missing, cache_had=True, repaired_here=True, healed=0, repair_on=True)
    invalid = classify(400, '{"error": {"code": 400, "message": "Thought signature is not valid."}}')
    assert "1 cache entry dropped" in advise(invalid, cache_had=True, repaired_here=True, healed=1, repair_on=True)
    assert "never overwrites" in advise(invalid, cache_had=None, repaired_here=False, healed=0, repair_on=True)
    unknown = classify(400, "teapot")
    assert advise(unknown, cache_had=None, repaired_here=False, healed=0, repair_on=True).startswith("not a known")


def test_a_refused_value_the_proxy_inserted_is_dropped_and_explained(tmp_path: Path) -> None:
    config, repair, capture, explainer = make_addons()
    log = tmp_path / "events.jsonl"
    with taddons.context(config, repair, capture, explainer) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log=str(log))
        body = {
            "model": "gemini-3-pro-preview",
            "messages": [
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": "a"},
            ],
        }
        request = tutils.treq(
            method=b"POST",
            path=b"/v1/chat/completions",
            content=json.dumps(body).encode(),
            headers=http.Headers(content_type="application/json"),
        )
        flow = tflow.tflow(req=request)
        record = ReasoningRecord(
            wire_format="chat_completions",
            fields={"reasoning_opaque": "BAD"},
            response_id="r1",
            tool_calls=[ToolCallRef(id="call_1", name="ls", arguments="{}")],
            request_model="gemini-3-pro-preview",
        )
        scope = str(request_scope(flow.request))
        config.store.put(scope, record.keys(), record)
        repair.request(flow)
        assert flow.request.json()["messages"][1]["reasoning_opaque"] == "BAD"
        error = {"error": {"message": "Thought signature is not valid.", "code": "invalid_request_body"}}
        flow.response = tutils.tresp(
            status_code=400, content=json.dumps(error).encode(), headers=http.Headers(content_type="application/json")
        )
        explainer.response(flow)
        assert config.store.get_many(scope, record.keys()) == {}
    assert "refused a value the proxy put back; 1 cache entry dropped" in flow.comment
    (event,) = [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "diagnosed"]
    assert event["rule"] == "signature_invalid" and event["healed"] == 1 and event["repaired"] is True


def test_a_400_to_a_request_the_proxy_did_not_touch_heals_nothing(tmp_path: Path) -> None:
    config, repair, capture, explainer = make_addons()
    with taddons.context(config, repair, capture, explainer) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log="")
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        request = tutils.treq(method=b"POST", path=b"/v1/chat/completions", content=json.dumps(body).encode())
        flow = tflow.tflow(req=request)
        record = ReasoningRecord(wire_format="chat_completions", fields={"x": "y"}, tool_calls=[ToolCallRef(id="k")])
        config.store.put(str(request_scope(flow.request)), ["k"], record)
        repair.request(flow)
        flow.response = tutils.tresp(
            status_code=400, content=b'{"error": {"message": "Thought signature is not valid."}}'
        )
        explainer.response(flow)
        assert config.store.get_many(str(request_scope(flow.request)), ["k"])  # still there
        assert flow.metadata["llm"]["diagnosis"]["healed"] == 0


# --- static checks ----------------------------------------------------------------------------


def context(path: str = "/v1/chat/completions", model: str = "", host: str = "") -> RepairContext:
    return RepairContext(path=path, model=model, host=host)


def test_chat_checks() -> None:
    chat = by_name("chat_completions")
    messages = [
        {"role": "user", "content": "u"},
        {
            "role": "assistant",
            "content": [],
            "tool_calls": [{"id": "c1", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c9", "content": "a"},
    ]
    found = chat.check({"messages": messages}, context(model="deepseek-reasoner"))
    assert [(v.rule, v.location) for v in found] == [
        ("content_empty_array", "messages[1]"),
        ("reasoning_content_missing", "messages[1]"),
        ("tool_result_orphaned", "messages[2]"),
    ]
    copilot = chat.check(
        {"messages": messages[:2]}, context(model="gemini-3-pro-preview", host="api.githubcopilot.com")
    )
    assert [v.rule for v in copilot] == ["content_empty_array", "vertex_signature_missing"]
    compat = chat.check({"messages": messages[:2]}, context("/v1beta/openai/chat/completions", "gemini-3-pro-preview"))
    assert [v.rule for v in compat] == ["content_empty_array", "gemini_signature_missing"]
    assert [v.rule for v in chat.check({"messages": messages[:2]}, context(model="gpt-5"))] == ["content_empty_array"]


def test_other_format_checks() -> None:
    responses = by_name("openai_responses").check(
        {
            "input": [
                {"type": "reasoning", "id": "rs_1", "summary": []},
                {"type": "function_call_output", "call_id": "c"},
            ]
        },
        context("/v1/responses"),
    )
    assert [(v.rule, v.location) for v in responses] == [("responses_reasoning_orphaned", "input[0]")]
    anthropic_doc = {
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}]},
        ],
    }
    found = by_name("anthropic_messages").check(anthropic_doc, context("/v1/messages"))
    assert [(v.rule, v.location, v.tool_call_id) for v in found] == [
        ("anthropic_thinking_expected", "messages[1].content[0]", "toolu_1")
    ]
    anthropic_doc["thinking"] = {"type": "disabled"}
    assert by_name("anthropic_messages").check(anthropic_doc, context("/v1/messages")) == []
    contents = {
        "contents": [
            {"role": "user", "parts": [{"text": "u"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        ]
    }
    gemini = by_name("gemini_native")
    vertex_path = "/v1/projects/p/locations/l/publishers/google/models/gemini-3-pro-preview:generateContent"
    assert [v.rule for v in gemini.check(contents, context(vertex_path))] == ["vertex_signature_missing"]
    api_path = "/v1beta/models/gemini-2.5-pro:generateContent"
    assert gemini.check(contents, context(api_path)) == []  # Gemini 2.5 does not require signatures
