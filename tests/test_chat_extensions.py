"""OpenRouter reasoning_details, Gemini's OpenAI-compatible extra_content, LiteLLM ids, fallback and model binding."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, display_call_id, split_call_id
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.chat_completions.fields import DetailAssembler
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions

from tests.test_capture_fixtures import tap_records

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT = ChatCompletions()
CONTEXT = RepairContext(path="/v1/chat/completions", model=None)


def view(doc: dict, records: list[ReasoningRecord], model: str | None = None) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def sse_details(path: Path) -> list[dict]:
    fragments = []
    for line in path.read_text().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                fragments += choice.get("delta", {}).get("reasoning_details") or []
    return fragments


# --- OpenRouter -------------------------------------------------------------------------------


def test_claude_text_fragments_and_late_signature_merge_into_one_entry() -> None:
    path = FIXTURES / "openrouter/pydanticai_claude45_stream_reasoning_text_signature_0_response_200.sse"
    fragments = sse_details(path)
    (record,) = tap_records(path.read_bytes(), sse=True, size=7)
    (entry,) = record.fields["reasoning_details"]
    assert entry["type"] == "reasoning.text" and entry["index"] == 0 and entry["format"] == "anthropic-claude-v1"
    assert entry["text"] == "".join(f.get("text", "") for f in fragments)
    assert entry["signature"] == next(f["signature"] for f in fragments if f.get("signature"))
    assert record.tool_calls == []  # logged, but nothing to key it by


def test_summary_and_encrypted_sharing_index_zero_stay_apart() -> None:
    path = FIXTURES / "openrouter/codecompanion_gpt54mini_tool_call_reasoning_stream.sse"
    fragments = sse_details(path)
    (record,) = tap_records(path.read_bytes(), sse=True, size=7)
    summary, encrypted = record.fields["reasoning_details"]
    assert summary["summary"] == "".join(f["summary"] for f in fragments if f["type"] == "reasoning.summary")
    assert encrypted == next(f for f in fragments if f["type"] == "reasoning.encrypted")
    assert encrypted["id"].startswith("rs_")
    assert record.tool_call_ids == ["call_yqZoquE7i7crGNV4S4uZo902"]


@pytest.mark.parametrize(
    "name",
    [
        "codecompanion_gpt54mini_tool_call_reasoning_response.json",
        "openrouter_rs_gemini3flash_tool_call_reasoning_encrypted_response.json",
    ],
)
def test_non_streamed_details_are_kept_as_sent(name: str) -> None:
    raw = (FIXTURES / "openrouter" / name).read_bytes()
    message = json.loads(raw)["choices"][0]["message"]
    (record,) = tap_records(raw, sse=False, size=None)
    assert record.fields["reasoning_details"] == message["reasoning_details"]
    assert record.tool_call_ids == [c["id"] for c in message["tool_calls"]]


def test_details_are_put_back_unmodified_and_empty_counts_as_missing() -> None:
    raw = (FIXTURES / "openrouter/openrouter_rs_gemini3flash_tool_call_reasoning_encrypted_response.json").read_bytes()
    (record,) = tap_records(raw, sse=False, size=None)
    call = {"id": "tool_123", "type": "function", "function": {"name": "test", "arguments": "{}"}}
    doc = {
        "model": "google/gemini-3-flash-preview",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "reasoning_details": [], "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "tool_123", "content": "ok"},
        ],
    }
    actions = FORMAT.repair(doc, view(doc, [record]), CONTEXT)
    assert doc["messages"][1]["reasoning_details"] == json.loads(raw)["choices"][0]["message"]["reasoning_details"]
    assert [a.describe() for a in actions] == ["restored reasoning_details on messages[1] (tool call tool_123)"]


def test_detail_fragments_are_joined_per_type_and_index() -> None:
    details = DetailAssembler()
    details.add([{"type": "reasoning.text", "text": "a", "signature": "", "index": 0}])
    details.add([{"type": "reasoning.text", "text": "b", "index": 0}, "junk"])
    details.add([{"type": "reasoning.encrypted", "data": "D", "id": "x", "index": 0}])
    details.add([{"type": "reasoning.text", "signature": "SIG", "index": 0}])
    assert details.entries() == [
        {"type": "reasoning.text", "text": "ab", "signature": "SIG", "index": 0},
        {"type": "reasoning.encrypted", "data": "D", "id": "x", "index": 0},
    ]


# --- Gemini OpenAI-compatible ------------------------------------------------------------------


def test_old_message_level_extra_content_comes_back_for_a_rewritten_id() -> None:
    """The server gave the call an empty id; the client invented its own and dropped the signature."""
    folder = FIXTURES / "gemini-openai-compat"
    response = (
        folder / "pydanticai_gemini25pro_openai_compat_2025_message_level_extra_content_0_response_200.json"
    ).read_bytes()
    request = json.loads(
        (folder / "pydanticai_gemini25pro_openai_compat_2025_message_level_extra_content_1_request.json").read_text()
    )
    (record,) = tap_records(response, sse=False, size=None)
    model = request["model"]
    record = record.model_copy(update={"request_model": model})
    actions = FORMAT.repair(request, view(request, [record], model), CONTEXT)
    sent = json.loads(response)["choices"][0]["message"]
    assistant = request["messages"][1]
    assert assistant["extra_content"] == sent["extra_content"]
    assert assistant["thought_signature"] == sent["thought_signature"]
    assert assistant["tool_calls"][0]["id"] == "pyd_ai_cee885c699414386a7e14b7ec43cadbc"
    (action,) = actions
    assert action.via == "fingerprint"
    assert action.describe() == (
        "restored extra_content, thought_signature on messages[1] "
        "(tool call pyd_ai_cee885c699414386a7e14b7ec43cadbc, matched by name and arguments)"
    )


def gemini3_turn() -> dict:
    return {
        "id": "r1",
        "model": "gemini-3-pro-preview",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "extra_content": {"google": {"thought_signature": "SIG-A"}},
                            "id": "function-call-1",
                            "type": "function",
                            "function": {"name": "get_temp", "arguments": '{"location":"Paris"}'},
                        },
                        {
                            "id": "function-call-2",
                            "type": "function",
                            "function": {"name": "get_temp", "arguments": '{"location":"London"}'},
                        },
                    ],
                },
            }
        ],
    }


def test_per_call_signature_goes_back_on_its_own_call_only() -> None:
    (record,) = tap_records(json.dumps(gemini3_turn()).encode(), sse=False, size=None)
    calls = copy.deepcopy(gemini3_turn()["choices"][0]["message"]["tool_calls"])
    del calls[0]["extra_content"]
    doc = {
        "model": "gemini-3-pro-preview",
        "messages": [{"role": "user", "content": "weather?"}, {"role": "assistant", "tool_calls": calls}],
    }
    actions = FORMAT.repair(doc, view(doc, [record]), CONTEXT)
    sent = doc["messages"][1]["tool_calls"]
    assert sent[0]["extra_content"] == {"google": {"thought_signature": "SIG-A"}}
    assert "extra_content" not in sent[1]
    assert [a.location for a in actions] == ["messages[1].tool_calls[0]"]


def test_streamed_per_call_extra_content() -> None:
    call = gemini3_turn()["choices"][0]["message"]["tool_calls"][0]
    chunks = [
        {"id": "r1", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{**call, "index": 0}]}}]},
        {"id": "r1", "choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "tool_calls"}]},
    ]
    raw = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
    (record,) = tap_records(raw, sse=True, size=3)
    assert record.tool_calls[0].fields == {"extra_content": {"google": {"thought_signature": "SIG-A"}}}


# --- LiteLLM ----------------------------------------------------------------------------------

FULL_ID = "call_00d09e4f03654b668abe3e361f1e__thought__CsoDAePx/140cmKGCh+sig=="
SHORT_ID = "call_00d09e4f03654b668abe3e361f1e"


def litellm_record() -> ReasoningRecord:
    turn = {
        "id": "r",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "type": "function",
                            "id": FULL_ID,
                            "provider_specific_fields": {"thought_signature": "CsoDAePx/140cmKGCh+sig=="},
                            "function": {"name": "calculator", "arguments": '{"x": 1}'},
                        }
                    ],
                },
            }
        ],
    }
    (record,) = tap_records(json.dumps(turn).encode(), sse=False, size=None)
    return record


def litellm_history(sent_id: str, with_fields: bool = False) -> dict:
    call = {"id": sent_id, "type": "function", "function": {"name": "calculator", "arguments": '{"x": 1}'}}
    if with_fields:
        call["provider_specific_fields"] = {"thought_signature": "theirs"}
    return {
        "model": "gemini-3-pro-preview",
        "messages": [
            {"role": "user", "content": "add"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": sent_id, "content": "2"},
        ],
    }


def test_litellm_ids_are_keyed_by_their_short_form() -> None:
    record = litellm_record()
    assert record.tool_calls[0].aliases == [SHORT_ID]
    assert SHORT_ID in record.keys() and FULL_ID in record.keys()


@pytest.mark.parametrize("sent_id", [SHORT_ID, FULL_ID[:50]], ids=["stripped", "truncated"])
def test_stripped_or_truncated_id_is_restored_on_the_call_and_its_result(sent_id: str) -> None:
    doc = litellm_history(sent_id)
    actions = FORMAT.repair(doc, view(doc, [litellm_record()]), CONTEXT)
    assert doc["messages"][1]["tool_calls"][0]["id"] == FULL_ID
    assert doc["messages"][2]["tool_call_id"] == FULL_ID
    assert doc["messages"][1]["tool_calls"][0]["provider_specific_fields"] == {
        "thought_signature": "CsoDAePx/140cmKGCh+sig=="
    }
    assert {a.kind for a in actions} == {"restored", "id_restored"}
    assert FORMAT.repair(doc, view(doc, [litellm_record()]), CONTEXT) == []  # idempotent


def test_full_litellm_id_and_client_fields_are_left_alone() -> None:
    doc = litellm_history(FULL_ID, with_fields=True)
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, view(doc, [litellm_record()]), CONTEXT) == []
    assert doc == before


# --- fallback and model binding ---------------------------------------------------------------


def copilot_record(model: str | None) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="chat_completions",
        fields={"reasoning_opaque": "OPQ"},
        request_model=model,
        tool_calls=[ToolCallRef(id="call_orig", name="ls", arguments='{"path": "."}')],
    )


def copilot_history(call_id: str, model: str, arguments: str = '{"path":"."}') -> dict:
    call = {"id": call_id, "type": "function", "function": {"name": "ls", "arguments": arguments}}
    return {
        "model": model,
        "messages": [{"role": "user", "content": "ls"}, {"role": "assistant", "tool_calls": [call]}],
    }


def test_rewritten_id_falls_back_to_name_and_canonical_arguments() -> None:
    doc = copilot_history("toolu_rewritten", "gemini-3-pro-preview")
    cache = view(doc, [copilot_record("gemini-3-pro-preview")], "gemini-3-pro-preview")
    (action,) = FORMAT.repair(doc, cache, CONTEXT)
    assert doc["messages"][1]["reasoning_opaque"] == "OPQ" and action.via == "fingerprint"


def test_fallback_needs_the_same_arguments() -> None:
    doc = copilot_history("toolu_rewritten", "gemini-3-pro-preview", arguments='{"path":"/etc"}')
    assert (
        FORMAT.repair(doc, view(doc, [copilot_record("gemini-3-pro-preview")], "gemini-3-pro-preview"), CONTEXT) == []
    )


@pytest.mark.parametrize("call_id", ["call_orig", "toolu_rewritten"])
def test_reasoning_from_another_model_is_never_replayed(call_id: str) -> None:
    doc = copilot_history(call_id, "gemini-3-flash-preview")
    cache = view(doc, [copilot_record("gemini-3-pro-preview")], "gemini-3-flash-preview")
    assert FORMAT.repair(doc, cache, CONTEXT) == []
    assert "reasoning_opaque" not in doc["messages"][1]
    if call_id == "call_orig":
        assert cache.mismatched == {"call_orig": "gemini-3-pro-preview"}


def test_ids_that_carry_a_signature_are_shortened_for_logs() -> None:
    assert split_call_id(FULL_ID) == (SHORT_ID, "CsoDAePx/140cmKGCh+sig==")
    assert split_call_id("call_plain") == ("call_plain", None)
    assert display_call_id(FULL_ID) == f"{SHORT_ID}__thought__<24-char signature>"
    assert display_call_id("call_plain") == "call_plain"
