"""What of a captured answer the cache may keep: bounded in bytes, and no credential in what it keeps."""

from __future__ import annotations

import json

from llm_reasoning_proxy.answer.storable import storable
from llm_reasoning_proxy.answer.tap import read_recorded
from llm_reasoning_proxy.shared.limits import MAX_VALUE_BYTES
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import by_name

from tests.support.planted import every_shape

KEY, MARKER = every_shape("storable")["openai"]
CHAT = by_name("chat_completions")
RESPONSES = by_name("openai_responses")


def record(fields: dict, **call_fields: object) -> ReasoningRecord:
    call = ToolCallRef(id="call_1", name="f", arguments="{}", fields=call_fields)
    return ReasoningRecord(wire_format="chat_completions", fields=fields, tool_calls=[call])


def test_a_credential_anywhere_in_a_signed_value_keeps_the_answer_out_of_the_cache() -> None:
    details = [{"type": "reasoning.text", "text": f"env:\n{KEY}", "signature": "sig", "index": 0}]
    for candidate in (
        record({"reasoning_details": details}),
        record({"reasoning_opaque": "x", "reasoning_text": f"the key is {KEY}"}),
        record({}, extra_content={"google": {"thought_signature": "sig", "note": f"a\n{KEY}"}}),
    ):
        kept, note = storable(candidate, CHAT)
        assert kept is None and "holds a credential; not cached" in note


def test_a_credential_in_unsigned_text_is_stored_masked() -> None:
    kept, note = storable(record({"reasoning_content": f"I read {KEY} from .env"}), CHAT)
    assert kept is not None and MARKER not in json.dumps(kept.model_dump()) and "stored masked" in note


def test_a_model_reasoning_about_code_is_still_cached() -> None:
    thinking = "self.api_key = api_key\nif password is None: raise ValueError('client_secret: missing')"
    kept, note = storable(record({"reasoning_text": thinking, "reasoning_opaque": "x"}), CHAT)
    assert kept is not None and kept.fields["reasoning_text"] == thinking and note is None


def test_a_value_over_its_bound_is_not_stored() -> None:
    kept, note = storable(record({"reasoning_opaque": "x" * (MAX_VALUE_BYTES + 1)}), CHAT)
    assert kept is None and "over the 4.0 MiB limit per stored value" in note


def test_state_on_tool_calls_counts_against_the_answers_budget() -> None:
    """40 calls each carrying 1 MiB of extra_content: the reader stops holding at 16 MiB."""
    chunks = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for i in range(40):
        call = {"index": i, "id": f"call_{i}", "extra_content": {"pad": "p" * (1 << 20)}, "function": {"name": "f"}}
        chunks.append({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    reader = CHAT.reader()
    read_recorded(reader, b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks), sse=True)
    reader.records(complete=True)
    assert reader.budget.over is not None and reader.budget.used <= 16 << 20
