"""Bedrock Converse: capture over the real captures (JSON and event-stream frames), repair and checks as pure functions
over parsed bodies, and the Bedrock routes (Converse and InvokeModel) told apart by path."""

from __future__ import annotations

import copy
import json
import tracemalloc
from pathlib import Path

import pytest
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.answer.tap import read_recorded
from llm_reasoning_proxy.diagnosis import classify
from llm_reasoning_proxy.dialects.bedrock import bedrock_route
from llm_reasoning_proxy.shared.limits import MAX_CONTENT_BLOCKS
from llm_reasoning_proxy.shared.records import ReasoningRecord
from llm_reasoning_proxy.wire import CacheView, RepairContext
from llm_reasoning_proxy.wire.bedrock_converse.format import BedrockConverse
from llm_reasoning_proxy.wire.event_stream import event_frame

from tests.support import capture
from tests.support.aws_frames import by_hand

FIXTURES = Path(__file__).parent / "fixtures" / "bedrock"
FORMAT = BedrockConverse()
FORMAT_REGISTERED = formats.by_name("bedrock_converse")
MODEL = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
PATH = "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
CONTEXT = RepairContext(path=PATH, model=MODEL)
ROUNDTRIP = "pydanticai_claude37_converse_reasoning_tool_use_roundtrip"
REDACTED = "pydanticai_claude37_converse_redacted_reasoning_roundtrip"


def load(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def document_records(doc: dict) -> list[ReasoningRecord]:
    reader = FORMAT.reader()
    reader.feed_document(doc)
    return [r.model_copy(update={"request_model": MODEL}) for r in reader.records(complete=True)]


def cache_of(records: list[ReasoningRecord]) -> CacheView:
    return CacheView({key: record for record in records for key in record.keys()}, MODEL)


def without_reasoning(request: dict) -> dict:
    """The request as a client that drops reasoning blocks sends it."""
    dropped = copy.deepcopy(request)
    for message in dropped["messages"]:
        message["content"] = [b for b in message["content"] if "reasoningContent" not in b]
    return dropped


# capture -------------------------------------------------------------------------------------
def test_the_real_answer_gives_its_reasoning_block_and_tool_use() -> None:
    answer = load(f"{ROUNDTRIP}_0_response_200.json")
    (record,) = document_records(answer)
    content = answer["output"]["message"]["content"]
    assert record.fields["reasoning_blocks"] == [content[0]]
    assert record.fields["reasoning_text"] == content[0]["reasoningContent"]["reasoningText"]["text"]
    assert "reasoning_layout" not in record.fields
    assert [(c.id, c.name) for c in record.tool_calls] == [("tooluse_W9DaUFg4Tj2cRPpndqxWSg", "get_user_country")]


def test_the_real_redacted_answer_keeps_its_blob_as_sent() -> None:
    answer = load(f"{REDACTED}_0_response_200.json")
    (record,) = document_records(answer)
    assert record.fields["reasoning_blocks"] == [answer["output"]["message"]["content"][0]]
    assert "reasoning_text" not in record.fields and record.tool_calls == []


def frames_by_hand(raw: bytes) -> list[tuple[str, dict]]:
    return [(headers[":event-type"], json.loads(payload)) for headers, payload in by_hand(raw)]


def oracle(raw: bytes) -> list[dict]:
    """The reasoning blocks of a ConverseStream, joined the simplest way."""
    blocks: dict[int, dict] = {}
    for kind, doc in frames_by_hand(raw):
        reasoning = doc.get("delta", {}).get("reasoningContent") if kind == "contentBlockDelta" else None
        if reasoning is None:
            continue
        block = blocks.setdefault(doc["contentBlockIndex"], {})
        for key, piece in reasoning.items():
            block[key] = block.get(key, "") + piece
    return [
        {"reasoningContent": {"redactedContent": b["redactedContent"]}}
        if "redactedContent" in b
        else {"reasoningContent": {"reasoningText": {"text": b["text"], "signature": b["signature"]}}}
        for _, b in sorted(blocks.items())
    ]


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.eventstream")), ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7, 100])
def test_the_real_streams_give_their_blocks_in_any_chunking(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    (record,) = capture.tap_records(FORMAT, raw, sse=False, aws_frames=True, size=size)
    assert record.fields["reasoning_blocks"] == oracle(raw)
    assert record.tool_calls == [] and record.keys() == []  # answers without tool calls are logged, not cached


def stream(*events: tuple[str, dict]) -> bytes:
    return b"".join(event_frame(kind, json.dumps({**doc, "p": "abc"}).encode()) for kind, doc in events)


SIGNATURE = "Eu0CCkgIBxAB" + "A" * 40
TOOL_STREAM = stream(
    ("messageStart", {"role": "assistant"}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "List "}}}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "it."}}}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": SIGNATURE}}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "I will look."}}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
    ("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "ls"}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"path":'}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": ' "."}'}}}),
    ("contentBlockStop", {"contentBlockIndex": 2}),
    ("messageStop", {"stopReason": "tool_use"}),
    ("metadata", {"usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}, "metrics": {"latencyMs": 5}}),
)


@pytest.mark.parametrize("size", [None, 1, 13])
def test_a_streamed_tool_use_is_linked_to_its_reasoning(size: int | None) -> None:
    (record,) = capture.tap_records(FORMAT, TOOL_STREAM, sse=False, aws_frames=True, size=size)
    block = {"reasoningContent": {"reasoningText": {"text": "List it.", "signature": SIGNATURE}}}
    assert record.fields == {"reasoning_blocks": [block], "reasoning_text": "List it."}
    (call,) = record.tool_calls
    assert (call.id, call.name) == ("tooluse_1", "ls")
    streamed = document_records(
        {"output": {"message": {"content": [block, {"text": "I will look."}, {"toolUse": {**call_doc()}}]}}}
    )
    assert call.arguments_sha256 == streamed[0].tool_calls[0].arguments_sha256  # streamed input reads as the JSON one


def call_doc() -> dict:
    return {"toolUseId": "tooluse_1", "name": "ls", "input": {"path": "."}}


def test_a_stream_cut_before_the_reasoning_stopped_keeps_no_reasoning() -> None:
    cut = TOOL_STREAM[: TOOL_STREAM.index(b"contentBlockStop")]
    assert capture.tap_records(FORMAT, cut, sse=False, aws_frames=True, complete=False) == []


# repair --------------------------------------------------------------------------------------
def test_the_real_round_trip_is_rebuilt_from_the_first_answer() -> None:
    """pydantic-ai replayed the reasoning block before the toolUse and Bedrock answered 200: a client that dropped
    it gets exactly that request back."""
    sent = load(f"{ROUNDTRIP}_1_request.json")
    records = document_records(load(f"{ROUNDTRIP}_0_response_200.json"))
    dropped = without_reasoning(sent)
    (violation,) = FORMAT.check(dropped, CONTEXT)
    assert (violation.rule, violation.location) == ("anthropic_thinking_expected", "messages[1].content[0]")
    assert "found `text`" in violation.message and violation.tool_call_id == "tooluse_W9DaUFg4Tj2cRPpndqxWSg"
    (action,) = FORMAT.repair(dropped, cache_of(records), CONTEXT)
    assert dropped == sent
    assert action.describe() == (
        "inserted reasoningContent.reasoningText before messages[1].content[1] (tool call tooluse_W9DaUFg4Tj2cRPpndqxWSg)"
    )
    assert FORMAT.check(dropped, CONTEXT) == [] and FORMAT.repair(dropped, cache_of(records), CONTEXT) == []


@pytest.mark.parametrize("name", [f"{ROUNDTRIP}_1_request.json", f"{REDACTED}_1_request.json"])
def test_requests_bedrock_accepted_break_no_rule(name: str) -> None:
    assert FORMAT.check(load(name), CONTEXT) == []


def test_a_reasoning_text_without_its_signature_is_found() -> None:
    sent = load(f"{ROUNDTRIP}_1_request.json")
    del sent["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"]
    (violation,) = FORMAT.check(sent, CONTEXT)
    assert (violation.rule, violation.location) == ("anthropic_signature_missing", "messages[1].content[0]")


def test_without_thinking_nothing_is_checked_or_repaired() -> None:
    sent = without_reasoning(load(f"{ROUNDTRIP}_1_request.json"))
    del sent["additionalModelRequestFields"]
    records = document_records(load(f"{ROUNDTRIP}_0_response_200.json"))
    assert FORMAT.check(sent, CONTEXT) == [] and FORMAT.repair(sent, cache_of(records), CONTEXT) == []
    assert FORMAT.lookup_keys(sent, MODEL) == []


def test_interleaved_reasoning_goes_back_to_its_places() -> None:
    first = {"reasoningContent": {"reasoningText": {"text": "a", "signature": "S1" * 20}}}
    second = {"reasoningContent": {"reasoningText": {"text": "b", "signature": "S2" * 20}}}
    one = {"toolUse": {"toolUseId": "tooluse_a", "name": "ls", "input": {}}}
    two = {"toolUse": {"toolUseId": "tooluse_b", "name": "cat", "input": {"f": 1}}}
    (record,) = document_records({"output": {"message": {"content": [first, one, second, two]}}})
    assert record.fields["reasoning_layout"] == ["reasoningContent", "toolUse", "reasoningContent", "toolUse"]
    request = {
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
        "messages": [
            {"role": "user", "content": [{"text": "go"}]},
            {"role": "assistant", "content": [copy.deepcopy(one), copy.deepcopy(two)]},
        ],
    }
    FORMAT.repair(request, cache_of([record]), CONTEXT)
    assert request["messages"][1]["content"] == [first, one, second, two]


def test_text_blocks_between_reasoning_blocks_keep_their_places() -> None:
    first = {"reasoningContent": {"reasoningText": {"text": "a", "signature": "S1" * 20}}}
    use = {"toolUse": {"toolUseId": "tooluse_a", "name": "ls", "input": {}}}
    (record,) = document_records({"output": {"message": {"content": [{"text": "x"}, first, {"text": "y"}, {}, use]}}})
    assert record.fields["reasoning_layout"] == ["text", "reasoningContent", "text", "text", "toolUse"]


def indexed_stream(index: int) -> bytes:
    """A reasoning block at index 1 and a tool use at `index`, in a stream whose other blocks are text."""
    return stream(
        ("messageStart", {"role": "assistant"}),
        ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"reasoningContent": {"text": "a", "signature": "s"}}}),
        ("contentBlockStop", {"contentBlockIndex": 1}),
        ("contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": "tu", "name": "ls"}}}),
        ("contentBlockStop", {"contentBlockIndex": index}),
        ("messageStop", {"stopReason": "tool_use"}),
    )


def test_a_content_block_index_up_to_the_bound_is_laid_out() -> None:
    reader = FORMAT.reader()
    read_recorded(reader, indexed_stream(MAX_CONTENT_BLOCKS - 1), sse=False, aws_frames=True)
    (record,) = reader.records(complete=True)
    kinds = ["text", "reasoningContent", *["text"] * (MAX_CONTENT_BLOCKS - 3), "toolUse"]
    assert record.fields["reasoning_layout"] == kinds and reader.budget.over is None


@pytest.mark.parametrize("index", [MAX_CONTENT_BLOCKS, 2 * 10**7, 10**18, -1])
def test_a_content_block_index_past_the_bound_is_refused_without_allocating(index: int) -> None:
    """A stream names its block indexes: one far past any real answer's costs nothing, and the answer is read to its
    end but not cached."""
    reader = FORMAT.reader()
    tracemalloc.start()
    try:
        read_recorded(reader, indexed_stream(index), sse=False, aws_frames=True)
        records = reader.records(complete=True)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024, f"{peak} bytes"
    assert reader.budget.over == f"it has a content block index outside 0 to {MAX_CONTENT_BLOCKS - 1}"
    assert [record.tool_calls for record in records] == [[]]  # the reasoning before it was read, the call was not


def test_finished_turns_are_left_as_sent() -> None:
    sent = without_reasoning(load(f"{ROUNDTRIP}_1_request.json"))
    sent["messages"] += [
        {"role": "assistant", "content": [{"text": "Mexico City."}]},
        {"role": "user", "content": [{"text": "And the second largest?"}]},
    ]
    records = document_records(load(f"{ROUNDTRIP}_0_response_200.json"))
    assert FORMAT.repair(sent, cache_of(records), CONTEXT) == []


def test_foreign_reasoning_is_removed_from_earlier_turns_only() -> None:
    sent = load(f"{ROUNDTRIP}_1_request.json")
    sent["messages"] += [
        {"role": "assistant", "content": [{"text": "Mexico City."}]},
        {"role": "user", "content": [{"text": "Thanks"}]},
    ]
    value = sent["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]["signature"]
    actions, kept = FORMAT.remove_foreign(sent, lambda values: {value: "issued for model x, not y"} if values else {})
    assert [a.describe() for a in actions] == [
        "removed reasoningContent.reasoningText at messages[1].content[0] (tool call tooluse_W9DaUFg4Tj2cRPpndqxWSg): "
        "issued for model x, not y"
    ]
    assert kept == [] and [next(iter(b)) for b in sent["messages"][1]["content"]] == ["text", "toolUse"]

    current = load(f"{ROUNDTRIP}_1_request.json")  # the loop is still open: its last assistant message keeps its own
    actions, kept = FORMAT.remove_foreign(current, lambda values: {value: "issued for model x, not y"})
    assert actions == [] and kept[0][0] == 1 and "left in place" in kept[0][1]


# routes --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "model", "action"),
    [
        (PATH, MODEL, "converse"),
        ("/model/us.anthropic.claude-3-7-sonnet-20250219-v1:0/converse-stream", MODEL, "converse-stream"),
        (
            "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "invoke",
        ),
        (
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.anthropic.claude-x/"
            "invoke-with-response-stream",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-x",
            "invoke-with-response-stream",
        ),
    ],
)
def test_bedrock_paths_name_their_model_and_operation(path: str, model: str, action: str) -> None:
    assert bedrock_route(path) == (model, action)


def test_each_bedrock_route_goes_to_its_format() -> None:
    converse = json.dumps(load(f"{ROUNDTRIP}_1_request.json")).encode()
    invoke = b'{"anthropic_version": "bedrock-2023-05-31", "max_tokens": 10, "messages": []}'
    assert formats.claim("POST", PATH, converse).name == "bedrock_converse"
    assert formats.claim("POST", PATH.replace("/converse", "/invoke"), invoke).name == "anthropic_messages"
    assert (
        formats.by_name("anthropic_messages").request_model(PATH.replace("/converse", "/invoke"), invoke, None) == MODEL
    )
    # InvokeModel for another provider's model (its own body, no anthropic_version) is left alone.
    llama = b'{"messages": [{"role": "user", "content": "hi"}], "max_gen_len": 10}'
    assert formats.claim("POST", "/model/meta.llama3-70b-instruct-v1%3A0/invoke", llama) is None
    assert formats.claim("POST", "/model/x/converse/other", converse) is None


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*_request.json")), ids=lambda p: p.name)
def test_every_recorded_request_is_converse_traffic_that_breaks_no_rule(path: Path) -> None:
    body = path.read_bytes()
    assert formats.claim("POST", PATH, body) is FORMAT_REGISTERED
    assert FORMAT.check(json.loads(body), CONTEXT) == []


def test_bedrocks_own_error_is_not_taken_for_a_reasoning_error() -> None:
    body = (FIXTURES / "pydanticai_converse_invalid_model_0_response_400.json").read_bytes()
    diagnosis = classify(400, body)
    assert (diagnosis.rule, diagnosis.message) == ("unknown", "The provided model identifier is invalid.")
