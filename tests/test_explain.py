"""Explaining provider errors: locating them in the request, advice, self-healing; static rule checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.diagnosis import classify
from llm_reasoning_proxy.diagnosis.explanation import FOREIGN_ADVICE, advise, locate, pick_finding
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, Violation
from llm_reasoning_proxy.wire import RepairContext, by_name
from llm_reasoning_proxy.wire.chat_completions.messages import block_to_message
from mitmproxy import http
from mitmproxy.test import tflow, tutils

from tests.support.addon_context import addon_context
from tests.support.fake_chat import COPILOT_INVALID_BODY, DEEPSEEK_MISSING_REASONING, VERTEX_MISSING_SIGNATURE
from tests.support.scope import request_scope

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
    index = locate(diagnosis, by_name("chat_completions"), {"messages": CHAT})
    assert index == 5
    assert by_name("chat_completions").calls_at({"messages": CHAT}, index) == [("c3", "cat", "{}")]


def test_other_formats_locate_by_index_or_item_id() -> None:
    deepseek = classify(400, json.dumps({"error": {"message": DEEPSEEK_MISSING_REASONING.format(index=2)}}))
    assert locate(deepseek, by_name("chat_completions"), {"messages": CHAT}) == 2
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
    assert locate(responses, by_name("openai_responses"), doc) == 1
    assert by_name("openai_responses").calls_at(doc, 1) == [("call_9", "ls", "{}")]
    gemini = {
        "contents": [
            {"role": "user", "parts": [{"text": "x"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {"a": 1}}}]},
        ]
    }
    assert by_name("gemini_native").calls_at(gemini, 1) == [(None, "ls", {"a": 1})]
    assert by_name("gemini_native").calls_at(gemini, 7) == [] and by_name("chat_completions").calls_at(None, 0) == []
    anthropic = {
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "toolu_01A", "name": "ls", "input": {"a": 1}},
                    {"type": "tool_use", "id": "toolu_01B", "name": "cat", "input": {}},
                ],
            },
        ]
    }
    assert by_name("anthropic_messages").calls_at(anthropic, 1) == [
        ("toolu_01A", "ls", {"a": 1}),
        ("toolu_01B", "cat", {}),
    ]


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
    config, repair, capture, explainer = make_addons()[:4]
    log = tmp_path / "events.jsonl"
    with addon_context(config, repair, capture, explainer) as tctx:
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


def test_a_refused_reasoning_item_named_by_its_id_drops_the_entry_it_came_from(tmp_path: Path) -> None:
    # The inserted reasoning item is not what the repair's action points at (that is the function call after it),
    # and the rs_ id is no cache key: only the item's own id ties the error to the cache entry.
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABo"}
    record = ReasoningRecord(
        wire_format="openai_responses",
        fields=reasoning,
        tool_calls=[ToolCallRef(id="call_1", name="ls", arguments="{}", aliases=["fc_1"])],
        response_id="resp_1",
        request_model="gpt-5",
    )
    body = {
        "model": "gpt-5",
        "input": [
            {"role": "user", "content": "u"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a"},
        ],
    }
    error = {
        "error": {
            "message": "The encrypted content for item rs_1 could not be verified.",
            "type": "invalid_request_error",
            "code": "invalid_encrypted_content",
        }
    }
    event, flow = explained(tmp_path, body, error, path="/v1/responses", cached=[record])
    assert json.loads(flow.request.content)["input"][1] == reasoning  # the proxy put it back
    assert event["rule"] == "responses_encrypted_content_invalid" and event["location"] == "input[1]"
    assert event["healed"] == 1


def test_a_400_to_a_request_the_proxy_did_not_touch_heals_nothing(tmp_path: Path) -> None:
    config, repair, capture, explainer = make_addons()[:4]
    with addon_context(config, repair, capture, explainer) as tctx:
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


def test_advice_for_foreign_state_binding_and_repair_off() -> None:
    foreign = classify(
        400, json.dumps({"error": {"message": "reasoning `encrypted_content` was not issued to this caller"}})
    )
    assert advise(foreign, cache_had=None, repaired_here=False, healed=0, repair_on=True) == FOREIGN_ADVICE
    assert "1 cache entry dropped" in advise(foreign, cache_had=True, repaired_here=True, healed=1, repair_on=True)
    binding = (
        "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation."
    )
    unnamed = classify(400, json.dumps({"type": "error", "error": {"message": binding}}))
    advice = advise(unnamed, cache_had=True, repaired_here=False, healed=0, repair_on=True)
    assert advice.startswith("the system prompt, the tools or an earlier turn changed since the thinking block")
    assert "drop_block" in advice
    tail = " The `system` prompt differs from the one this block was created with."
    named = classify(400, json.dumps({"type": "error", "error": {"message": binding + tail}}))
    advice = advise(named, cache_had=True, repaired_here=False, healed=0, repair_on=True)
    assert advice.startswith("the system prompt changed since the thinking block was issued")
    # Repair off: never the client's fault when the proxy would have fixed it.
    bare = classify(400, json.dumps(COPILOT_INVALID_BODY))
    advice = advise(
        bare,
        cache_had=True,
        repaired_here=False,
        healed=0,
        repair_on=False,
        would_repair="restored reasoning_opaque on messages[1]",
    )
    assert advice == (
        "repair is off (llm_repair=false), and the proxy would have restored reasoning_opaque on messages[1]: turn "
        "repair on (--set llm_repair=true)"
    )
    unexplained = advise(bare, cache_had=None, repaired_here=False, healed=0, repair_on=False)
    assert unexplained.startswith("Copilot does not say what it refused, and the request breaks none of the rules")
    # A bare text whose cause the format's check found is advised as that cause.
    missing = advise(bare, cache_had=False, repaired_here=False, healed=0, repair_on=True, kind="missing")
    assert "never saw the answer" in missing
    effort = classify(
        400, '{"code":"invalid_reasoning_effort","message":"model claude-haiku-4.5 does not support reasoning effort"}'
    )
    assert "reasoning effort out" in advise(effort, cache_had=None, repaired_here=False, healed=0, repair_on=True)


def test_the_placeholder_is_advised_only_where_it_applies(tmp_path: Path) -> None:
    missing = classify(
        400, json.dumps({"error": {"message": VERTEX_MISSING_SIGNATURE.format(name="ls", block=2), "status": "X_Y"}})
    )
    plain = advise(missing, cache_had=False, repaired_here=False, healed=0, repair_on=True)
    assert "placeholder" not in plain
    assert plain + "; with llm_signature_placeholder=auto the proxy lets it go on, degraded" == advise(
        missing, cache_had=False, repaired_here=False, healed=0, repair_on=True, placeholder_applies=True
    )
    contents = [
        {"role": "user", "parts": [{"text": "u"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
    ]
    path = "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
    error = {"error": {"code": 400, "message": VERTEX_MISSING_SIGNATURE.format(name="ls", block=2)}}
    for placeholder, advised in (("off", True), ("auto", False)):
        event, _ = explained(tmp_path, {"contents": contents}, error, path=path, llm_signature_placeholder=placeholder)
        assert event["rule"] == "vertex_signature_missing" and event["cache_had"] is False
        assert ("llm_signature_placeholder=auto" in event["advice"]) is advised, event["advice"]

    # The same error through Copilot: the placeholder is a repair of Gemini's native API only.
    error = {"error": {"message": VERTEX_MISSING_SIGNATURE.format(name="ls", block=2), "code": "invalid_request_body"}}
    event, _ = explained(tmp_path, COPILOT_HISTORY, error, llm_signature_placeholder="off")
    assert event["rule"] == "vertex_signature_missing" and event["cache_had"] is False
    assert "never saw the answer" in event["advice"] and "placeholder" not in event["advice"], event["advice"]


def test_a_gemini_call_sent_with_null_arguments_is_found_in_the_cache_as_the_repair_finds_it(tmp_path: Path) -> None:
    # Gemini answers a call without arguments with no "args"; a client may send it back with "args": null. The
    # explainer must ask the cache under the fingerprint the capture stored and the repair looks up (arguments {}),
    # or it says the proxy never saw the answer.
    path = "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
    reader = by_name("gemini_native").reader()
    reader.feed_document(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"functionCall": {"name": "ls"}, "thoughtSignature": "c2ln"}]}}
            ]
        }
    )
    (record,) = [r.model_copy(update={"request_model": "gemini-3-pro-preview"}) for r in reader.records(complete=True)]
    contents = [
        {"role": "user", "parts": [{"text": "u"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": None}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]},
    ]
    error = {"error": {"code": 400, "message": VERTEX_MISSING_SIGNATURE.format(name="ls", block=2)}}
    event, _ = explained(tmp_path, {"contents": contents}, error, path=path, cached=[record], llm_repair="false")
    assert event["location"] == "contents[1]" and event["cache_had"] is True, event


def test_a_finding_is_picked_by_rule_then_kind_and_field_then_missing_first() -> None:
    content = Violation(rule="content_empty_array", location="messages[1]", message="m")
    opaque = Violation(rule="vertex_signature_missing", location="messages[3]", message="m")
    bare = classify(400, json.dumps(COPILOT_INVALID_BODY))
    assert pick_finding([content, opaque], bare) is opaque
    assert pick_finding([content], bare) is content
    v4 = classify(
        400,
        json.dumps(
            {"error": {"message": "The `reasoning_content` in the thinking mode must be passed back to the API."}}
        ),
    )
    deepseek = Violation(rule="reasoning_content_missing", location="messages[4]", message="m")
    assert pick_finding([content, deepseek], v4) is deepseek
    assert pick_finding([content], v4) is None  # not what the error is about
    thinking = classify(
        400,
        json.dumps(
            {"error": {"message": "The `content[].thinking` in the thinking mode must be passed back to the API."}}
        ),
    )
    expected = Violation(rule="anthropic_thinking_expected", location="messages[3].content[0]", message="m")
    assert pick_finding([expected], thinking) is expected  # same kind and field


GEMINI3 = "gemini-3-pro-preview"
CALL = {"id": "call_MHxoeW9qWnVicVd6R0FkMFZ3UWw", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
COPILOT_HISTORY = {
    "model": GEMINI3,
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": CALL["id"], "content": "a"},
    ],
}
OPAQUE = ReasoningRecord(
    wire_format="chat_completions",
    fields={"reasoning_opaque": "lgxMQq0m/J6cVjsa"},
    response_id="r1",
    tool_calls=[ToolCallRef(id=CALL["id"], name="ls", arguments="{}")],
    request_model=GEMINI3,
)


def explained(
    tmp_path: Path,
    body: dict,
    error: dict,
    *,
    path: str = "/chat/completions",
    cached: list[ReasoningRecord] = (),
    **options: str,
) -> tuple[dict, http.HTTPFlow]:
    """One request through the repair and explain hooks, answered with `error`: its diagnosed event, and the flow."""
    config, repair, capture, explainer = make_addons()[:4]
    log = tmp_path / "events.jsonl"
    log.unlink(missing_ok=True)
    with addon_context(config, repair, capture, explainer) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log=str(log), **options)
        request = tutils.treq(
            method=b"POST",
            path=path.encode(),
            content=json.dumps(body).encode(),
            headers=http.Headers(content_type="application/json", authorization="Bearer ghu_test"),
        )
        flow = tflow.tflow(req=request)
        for record in cached:
            config.store.put(str(request_scope(flow.request)), record.keys(), record)
        repair.request(flow)
        flow.response = tutils.tresp(
            status_code=400, content=json.dumps(error).encode(), headers=http.Headers(content_type="application/json")
        )
        explainer.response(flow)
    (event,) = [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "diagnosed"]
    return event, flow


def test_copilots_bare_error_is_located_by_the_formats_check(tmp_path: Path) -> None:
    event, flow = explained(tmp_path, COPILOT_HISTORY, COPILOT_INVALID_BODY)
    assert event["rule"] == "copilot_invalid_request_body" and event["problem"] == "missing"
    assert event["location"] == "messages[1]" and event["tool_call_ids"] == [CALL["id"]]
    assert event["function"] == "ls" and event["cache_had"] is False
    assert event["findings"] == [
        f"messages[1]: current-turn function call without its thought signature (reasoning_opaque missing) "
        f"(tool call {CALL['id']})"
    ]
    assert "never saw the answer that produced this tool call" in event["advice"]
    assert (
        f"at messages[1] (tool call {CALL['id']}, function ls); as sent, the request breaks messages[1]: "
        in flow.comment
    )


def test_copilots_bare_error_with_repair_off_says_what_the_proxy_would_have_restored(tmp_path: Path) -> None:
    event, _ = explained(tmp_path, COPILOT_HISTORY, COPILOT_INVALID_BODY, cached=[OPAQUE], llm_repair="false")
    assert event["location"] == "messages[1]" and event["cache_had"] is True and event["repaired"] is False
    assert event["advice"] == (
        f"repair is off (llm_repair=false), and the proxy would have restored reasoning_opaque on messages[1] (tool "
        f"call {CALL['id']}): turn repair on (--set llm_repair=true)"
    )
    assert event["healed"] == 0


def test_repair_off_with_content_empty_array_names_the_fix_it_would_have_made(tmp_path: Path) -> None:
    body = json.loads(json.dumps(COPILOT_HISTORY))
    body["messages"][1]["content"] = []
    body["messages"][1]["reasoning_opaque"] = "lgxMQq0m/J6cVjsa"
    event, _ = explained(tmp_path, body, COPILOT_INVALID_BODY, llm_repair="false")
    assert event["problem"] == "schema" and event["location"] == "messages[1]"
    assert event["findings"][0].startswith("messages[1]: content is an empty array")
    assert "the proxy would have content [] -> null on messages[1]" in event["advice"]


def test_copilots_bare_error_after_a_repair_names_what_the_client_sent(tmp_path: Path) -> None:
    event, _ = explained(tmp_path, COPILOT_HISTORY, COPILOT_INVALID_BODY, cached=[OPAQUE], llm_keep_bodies="true")
    assert event["repaired"] is True and event["healed"] == 1  # the value the proxy put back went with the refusal
    assert event["findings"] == [
        "the client's request, mended by the proxy, broke messages[1]: current-turn function call without its "
        f"thought signature (reasoning_opaque missing) (tool call {CALL['id']})"
    ]
    # Without the copy kept for flow files, nothing is said about the client's own request.
    event, _ = explained(tmp_path, COPILOT_HISTORY, COPILOT_INVALID_BODY, cached=[OPAQUE], llm_keep_bodies="false")
    assert event["findings"] == []


def test_a_check_that_fails_costs_the_findings_not_the_diagnosis(tmp_path: Path, monkeypatch) -> None:
    def broken(*_):
        raise IndexError("a request no check foresaw")

    monkeypatch.setattr(type(by_name("chat_completions")), "check", broken)
    event, _ = explained(tmp_path, COPILOT_HISTORY, COPILOT_INVALID_BODY)
    assert event["rule"] == "copilot_invalid_request_body" and event["findings"] == []
    assert event.get("location") is None and event["advice"].startswith("Copilot does not say what it refused")


def test_the_binding_error_names_the_message_its_tool_call_and_the_cause(tmp_path: Path) -> None:
    body = {
        "model": "claude-fable-5-1",
        "thinking": {"type": "adaptive"},
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "u"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "EqQBCkgIBRABGAIiQ"},
                    {"type": "tool_use", "id": "toolu_01A", "name": "ls", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A", "content": "a"}]},
        ],
    }
    message = (
        "messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different "
        "conversation. The `system` prompt differs from the one this block was created with."
    )
    event, _ = explained(
        tmp_path,
        body,
        {"type": "error", "error": {"type": "invalid_request_error", "message": message}},
        path="/v1/messages",
    )
    assert (event["rule"], event["problem"], event["cause"]) == ("anthropic_block_binding", "foreign", "system prompt")
    assert event["location"] == "messages[1]" and event["tool_call_ids"] == ["toolu_01A"] and event["function"] == "ls"
    assert event["advice"].startswith("the system prompt changed since the thinking block was issued")
    assert event["findings"] == []


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
    no_call = [messages[0], {"role": "assistant", "tool_calls": [None]}]
    assert chat.check({"messages": no_call}, context(model="gemini-3-pro-preview", host="api.githubcopilot.com")) == []


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
