"""xAI's Responses API: its real captures read by the Responses format, its dialect, and the summary it wants back."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy.dialects.xai import REASONING_SUMMARY_MISSING
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.responses.format import Responses

from tests.support import capture

FIXTURES = Path(__file__).parent / "fixtures" / "xai"
STREAM = FIXTURES / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt"
FROM_STREAM = FIXTURES / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_response_from_stream.json"
STORED = FIXTURES / "vercel_grok43_reasoning_summary_store_true_response.json"
FORMAT = Responses()
MODEL = "grok-4"


def payloads() -> list[dict[str, Any]]:
    return [json.loads(line) for line in STREAM.read_text().splitlines() if line.strip()]


def as_sse(*, named: bool) -> bytes:
    """The captured payloads framed as SSE (the capture keeps no framing): `data:` lines, with `event:` lines or
    without."""
    framed = []
    for line, doc in zip(STREAM.read_text().splitlines(), payloads()):
        framed.append((f"event: {doc['type']}\n" if named else "") + f"data: {line}\n\n")
    return "".join(framed).encode()


# --- what the captures show ------------------------------------------------------------------------


def test_the_capture_has_no_encrypted_content_when_added_and_the_same_bytes_when_done_and_completed() -> None:
    docs = payloads()
    (added,) = [d["item"] for d in docs if d["type"] == "response.output_item.added" and d["output_index"] == 0]
    (done,) = [d["item"] for d in docs if d["type"] == "response.output_item.done" and d["output_index"] == 0]
    assert "encrypted_content" not in added and added["summary"] == []
    assert docs[-1]["response"]["output"][0] == done
    assert docs[0]["response"]["id"] == "0b824fe9-3250-2588-0bbf-0810402fc822" and done["id"].startswith("rs_0b824fe9")


@pytest.mark.parametrize("named", [False, True], ids=["data-only", "named-events"])
@pytest.mark.parametrize("size", [None, 1, 7, "events"])
def test_the_captured_stream_gives_its_reasoning_item_and_message_whatever_the_chunking(
    named: bool, size: int | str | None
) -> None:
    (record,) = capture.tap_records(FORMAT, as_sse(named=named), sse=True, size=size)
    response = json.loads(FROM_STREAM.read_text())
    assert record.fields == response["output"][0] and record.response_id == response["id"]
    assert record.extra_keys == [response["output"][0]["id"], response["output"][1]["id"]] and record.tool_calls == []


@pytest.mark.parametrize("path", [FROM_STREAM, STORED], ids=lambda p: p.name)
def test_a_whole_answer_gives_its_reasoning_item(path: Path) -> None:
    response = json.loads(path.read_text())
    (record,) = capture.tap_records(FORMAT, path.read_bytes(), sse=False, size=5)
    assert record.fields == response["output"][0] and record.response_model == response["model"]
    assert ("encrypted_content" in record.fields) is (response["store"] is False)


# --- who xAI is ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "model", "served"),
    [
        ("api.x.ai", "grok-4", True),
        ("api.x.ai", "some-future-model", True),
        ("127.0.0.1", "grok-code-fast-1", True),
        ("api.openai.com", "gpt-5", False),
        ("openrouter.ai", "x-ai/grok-4", False),  # OpenRouter's, in OpenRouter's format
    ],
)
def test_xai_serves_its_host_and_grok_models(host: str, model: str, served: bool) -> None:
    serving = dialects.serving(host, "/v1/responses", model)
    assert (serving is not None and serving.name == "xai") is served
    assert dialects.reasoning_summary_required(host, "/v1/responses", model) is served


def test_grok_on_copilot_is_copilot_s() -> None:
    assert dialects.serving("api.githubcopilot.com", "/chat/completions", "grok-code-fast-1").name == "copilot"


# --- the summary that goes with encrypted_content --------------------------------------------------

QUESTION = {"role": "user", "content": "What is in deleteme?"}
REASONING = {
    "id": "rs_5138abcf-4c4e-b0ab-7e0b-f4c81b98f455",
    "summary": [{"text": "I should list it.", "type": "summary_text"}],
    "type": "reasoning",
    "status": "completed",
    "encrypted_content": "P0aSa0/yrz+mjndXaAUM",
}
CALL = {
    "call_id": "call_93562515",
    "name": "list_directory",
    "arguments": '{"path":"deleteme"}',
    "type": "function_call",
    "id": "fc_5138abcf-4c4e-b0ab-7e0b-f4c81b98f455_0",
    "status": "completed",
}
OUTPUT = {"type": "function_call_output", "call_id": CALL["call_id"], "output": "a.txt"}
CONTEXT = RepairContext(path="/v1/responses", model=MODEL, host="api.x.ai")


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


def record(fields: dict[str, Any] = REASONING) -> ReasoningRecord:
    call = ToolCallRef(id=CALL["call_id"], aliases=[CALL["id"]], name=CALL["name"], arguments=CALL["arguments"])
    return ReasoningRecord(
        wire_format="openai_responses", fields=fields, tool_calls=[call], response_id="5138abcf", request_model=MODEL
    )


def repair(doc: dict[str, Any], cached: ReasoningRecord) -> list[str]:
    stored = dict.fromkeys(cached.keys(), cached)
    cache = CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, MODEL) if k in stored}, MODEL)
    return [action.describe() for action in FORMAT.repair(doc, cache, CONTEXT)]


def test_a_summary_left_out_is_put_back_as_issued_and_the_rest_stays() -> None:
    doc = {"model": MODEL, "input": [QUESTION, without(REASONING, "summary"), CALL, OUTPUT], "store": False}
    assert repair(doc, record()) == ["restored summary on input[1] (tool call call_93562515)"]
    assert doc["input"] == [QUESTION, {**without(REASONING, "summary"), "summary": REASONING["summary"]}, CALL, OUTPUT]
    assert repair(doc, record()) == []  # idempotent


@pytest.mark.parametrize(
    "sent",
    [
        {**REASONING, "summary": []},  # an empty summary is a summary: xAI takes it (chenyme/grok2api PR #689)
        without(REASONING, "encrypted_content"),  # nothing for the summary to go with
        without(without(REASONING, "summary"), "id"),  # an item without its id is not known
    ],
    ids=["empty-summary", "no-encrypted-content", "no-id"],
)
def test_nothing_is_added_to_an_item_that_needs_no_summary_or_cannot_be_told(sent: dict[str, Any]) -> None:
    doc = {"model": MODEL, "input": [QUESTION, sent, CALL, OUTPUT]}
    before = copy.deepcopy(doc)
    assert repair(doc, record()) == []
    assert doc == before


def test_a_summary_is_taken_only_from_the_reasoning_item_it_belongs_to() -> None:
    other = {**REASONING, "id": "rs_00000000-0000-0000-0000-000000000000"}
    doc = {"model": MODEL, "input": [QUESTION, without(other, "summary"), CALL, OUTPUT]}
    assert not [action for action in repair(doc, record()) if action.startswith("restored summary")]
    assert "summary" not in doc["input"][1]


def test_a_record_without_a_summary_gives_none() -> None:
    doc = {"model": MODEL, "input": [QUESTION, without(REASONING, "summary"), CALL, OUTPUT]}
    assert repair(doc, record(without(REASONING, "summary"))) == []
    assert "summary" not in doc["input"][1]


@pytest.mark.slow
@pytest.mark.parametrize(("host", "model", "found"), [("api.x.ai", MODEL, True), ("api.openai.com", "gpt-5", False)])
def test_the_check_names_a_missing_summary_where_xai_serves(host: str, model: str, found: bool) -> None:
    doc = {"model": model, "input": [QUESTION, without(REASONING, "summary"), CALL, OUTPUT]}
    violations = FORMAT.check(doc, RepairContext(path="/v1/responses", model=model, host=host))
    expected = [(REASONING_SUMMARY_MISSING, "input[1]")] if found else []
    assert [(v.rule, v.location) for v in violations] == expected
