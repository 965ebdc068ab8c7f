"""Each wire format's `recover` (llm_recover): what a request is sent as when the reasoning state its provider requires
cannot be put back, before sending (`refused=[]`) and for a request the provider refused (`refused` indexes or None);
and the repair plan that calls it."""

from __future__ import annotations

import copy
from typing import Any

from llm_reasoning_proxy.dialects.anthropic import ANTHROPIC_SIGNATURE_MISSING, ANTHROPIC_THINKING_EXPECTED
from llm_reasoning_proxy.dialects.base import REASONING_CONTENT_MISSING
from llm_reasoning_proxy.dialects.copilot import VERTEX_SIGNATURE_MISSING
from llm_reasoning_proxy.dialects.deepseek import DEEPSEEK_THINKING_MISSING
from llm_reasoning_proxy.dialects.gemini import GEMINI_SIGNATURE_MISSING
from llm_reasoning_proxy.dialects.xai import REASONING_SUMMARY_MISSING
from llm_reasoning_proxy.request.plans import recover_request
from llm_reasoning_proxy.shared.records import recovered_places
from llm_reasoning_proxy.shared.settings import OPTION_DEFAULTS, parse_settings
from llm_reasoning_proxy.wire import by_name
from llm_reasoning_proxy.wire.base import RepairContext
from llm_reasoning_proxy.wire.gemini.repair import PLACEHOLDER_BASE64

ANTHROPIC = by_name("anthropic_messages")
CHAT = by_name("chat_completions")
RESPONSES = by_name("openai_responses")
GEMINI = by_name("gemini_native")
CONVERSE = by_name("bedrock_converse")

USE = {"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {}}
RESULT = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"}]}
SIGNED = {"type": "thinking", "thinking": "old", "signature": "EqOld"}


def messages_request(model: str, **extra: Any) -> dict[str, Any]:
    """A turn 2 whose client dropped the thinking block of turn 1, with a finished earlier turn that kept its own."""
    return {
        "model": model,
        "max_tokens": 4000,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [
            {"role": "user", "content": "before"},
            {"role": "assistant", "content": [SIGNED, {"type": "text", "text": "done"}]},
            {"role": "user", "content": "list it"},
            {"role": "assistant", "content": [{"type": "text", "text": "Listing."}, USE]},
            RESULT,
        ],
        **extra,
    }


def context(model: str, path: str = "/v1/messages", host: str = "api.anthropic.com", **extra: Any) -> RepairContext:
    return RepairContext(path=path, model=model, host=host, **extra)


# Anthropic ------------------------------------------------------------------------------------------------------
def test_anthropic_turns_thinking_off_and_takes_out_the_blocks_left():
    doc = messages_request("claude-sonnet-4-5", temperature=0.3)
    actions = ANTHROPIC.recover(doc, context("claude-sonnet-4-5"), [])
    assert doc["thinking"] == {"type": "disabled"}  # budget_tokens belongs to thinking that is on
    assert doc["messages"][1]["content"] == [{"type": "text", "text": "done"}]
    assert doc["temperature"] == 0.3  # allowed with thinking off
    assert [(a.kind, a.rule, a.location, a.fields) for a in actions] == [
        ("recovered", ANTHROPIC_THINKING_EXPECTED, "messages[3]", ["thinking"]),
        ("recovered", ANTHROPIC_THINKING_EXPECTED, "messages[1].content[0]", ["thinking"]),
    ]
    assert actions[0].reason == "thinking turned off for this request" and actions[0].degraded
    assert actions[0].tool_call_id == "toolu_1"
    assert ANTHROPIC.check(doc, context("claude-sonnet-4-5")) == []


def test_anthropic_unsigned_thinking_nothing_cached_for_goes_and_then_thinking_off():
    """A session saved without signatures, resumed where no capture holds them ("thinking.signature: Field
    required"): the unsigned blocks go, as refused ones would, then thinking is off for the turn that lost them."""
    doc = messages_request("claude-sonnet-4-5")
    doc["messages"][3]["content"].insert(0, {"type": "thinking", "thinking": "saved without its signature"})
    recovered, unrecovered = recover_request(ANTHROPIC, doc, context("claude-sonnet-4-5"))
    assert unrecovered == []
    assert [(a.rule, a.location, a.reason) for a in recovered][:2] == [
        (
            ANTHROPIC_SIGNATURE_MISSING,
            "messages[3].content[0]",
            "thinking block sent without its signature, which nothing cached holds, taken out",
        ),
        (ANTHROPIC_THINKING_EXPECTED, "messages[3]", "thinking turned off for this request"),
    ]
    assert doc["thinking"] == {"type": "disabled"}
    assert ANTHROPIC.check(doc, context("claude-sonnet-4-5")) == []


def test_anthropic_adaptive_thinking_goes_off_too_and_opus_5_effort_comes_down_to_high():
    doc = messages_request("claude-opus-5", thinking={"type": "adaptive"}, output_config={"effort": "max"})
    actions = ANTHROPIC.recover(doc, context("claude-opus-5"), [])
    assert doc["thinking"] == {"type": "disabled"} and doc["output_config"] == {"effort": "high"}
    assert actions[0].fields == ["thinking", "output_config.effort"]
    # Below high, or on a model that takes any effort with thinking off, the effort stays.
    doc = messages_request("claude-sonnet-4-6", thinking={"type": "adaptive"}, output_config={"effort": "max"})
    ANTHROPIC.recover(doc, context("claude-sonnet-4-6"), [])
    assert doc["output_config"] == {"effort": "max"}


def test_anthropic_models_that_refuse_thinking_off_get_nothing():
    for model in ("claude-fable-5", "claude-sonnet-5-5", "claude-mythos-5", "us.anthropic.claude-fable-5-v1:0"):
        doc = messages_request(model, thinking={"type": "adaptive"})
        before = copy.deepcopy(doc)
        assert ANTHROPIC.recover(doc, context(model), []) == [], model
        assert doc == before


def test_anthropic_request_that_breaks_nothing_is_left_alone():
    doc = messages_request("claude-sonnet-4-5")
    doc["messages"][3]["content"].insert(0, dict(SIGNED))
    before = copy.deepcopy(doc)
    assert ANTHROPIC.recover(doc, context("claude-sonnet-4-5"), []) == []
    assert doc == before


def test_anthropic_refused_blocks_come_out_and_then_thinking_goes_off():
    doc = messages_request("claude-sonnet-4-5")
    doc["messages"][3]["content"].insert(0, {"type": "thinking", "thinking": "t", "signature": "EqBad"})
    actions = ANTHROPIC.recover(doc, context("claude-sonnet-4-5"), [3])
    assert doc["thinking"] == {"type": "disabled"}
    assert [a.location for a in actions] == ["messages[3].content[0]", "messages[3]", "messages[1].content[0]"]
    assert {a.rule for a in actions} == {ANTHROPIC_THINKING_EXPECTED}
    # Every message's (None), where taking them out leaves nothing missing: thinking stays as it was.
    doc = messages_request("claude-sonnet-4-5")
    doc["messages"] = doc["messages"][:2]
    actions = ANTHROPIC.recover(doc, context("claude-sonnet-4-5"), None)
    assert [a.location for a in actions] == ["messages[1].content[0]"] and actions[0].rule is None
    assert doc["thinking"]["type"] == "enabled"


def test_deepseek_anthropic_route_gets_empty_thinking_blocks_and_keeps_thinking_on():
    doc = messages_request("deepseek-v4-pro")
    del doc["thinking"]  # DeepSeek thinks unless told not to
    doc["messages"][1]["content"] = [{"type": "text", "text": "Looking."}, {**USE, "id": "call_0"}]
    ctx = context("deepseek-v4-pro", "/anthropic/v1/messages", "api.deepseek.com")
    actions = ANTHROPIC.recover(doc, ctx, [])
    assert "thinking" not in doc
    for index in (1, 3):
        assert doc["messages"][index]["content"][0] == {"type": "thinking", "thinking": "", "signature": ""}
    assert [(a.location, a.rule) for a in actions] == [
        ("messages[1].content[0]", DEEPSEEK_THINKING_MISSING),
        ("messages[3].content[0]", DEEPSEEK_THINKING_MISSING),
    ]
    assert recovered_places(actions) == ["messages[1].content[0]: thinking", "messages[3].content[0]: thinking"]
    assert ANTHROPIC.check(doc, ctx) == []


# Bedrock Converse -----------------------------------------------------------------------------------------------
def converse_request(**fields: Any) -> dict[str, Any]:
    use = {"toolUse": {"toolUseId": "tooluse_1", "name": "ls", "input": {}}}
    reasoning = {"reasoningContent": {"reasoningText": {"text": "old", "signature": "EqOld"}}}
    return {
        "messages": [
            {"role": "user", "content": [{"text": "before"}]},
            {"role": "assistant", "content": [reasoning, {"text": "done"}]},
            {"role": "user", "content": [{"text": "list it"}]},
            {"role": "assistant", "content": [{"text": "Listing."}, use]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "a"}]}}]},
        ],
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 2000}},
        **fields,
    }


def test_converse_turns_thinking_off_in_the_additional_fields():
    doc = converse_request()
    ctx = context("us.anthropic.claude-sonnet-4-5-v1:0", "/model/us.anthropic.claude-sonnet-4-5-v1:0/converse")
    actions = CONVERSE.recover(doc, ctx, [])
    assert doc["additionalModelRequestFields"] == {"thinking": {"type": "disabled"}}
    assert doc["messages"][1]["content"] == [{"text": "done"}]
    assert recovered_places(actions) == [
        "messages[3]: additionalModelRequestFields.thinking",
        "messages[1].content[0]: reasoningContent",
    ]
    assert CONVERSE.check(doc, ctx) == []
    fable = context("anthropic.claude-fable-5-v1:0", "/model/anthropic.claude-fable-5-v1:0/converse")
    assert CONVERSE.recover(converse_request(), fable, []) == []


# Chat completions -----------------------------------------------------------------------------------------------
def chat_request(model: str, **extra: Any) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    return {
        "model": model,
        "messages": [
            {"role": "user", "content": "list it"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a b"},
        ],
        **extra,
    }


def test_chat_sends_an_empty_reasoning_content_to_deepseek_and_kimi():
    for model, host in (("deepseek-v4-pro", "api.deepseek.com"), ("kimi-k2.7-code", "api.moonshot.ai")):
        doc = chat_request(model)
        ctx = context(model, "/v1/chat/completions", host)
        actions = CHAT.recover(doc, ctx, [])
        assert doc["messages"][1]["reasoning_content"] == "", model
        assert [(a.rule, a.location, a.fields, a.reason) for a in actions] == [
            (REASONING_CONTENT_MISSING, "messages[1]", ["reasoning_content"], "empty reasoning_content sent")
        ]
        assert CHAT.check(doc, ctx) == []


def test_chat_sends_googles_dummy_signature_to_gemini_compat_unless_the_setting_is_off():
    path = "/v1beta/openai/chat/completions"
    doc = chat_request("gemini-3-pro-preview")
    actions = CHAT.recover(doc, context("gemini-3-pro-preview", path, "localhost", placeholder="auto"), [])
    call = doc["messages"][1]["tool_calls"][0]
    assert call["extra_content"] == {"google": {"thought_signature": PLACEHOLDER_BASE64}}
    assert [a.rule for a in actions] == [GEMINI_SIGNATURE_MISSING]
    doc = chat_request("gemini-3-pro-preview")
    assert CHAT.recover(doc, context("gemini-3-pro-preview", path, "localhost"), []) == []


def test_chat_knows_no_stand_in_for_copilots_reasoning_opaque():
    doc = chat_request("gemini-3-pro-preview")
    ctx = context("gemini-3-pro-preview", "/chat/completions", "api.githubcopilot.com", placeholder="auto")
    before = copy.deepcopy(doc)
    assert CHAT.recover(doc, ctx, []) == []
    assert doc == before
    # The plan keeps what it could not stand in for, for the hook to say.
    actions, unrecovered = recover_request(CHAT, doc, ctx)
    assert actions == [] and [v.rule for v in unrecovered] == [VERTEX_SIGNATURE_MISSING]


def test_chat_refused_reasoning_is_taken_out_then_stood_in_for():
    doc = chat_request("deepseek-v4-pro")
    doc["messages"][1]["reasoning_content"] = "thought"
    doc["messages"][1]["reasoning_opaque"] = "opaque"
    actions = CHAT.recover(doc, context("deepseek-v4-pro", "/v1/chat/completions", "api.deepseek.com"), [1])
    assert doc["messages"][1]["reasoning_content"] == "" and "reasoning_opaque" not in doc["messages"][1]
    assert [a.fields for a in actions] == [["reasoning_opaque", "reasoning_content"], ["reasoning_content"]]
    assert {a.rule for a in actions} == {REASONING_CONTENT_MISSING}


# Responses ------------------------------------------------------------------------------------------------------
def responses_request() -> dict[str, Any]:
    return {
        "model": "grok-4.3",
        "store": False,
        "input": [
            {"role": "user", "content": "list it"},
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "blob"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a b"},
        ],
    }


def test_responses_takes_out_a_reasoning_item_xai_cannot_read_and_unpairs_its_call():
    doc = responses_request()
    ctx = context("grok-4.3", "/v1/responses", "api.x.ai")
    assert [v.rule for v in RESPONSES.check(doc, ctx)] == [REASONING_SUMMARY_MISSING]
    actions = RESPONSES.recover(doc, ctx, [])
    assert doc["input"][1] == {"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"}
    assert len(doc["input"]) == 3
    assert recovered_places(actions) == ["input[1]: reasoning rs_1", "input[1]: id"]
    assert {a.rule for a in actions} == {REASONING_SUMMARY_MISSING}
    assert RESPONSES.check(doc, ctx) == []


def test_responses_leaves_openai_requests_alone_before_sending_and_takes_out_refused_items():
    doc = responses_request()
    doc["model"] = "gpt-5"
    ctx = context("gpt-5", "/v1/responses", "api.openai.com")
    assert RESPONSES.recover(doc, ctx, []) == []
    actions = RESPONSES.recover(doc, ctx, [1])
    assert [item.get("type", "message") for item in doc["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]
    assert "id" not in doc["input"][1]
    assert [a.location for a in actions] == ["input[1]", "input[1]"] and actions[1].tool_call_id == "call_1"


# Gemini ---------------------------------------------------------------------------------------------------------
def gemini_request() -> dict[str, Any]:
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "list it"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}, "thoughtSignature": "bad"}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {"r": "a"}}}]},
        ]
    }


def test_gemini_before_sending_has_only_the_repairs_placeholder():
    path = "/v1beta/models/gemini-3-pro-preview:generateContent"
    doc = gemini_request()
    del doc["contents"][1]["parts"][0]["thoughtSignature"]
    assert GEMINI.recover(doc, context("gemini-3-pro-preview", path, placeholder="off"), []) == []


def test_gemini_refused_signature_is_replaced_by_the_placeholder_or_taken_out():
    path = "/v1beta/models/gemini-3-pro-preview:generateContent"
    doc = gemini_request()
    actions = GEMINI.recover(doc, context("gemini-3-pro-preview", path, placeholder="auto"), [1])
    assert doc["contents"][1]["parts"][0]["thoughtSignature"] == PLACEHOLDER_BASE64
    assert recovered_places(actions) == ["contents[1].parts[0]: thoughtSignature"]
    doc = gemini_request()
    GEMINI.recover(doc, context("gemini-3-pro-preview", path, placeholder="off"), None)
    assert "thoughtSignature" not in doc["contents"][1]["parts"][0]


# The plan -------------------------------------------------------------------------------------------------------
def test_recover_request_checks_first_and_says_what_it_could_not_stand_in_for():
    doc = messages_request("claude-sonnet-4-5")
    actions, unrecovered = recover_request(ANTHROPIC, doc, context("claude-sonnet-4-5"))
    assert [a.reason for a in actions][0] == "thinking turned off for this request" and unrecovered == []
    doc = messages_request("claude-fable-5", thinking={"type": "adaptive"})
    actions, unrecovered = recover_request(ANTHROPIC, doc, context("claude-fable-5"))
    assert actions == [] and [v.rule for v in unrecovered] == [ANTHROPIC_THINKING_EXPECTED]


def test_recovery_is_on_by_default():
    # The end-to-end suite turns it off for every proxy that does not ask for it (tests/support/proxy.py).
    assert parse_settings(OPTION_DEFAULTS).recover is True
