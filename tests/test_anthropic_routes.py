"""The Anthropic Messages format where others serve it: DeepSeek's Anthropic-compatible API, whose rules its dialect
gives (thinking on by default, every turn's thinking back, no redacted_thinking), and Claude on Vertex AI's
rawPredict routes, which name the model in the path."""

from __future__ import annotations

import copy
import json

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, canonical_arguments
from llm_reasoning_proxy.wire import CacheView, RepairContext, claim, routed
from llm_reasoning_proxy.wire.anthropic.format import AnthropicMessages

from tests.support import capture
from tests.support.fake_anthropic import DeepSeek, MessagesFake
from tests.support.fake_provider import Options

FORMAT = AnthropicMessages()
DEEPSEEK = "deepseek-v4-pro"
DEEPSEEK_CONTEXT = RepairContext(path="/anthropic/v1/messages", model=DEEPSEEK, host="api.deepseek.com")
MESSAGE_ID = "91cfbb94-554b-4136-8e21-fa02280d56ed"
THINKING = {"type": "thinking", "thinking": "List it first.", "signature": MESSAGE_ID}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}
VERTEX = "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"


def use(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "list_directory", "input": {"path": call_id}}


def result(call_id: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "a.txt"}]}


def record(call_id: str, blocks: list[dict], model: str = DEEPSEEK) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="anthropic_messages",
        fields={"thinking_blocks": blocks},
        tool_calls=[ToolCallRef(id=call_id, name="list_directory", arguments=canonical_arguments({"path": call_id}))],
        response_id=MESSAGE_ID,
        request_model=model,
    )


def cached(doc: dict, records: list[ReasoningRecord], model: str = DEEPSEEK) -> CacheView:
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def two_tool_turns(model: str = DEEPSEEK, **extra: object) -> dict:
    """Two tool turns of one loop, both sent back without their thinking, and no `thinking` field."""
    return {
        "model": model,
        "max_tokens": 1024,
        "messages": [
            {"role": "user", "content": "What is in deleteme?"},
            {"role": "assistant", "content": [use("call_a")]},
            result("call_a"),
            {"role": "assistant", "content": [{"type": "text", "text": "Once more."}, use("call_b")]},
            result("call_b"),
        ],
        **extra,
    }


# DeepSeek's Anthropic-compatible API -------------------------------------------------------------
def test_deepseek_thinks_by_default_and_wants_every_turns_thinking_back() -> None:
    doc = two_tool_turns()
    other = {**THINKING, "signature": "another-message-id"}
    actions = FORMAT.repair(
        doc, cached(doc, [record("call_a", [THINKING]), record("call_b", [other])]), DEEPSEEK_CONTEXT
    )
    assert doc["messages"][1]["content"] == [THINKING, use("call_a")]
    assert doc["messages"][3]["content"] == [other, {"type": "text", "text": "Once more."}, use("call_b")]
    assert [a.describe() for a in actions] == [
        "inserted thinking before messages[1].content[1] (tool call call_a)",
        "inserted thinking before messages[3].content[1] (tool call call_b)",
    ]
    assert "thinking" not in doc  # nothing the client did not send is added
    assert FORMAT.repair(doc, cached(doc, [record("call_a", [THINKING])]), DEEPSEEK_CONTEXT) == []


def test_anthropic_itself_thinks_only_when_asked_and_only_the_last_turn_is_required() -> None:
    claude = "claude-sonnet-4-5"
    context = RepairContext(path="/v1/messages", model=claude)
    doc = two_tool_turns(claude)
    records = [record("call_a", [THINKING], claude), record("call_b", [THINKING], claude)]
    assert FORMAT.lookup_keys(doc, claude) == [] and FORMAT.repair(doc, cached(doc, records, claude), context) == []
    doc["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    doc["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "Two files."}]})
    doc["messages"].append({"role": "user", "content": "And now?"})  # a new prompt: the loop above is finished
    doc["messages"].append({"role": "assistant", "content": [use("call_c")]})
    records.append(record("call_c", [THINKING], claude))
    actions = FORMAT.repair(doc, cached(doc, records, claude), context)
    assert [a.location for a in actions] == ["messages[7].content[1]"]


def test_deepseek_with_thinking_turned_off_is_left_alone() -> None:
    doc = two_tool_turns(thinking={"type": "disabled"})
    before = copy.deepcopy(doc)
    assert FORMAT.lookup_keys(doc, DEEPSEEK) == []
    assert FORMAT.repair(doc, CacheView({}, DEEPSEEK), DEEPSEEK_CONTEXT) == []
    assert FORMAT.check(doc, DEEPSEEK_CONTEXT) == [] and doc == before


def test_a_redacted_block_deepseek_cannot_read_is_taken_out() -> None:
    """A conversation begun on Claude, continued on DeepSeek: the block would have the whole request refused."""
    doc = two_tool_turns()
    doc["messages"][1]["content"] = [{"type": "thinking", "thinking": "Claude's.", "signature": "EqQB"}, REDACTED]
    doc["messages"][1]["content"].append(use("call_a"))
    actions = FORMAT.repair(doc, cached(doc, [record("call_b", [THINKING, REDACTED])]), DEEPSEEK_CONTEXT)
    assert [b["type"] for b in doc["messages"][1]["content"]] == ["thinking", "tool_use"]
    assert [b["type"] for b in doc["messages"][3]["content"]] == ["thinking", "text", "tool_use"]  # none restored
    assert [a.describe() for a in actions] == [
        "removed redacted_thinking at messages[1].content[1] (tool call call_a): DeepSeek's Anthropic-compatible API "
        "has no redacted_thinking block",
        "inserted thinking before messages[3].content[1] (tool call call_b)",
    ]


@pytest.mark.parametrize("host", ["litellm.internal", "dashscope.aliyuncs.com"])
def test_deepseeks_rules_hold_only_where_deepseek_answers(host: str) -> None:
    """A gateway that serves a deepseek model on its own Messages route keeps Anthropic's rules: its redacted_thinking
    stays, nothing is put back without a `thinking` field, and the body goes on as it came."""
    doc = two_tool_turns()
    doc["messages"][1]["content"] = [{"type": "thinking", "thinking": "Claude's.", "signature": "EqQB"}, REDACTED]
    doc["messages"][1]["content"].append(use("call_a"))
    before = copy.deepcopy(doc)
    context = RepairContext(path="/v1/messages", model=DEEPSEEK, host=host)
    assert FORMAT.repair(doc, cached(doc, [record("call_b", [THINKING, REDACTED])]), context) == []
    assert doc == before and FORMAT.check(doc, context) == []


def test_a_redacted_block_that_is_all_its_message_holds_stays() -> None:
    doc = {
        "model": DEEPSEEK,
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [REDACTED]}],
    }
    assert FORMAT.repair(doc, CacheView({}, DEEPSEEK), DEEPSEEK_CONTEXT) == []
    (violation,) = FORMAT.check(doc, DEEPSEEK_CONTEXT)
    assert (violation.rule, violation.location) == ("redacted_thinking_unsupported", "messages[1].content[0]")


def test_deepseek_checks_name_every_turn_without_its_thinking() -> None:
    violations = FORMAT.check(two_tool_turns(), DEEPSEEK_CONTEXT)
    assert [(v.rule, v.location, v.tool_call_id) for v in violations] == [
        ("deepseek_thinking_missing", "messages[1]", "call_a"),
        ("deepseek_thinking_missing", "messages[3]", "call_b"),
    ]


@pytest.mark.parametrize(
    "body, needs",
    [
        (b'{"model":"deepseek-v4-pro","messages":[{"content":[{"type":"tool_use"}]}]}', True),
        (b'{"model":"deepseek-v4-pro","messages":[{"content":[{"type":"redacted_thinking"}]}]}', True),
        (b'{"model":"deepseek-v4-pro","messages":[{"content":"Hi"}]}', False),
        (b'{"model":"claude-sonnet-4-5","messages":[{"content":[{"type":"tool_use"}]}]}', False),
        (b'{"model":"claude-sonnet-4-5","messages":[{"content":[{"type":"redacted_thinking"}]}]}', False),
    ],
)
def test_may_need_repair_asks_the_models_rules_where_the_body_does_not_say(body: bytes, needs: bool) -> None:
    assert FORMAT.may_need_repair(body) is needs


def test_who_thinks_by_default() -> None:
    rules = dialects.messages_thinking(DEEPSEEK)
    assert rules is not None and rules.by_default and rules.every_turn and rules.refused_blocks == {"redacted_thinking"}
    assert dialects.messages_thinking("claude-sonnet-4-5") is None


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_deepseeks_thinking_block_is_kept_as_it_came(stream: bool) -> None:
    """Whole, the block's signature is the message id; streamed, no signature comes, and none is made up."""
    question = {"role": "user", "content": "What is in the directory?"}
    deepseek = MessagesFake(DeepSeek())
    message = deepseek.answer({"model": DEEPSEEK, "messages": [question]}, Options())
    if stream:
        raw, sse = b"".join(deepseek.stream(message, Options())), True
    else:
        raw, sse = json.dumps(message).encode(), False
    (captured,) = capture.tap_records(FORMAT, raw, sse=sse, size=7)
    (block,) = captured.fields["thinking_blocks"]
    expected = message["content"][0]
    assert block == (expected if not stream else {"type": "thinking", "thinking": expected["thinking"]})
    assert captured.response_id == message["id"] and captured.tool_call_ids == [message["content"][1]["id"]]


# Claude on Vertex AI -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path, model",
    [
        (VERTEX, "claude-sonnet-4-5@20250929"),
        (VERTEX.replace(":streamRawPredict", ":rawPredict"), "claude-sonnet-4-5@20250929"),
        (VERTEX.replace("@", "%40") + "?alt=sse", "claude-sonnet-4-5@20250929"),
        (
            "/v1/projects/p/locations/global/publishers/anthropic/models/claude-opus-4-1@20250805:rawPredict",
            "claude-opus-4-1@20250805",
        ),
    ],
)
def test_vertex_routes_are_claimed_and_name_the_model(path: str, model: str) -> None:
    body = b'{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":"Hi"}],"max_tokens":8}'
    claimed = claim("POST", path, body)
    assert claimed is not None and claimed.name == FORMAT.name and routed("POST", path)
    assert FORMAT.request_model(path, body, None) == model
    assert dialects.serving("us-east5-aiplatform.googleapis.com", path, "").name == "vertex_anthropic"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict",  # no answer to keep
        "/v1/projects/p/locations/us-east5/publishers/google/models/gemini-3-pro-preview:streamGenerateContent",
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:predict",
    ],
)
def test_other_vertex_routes_are_not_anthropic_messages(path: str) -> None:
    body = b'{"anthropic_version":"vertex-2023-10-16","messages":[],"contents":[]}'
    claimed = claim("POST", path, body)
    assert claimed is None or claimed.name != FORMAT.name


def test_foreign_thinking_deepseek_still_needs_stays_where_every_turn_must_keep_its_own() -> None:
    """Every tool turn must carry a thinking block to DeepSeek: one another model signed stays (a `skipped` note says
    why); one on a text turn may go."""
    claude_block = {"type": "thinking", "thinking": "Claude's.", "signature": "EqQBCkYIBxgC"}
    doc = two_tool_turns()
    doc["messages"][1]["content"].insert(0, claude_block)
    doc["messages"].append({"role": "assistant", "content": [dict(claude_block), {"type": "text", "text": "Done."}]})
    actions, kept = FORMAT.remove_foreign(doc, lambda values: {v: "was issued for claude-sonnet-4-5" for v in values})
    assert [(a.location, a.fields) for a in actions] == [("messages[5].content[0]", ["thinking"])]
    assert kept == [
        (
            1,
            "thinking block at messages[1].content[0] was issued for claude-sonnet-4-5; left in place: DeepSeek's "
            "Anthropic-compatible API wants every tool turn's thinking back (go on with the model that issued it)",
        )
    ]


# Kimi on Moonshot's Anthropic-compatible API -------------------------------------------------------
KIMI = "kimi-k2.6"
KIMI_CONTEXT = RepairContext(path="/anthropic/v1/messages", model=KIMI, host="api.moonshot.ai")
# A signature of no shape Anthropic's has: Kimi's own, or one of a format nobody has seen yet.
KIMI_THINKING = {"type": "thinking", "thinking": "List it first.", "signature": "kimi.v1:ab:cd.EF"}


def test_kimi_wants_every_turns_thinking_back_when_thinking_is_on() -> None:
    doc = two_tool_turns(KIMI, thinking={"type": "enabled", "budget_tokens": 1024})
    other = {**KIMI_THINKING, "signature": "x"}  # one character: kept as it is
    records = [record("call_a", [KIMI_THINKING], KIMI), record("call_b", [other], KIMI)]
    actions = FORMAT.repair(doc, cached(doc, records, KIMI), KIMI_CONTEXT)
    assert doc["messages"][1]["content"] == [KIMI_THINKING, use("call_a")]
    assert doc["messages"][3]["content"] == [other, {"type": "text", "text": "Once more."}, use("call_b")]
    assert [a.location for a in actions] == ["messages[1].content[1]", "messages[3].content[1]"]


def test_kimi_thinks_unasked_only_for_models_that_always_think() -> None:
    asked_nothing = two_tool_turns(KIMI)
    assert FORMAT.lookup_keys(asked_nothing, KIMI) == []
    assert FORMAT.repair(asked_nothing, CacheView({}, KIMI), KIMI_CONTEXT) == []
    k3 = two_tool_turns("kimi-k3")
    context = RepairContext(path="/coding/v1/messages", model="kimi-k3", host="api.kimi.com")
    records = [record("call_a", [KIMI_THINKING], "kimi-k3"), record("call_b", [KIMI_THINKING], "kimi-k3")]
    assert len(FORMAT.repair(k3, cached(k3, records, "kimi-k3"), context)) == 2


@pytest.mark.parametrize(
    "host, path, served",
    [
        ("api.moonshot.ai", "/anthropic/v1/messages", True),
        ("api.moonshot.cn", "/anthropic/v1/messages", True),
        ("api.kimi.com", "/coding/v1/messages", True),
        ("127.0.0.1", "/coding/v1/messages", True),  # a local gateway in front of it
        ("openrouter.ai", "/api/v1/messages", False),  # a gateway serving a kimi model keeps Anthropic's rules
    ],
)
def test_kimis_rules_hold_only_where_kimi_answers(host: str, path: str, served: bool) -> None:
    rules = dialects.messages_thinking(KIMI, host, path)
    assert (rules is not None and rules.every_turn) is served
    assert (dialects.named("kimi_anthropic").serves(host, path, KIMI)) is served


def test_kimi_checks_name_every_turn_without_its_thinking() -> None:
    doc = two_tool_turns(KIMI, thinking={"type": "enabled", "budget_tokens": 1024})
    assert [(v.rule, v.location) for v in FORMAT.check(doc, KIMI_CONTEXT)] == [
        ("reasoning_content_missing", "messages[1]"),
        ("reasoning_content_missing", "messages[3]"),
    ]


def test_kimis_refusals_are_diagnosed() -> None:
    from llm_reasoning_proxy.diagnosis.matching import classify

    body = {"error": {"type": "invalid_request_error", "message": "invalid thinking: only type=enabled is allowed "
                      "for this model"}, "type": "error"}  # fmt: skip
    diagnosis = classify(400, json.dumps(body))
    assert (diagnosis.rule, diagnosis.provider, diagnosis.kind) == ("kimi_thinking_only_enabled", "kimi_anthropic",
                                                                    "unsupported")  # fmt: skip
    missing = {**body, "error": {**body["error"], "message": "thinking is enabled but reasoning_content is missing "
                                 "in assistant tool call message at index 2"}}  # fmt: skip
    assert classify(400, json.dumps(missing)).rule == "reasoning_content_missing"


def test_deepseeks_responses_refusal_is_diagnosed() -> None:
    from llm_reasoning_proxy.diagnosis.matching import classify

    body = {"error": {"message": "The `reasoning_text` in the thinking mode must be passed back to the API.",
                      "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}}  # fmt: skip
    diagnosis = classify(400, json.dumps(body))
    assert (diagnosis.rule, diagnosis.provider, diagnosis.field) == (
        "deepseek_reasoning_text_missing", "deepseek", "reasoning item")  # fmt: skip
