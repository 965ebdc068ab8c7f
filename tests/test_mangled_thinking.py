"""Thinking blocks a client sends back mangled, put back as issued: the text emptied with the signature kept
(Anthropic: "… cannot be modified"), the signature dropped or emptied ("thinking.signature: Field required"), in
the Messages format (every route) and in Bedrock Converse; as pure functions over parsed bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.diagnosis.explanation import advise
from llm_reasoning_proxy.diagnosis.matching import classify
from llm_reasoning_proxy.dialects.anthropic import REDACT_THINKING_BETA
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.headers import listed_values
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, canonical_arguments
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.anthropic.format import AnthropicMessages
from llm_reasoning_proxy.wire.bedrock_converse.format import BedrockConverse
from mitmproxy.http import Headers

MESSAGES = AnthropicMessages()
CONVERSE = BedrockConverse()
MODEL = "claude-sonnet-4-5"
CONTEXT = RepairContext(path="/v1/messages", model=MODEL)
REDACTING = RepairContext(path="/v1/messages", model=MODEL, betas=frozenset({"other-beta", REDACT_THINKING_BETA}))
THINKING = {
    "type": "thinking",
    "thinking": 'Call "list_directory" — ✓.\n\nThen answer.',
    "signature": "EqQBCkYIBxgCKkA=",
}
SECOND = {"type": "thinking", "thinking": "Then the second one.", "signature": "EqSecondBlock=="}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}


def record(*ids: str, blocks: list[dict], model: str | None = MODEL) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="anthropic_messages",
        fields={"thinking_blocks": blocks},
        tool_calls=[ToolCallRef(id=i, name="list_directory", arguments=canonical_arguments({"path": i})) for i in ids],
        response_id="msg_1",
        request_model=model,
    )


def cached_for(wire, doc: dict, records: list[ReasoningRecord], model: str | None = MODEL) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    everything = {key: r for r in records for key in r.keys()}
    return CacheView({k: everything[k] for k in wire.lookup_keys(doc, model) if k in everything}, model)


def use(call_id: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "list_directory", "input": {"path": call_id}}


def result(*ids: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "a.txt"} for i in ids]}


def conversation(*messages: dict) -> dict:
    return {
        "model": MODEL,
        "max_tokens": 1024,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "What is in deleteme?"}, *messages],
    }


def assistant(*blocks: dict) -> dict:
    return {"role": "assistant", "content": [copy.deepcopy(b) for b in blocks]}


def emptied(block: dict) -> dict:
    return {**block, "thinking": ""}


def unsigned(block: dict) -> dict:
    return {key: value for key, value in block.items() if key != "signature"}


# Messages: the text emptied, the signature kept ---------------------------------------------------------------------
def test_an_emptied_text_is_put_back_byte_for_byte_by_its_signature() -> None:
    doc = conversation(assistant(emptied(THINKING), use("toolu_a")), result("toolu_a"))
    (action,) = MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING])]), CONTEXT)
    assert json.dumps(doc["messages"][1]["content"][0], ensure_ascii=False) == json.dumps(THINKING, ensure_ascii=False)
    assert (action.kind, action.location, action.fields) == ("restored", "messages[1].content[0]", ["thinking"])
    assert action.describe() == "restored thinking on messages[1].content[0] (tool call toolu_a)"


def test_each_emptied_block_gets_the_text_its_signature_was_issued_with() -> None:
    # Interleaved: the second block sits after the first tool use; the signature, not the place, names the block.
    doc = conversation(
        assistant(emptied(THINKING), use("toolu_a"), emptied(SECOND), use("toolu_b")), result("toolu_a", "toolu_b")
    )
    cached = record("toolu_a", "toolu_b", blocks=[THINKING, SECOND])
    actions = MESSAGES.repair(doc, cached_for(MESSAGES, doc, [cached]), CONTEXT)
    assert doc["messages"][1]["content"] == [THINKING, use("toolu_a"), SECOND, use("toolu_b")]
    assert [a.location for a in actions] == ["messages[1].content[0]", "messages[1].content[2]"]


def test_emptied_blocks_of_earlier_turns_are_put_back_too() -> None:
    doc = conversation(
        assistant(emptied(THINKING), use("toolu_a")),
        result("toolu_a"),
        {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
        {"role": "user", "content": "And now?"},
        assistant(emptied(SECOND), use("toolu_b")),
        result("toolu_b"),
    )
    records = [record("toolu_a", blocks=[THINKING]), record("toolu_b", blocks=[SECOND])]
    actions = MESSAGES.repair(doc, cached_for(MESSAGES, doc, records), CONTEXT)
    assert [a.index for a in actions] == [1, 5]
    assert doc["messages"][1]["content"][0] == THINKING and doc["messages"][5]["content"][0] == SECOND


def test_an_empty_text_the_capture_holds_too_is_left_alone() -> None:
    """Claude 5 returns empty thinking unless asked for `display: "summarized"`: an empty text is no evidence."""
    issued_empty = emptied(THINKING)
    doc = conversation(assistant(issued_empty, use("toolu_a")), result("toolu_a"))
    before = jsoncodec.dumps(doc)
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[issued_empty])]), CONTEXT) == []
    assert jsoncodec.dumps(doc) == before


@pytest.mark.parametrize("where", ["header", "bedrock body"])
def test_redacted_thinking_asked_for_keeps_the_empty_text(where: str) -> None:
    doc = conversation(assistant(emptied(THINKING), use("toolu_a")), result("toolu_a"))
    context = REDACTING
    if where == "bedrock body":
        doc["anthropic_beta"] = ["interleaved-thinking-2025-05-14", REDACT_THINKING_BETA]
        context = CONTEXT
    before = jsoncodec.dumps(doc)
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING])]), context) == []
    assert jsoncodec.dumps(doc) == before


def test_a_signature_nothing_was_issued_with_is_left_alone() -> None:
    doc = conversation(assistant(emptied(dict(THINKING, signature="EqOther==")), use("toolu_a")), result("toolu_a"))
    before = jsoncodec.dumps(doc)
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING])]), CONTEXT) == []
    assert jsoncodec.dumps(doc) == before


def test_a_capture_for_another_model_is_not_used() -> None:
    doc = conversation(assistant(emptied(THINKING), use("toolu_a")), result("toolu_a"))
    cache = cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING], model="claude-opus-4-1")])
    assert MESSAGES.repair(doc, cache, CONTEXT) == []
    assert doc["messages"][1]["content"][0] == emptied(THINKING)


def test_lookup_keys_cover_messages_with_mangled_thinking() -> None:
    doc = conversation(
        assistant(THINKING, use("toolu_kept")),
        result("toolu_kept"),
        assistant(emptied(SECOND), use("toolu_emptied")),
        result("toolu_emptied"),
    )
    keys = MESSAGES.lookup_keys(doc, MODEL)
    assert "toolu_emptied" in keys and "toolu_kept" not in keys


def test_the_repair_is_idempotent() -> None:
    doc = conversation(assistant(emptied(THINKING), use("toolu_a")), result("toolu_a"))
    records = [record("toolu_a", blocks=[THINKING])]
    assert len(MESSAGES.repair(doc, cached_for(MESSAGES, doc, records), CONTEXT)) == 1
    once = jsoncodec.dumps(doc)
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, records), CONTEXT) == []
    assert jsoncodec.dumps(doc) == once


# Messages: the signature dropped ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "sent",
    [unsigned(THINKING), dict(THINKING, signature=""), dict(THINKING, signature=None), unsigned(emptied(THINKING))],
    ids=["absent", "empty", "null", "absent-and-emptied"],
)
def test_a_block_without_its_signature_gets_the_block_as_issued(sent: dict) -> None:
    doc = conversation(assistant(sent, use("toolu_a")), result("toolu_a"))
    (action,) = MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING])]), CONTEXT)
    assert doc["messages"][1]["content"] == [THINKING, use("toolu_a")]
    assert action.kind == "restored" and "signature" in action.fields and action.tool_call_id == "toolu_a"


def test_unsigned_blocks_are_matched_to_the_issued_ones_in_order() -> None:
    doc = conversation(assistant(unsigned(THINKING), REDACTED, unsigned(SECOND), use("toolu_a")), result("toolu_a"))
    cached = record("toolu_a", blocks=[THINKING, REDACTED, SECOND])
    actions = MESSAGES.repair(doc, cached_for(MESSAGES, doc, [cached]), CONTEXT)
    assert doc["messages"][1]["content"] == [THINKING, REDACTED, SECOND, use("toolu_a")]
    assert [(a.location, a.fields) for a in actions] == [
        ("messages[1].content[0]", ["signature"]),
        ("messages[1].content[2]", ["signature"]),
    ]


def test_an_unsigned_block_in_an_old_turn_of_a_resumed_session_is_signed_again() -> None:
    doc = conversation(
        assistant(unsigned(THINKING), use("toolu_a")),
        result("toolu_a"),
        {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
        {"role": "user", "content": "Go on."},
    )
    (action,) = MESSAGES.repair(doc, cached_for(MESSAGES, doc, [record("toolu_a", blocks=[THINKING])]), CONTEXT)
    assert action.index == 1 and doc["messages"][1]["content"][0] == THINKING


def test_unsigned_blocks_that_do_not_pair_with_the_issued_ones_are_left_alone() -> None:
    # The client merged two blocks into one: which signature it stands for is not known.
    merged = {"type": "thinking", "thinking": THINKING["thinking"] + SECOND["thinking"]}
    doc = conversation(assistant(merged, use("toolu_a")), result("toolu_a"))
    before = jsoncodec.dumps(doc)
    cached = record("toolu_a", blocks=[THINKING, SECOND])
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, [cached]), CONTEXT) == []
    assert jsoncodec.dumps(doc) == before


def test_a_capture_without_a_signature_gives_none() -> None:
    """DeepSeek's Anthropic-compatible stream sends no signature: its captured block has none to put back."""
    doc = conversation(assistant(unsigned(THINKING), use("toolu_a")), result("toolu_a"))
    before = jsoncodec.dumps(doc)
    cached = record("toolu_a", blocks=[unsigned(THINKING)])
    assert MESSAGES.repair(doc, cached_for(MESSAGES, doc, [cached]), CONTEXT) == []
    assert jsoncodec.dumps(doc) == before


def test_nothing_cached_leaves_the_request_as_sent() -> None:
    doc = conversation(assistant(unsigned(THINKING), use("toolu_a")), result("toolu_a"))
    before = jsoncodec.dumps(doc)
    assert MESSAGES.repair(doc, CacheView({}, MODEL), CONTEXT) == []
    assert jsoncodec.dumps(doc) == before


def test_the_check_finds_a_thinking_block_without_its_signature() -> None:
    doc = conversation(assistant(THINKING, use("toolu_a")), result("toolu_a"), assistant(unsigned(SECOND), use("t_b")))
    (violation,) = MESSAGES.check(doc, CONTEXT)
    assert (violation.rule, violation.location, violation.tool_call_id) == (
        "anthropic_signature_missing",
        "messages[3].content[0]",
        "t_b",
    )


# Converse ---------------------------------------------------------------------------------------------------------
FIXTURES = Path(__file__).parent / "fixtures" / "bedrock"
ROUNDTRIP = "pydanticai_claude37_converse_reasoning_tool_use_roundtrip"
CONVERSE_MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
CONVERSE_CONTEXT = RepairContext(path=f"/model/{CONVERSE_MODEL}/converse", model=CONVERSE_MODEL)


def converse_records() -> list[ReasoningRecord]:
    reader = CONVERSE.reader()
    reader.feed_document(json.loads((FIXTURES / f"{ROUNDTRIP}_0_response_200.json").read_text()))
    return [r.model_copy(update={"request_model": CONVERSE_MODEL}) for r in reader.records(complete=True)]


def converse_sent() -> dict:
    return json.loads((FIXTURES / f"{ROUNDTRIP}_1_request.json").read_text())


def reasoning_text(doc: dict) -> dict:
    return doc["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]


@pytest.mark.parametrize("mangle", ["emptied", "unsigned", "empty signature"])
def test_converse_reasoning_sent_mangled_is_put_back_as_bedrock_answered(mangle: str) -> None:
    """pydantic-ai's real round trip (Bedrock answered 200), with the reasoning text emptied or its signature
    dropped: the repair gives back the request Bedrock took, the block exactly as Bedrock answered it."""
    sent = converse_sent()
    mangled = copy.deepcopy(sent)
    text = reasoning_text(mangled)
    if mangle == "emptied":
        text["text"] = ""
    elif mangle == "unsigned":
        del text["signature"]
    else:
        text["signature"] = ""
    (action,) = CONVERSE.repair(
        mangled, cached_for(CONVERSE, mangled, converse_records(), CONVERSE_MODEL), CONVERSE_CONTEXT
    )
    assert mangled == sent
    answered = json.loads((FIXTURES / f"{ROUNDTRIP}_0_response_200.json").read_text())["output"]["message"]
    assert jsoncodec.dumps(mangled["messages"][1]["content"][0]) == jsoncodec.dumps(answered["content"][0])
    field = "text" if mangle == "emptied" else "signature"
    assert action.describe() == (
        f"restored reasoningContent.reasoningText.{field} on messages[1].content[0] "
        "(tool call tooluse_W9DaUFg4Tj2cRPpndqxWSg)"
    )


def test_converse_redacted_thinking_asked_for_keeps_the_empty_text() -> None:
    mangled = converse_sent()
    reasoning_text(mangled)["text"] = ""
    mangled["additionalModelRequestFields"]["anthropic_beta"] = [REDACT_THINKING_BETA]
    before = jsoncodec.dumps(mangled)
    cache = cached_for(CONVERSE, mangled, converse_records(), CONVERSE_MODEL)
    assert CONVERSE.repair(mangled, cache, CONVERSE_CONTEXT) == []
    assert jsoncodec.dumps(mangled) == before


# the betas and the diagnosis --------------------------------------------------------------------------------------
def test_the_betas_of_a_request_are_read_from_every_anthropic_beta_field() -> None:
    headers = Headers([(b"anthropic-beta", b"a-1, redact-thinking-2026-02-12"), (b"Anthropic-Beta", b"b-2")])
    assert listed_values(headers, b"anthropic-beta") == {"a-1", REDACT_THINKING_BETA, "b-2"}
    assert listed_values(Headers(), b"anthropic-beta") == frozenset()


MODIFIED = (
    "messages.3.content.9: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
    "modified. These blocks must remain as they were in the original response."
)


def test_the_modified_text_is_advised_about_emptied_thinking() -> None:
    body = json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": MODIFIED}})
    diagnosis = classify(400, body.encode())
    assert (diagnosis.rule, diagnosis.index, diagnosis.block) == ("anthropic_thinking_modified", 3, 9)
    advice = advise(diagnosis, cache_had=None, repaired_here=False, healed=0, repair_on=True)
    assert "emptied" in advice and REDACT_THINKING_BETA in advice


@pytest.mark.parametrize(
    "body",
    [
        {
            "type": "error",
            "error": {
                "type": "ValidationException",
                "message": "The model returned the following errors: messages.369.content.0.thinking.signature: "
                "Field required",
            },
        },
        {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "messages.1.content.0.thinking.signature: Field required",
            },
        },
    ],
    ids=["bedrock", "anthropic"],
)
def test_the_field_required_texts_say_the_signature_is_missing(body: dict) -> None:
    diagnosis = classify(400, json.dumps(body).encode())
    assert (diagnosis.rule, diagnosis.kind, diagnosis.block) == ("anthropic_signature_missing", "missing", 0)
    assert "stored without it" in diagnosis.summary
    advice = advise(diagnosis, cache_had=False, repaired_here=False, healed=0, repair_on=True)
    assert "never saw the answer" in advice


def test_deepseek_blocks_without_a_signature_are_not_claude_s_problem() -> None:
    """DeepSeek's Anthropic-compatible stream sends no signature, and DeepSeek takes its blocks back without one."""
    doc = conversation(assistant(unsigned(THINKING), use("call_a")), result("call_a"))
    doc["model"] = "deepseek-chat"
    context = RepairContext(path="/anthropic/v1/messages", model="deepseek-chat", host="api.deepseek.com")
    assert [v.rule for v in MESSAGES.check(doc, context)] == []
