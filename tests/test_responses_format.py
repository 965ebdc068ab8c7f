"""The OpenAI Responses format: capture over real captures, and repair of `input` as pure functions."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.events import summarize_record
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, arguments_digest
from llm_reasoning_proxy.wire import CacheView, RepairContext, claim
from llm_reasoning_proxy.wire.responses import stream as responses_stream
from llm_reasoning_proxy.wire.responses.format import Responses
from llm_reasoning_proxy.wire.sse import SSEEvent

from tests.support import capture

FIXTURES = Path(__file__).parent / "fixtures" / "openai-responses"
STREAMS = sorted(FIXTURES.glob("*.sse"))
DOCUMENTS = sorted(FIXTURES.glob("*_response*.json"))
PYDANTIC_STREAM = FIXTURES / "pydanticai_gpt5_stream_reasoning_function_calls_0_response_200.sse"
PARALLEL_STREAM = FIXTURES / "codecompanion_reasoning_then_function_calls_stream.sse"
MESSAGE_STREAM = FIXTURES / "codecompanion_gpt5_reasoning_stream.sse"
FORMAT = Responses()
MODEL = "gpt-5"
CONTEXT = RepairContext(path="/v1/responses", model=MODEL)


# --- capture ---------------------------------------------------------------------------------------


def tap_records(raw: bytes, **options) -> list[ReasoningRecord]:
    return capture.tap_records(FORMAT, raw, **options)


def stream_documents(raw: bytes) -> list[dict]:
    return [json.loads(line[5:]) for line in raw.decode().splitlines() if line.startswith("data:")]


def summary(records: list[ReasoningRecord]) -> list[dict[str, Any]]:
    return [
        {
            "reasoning": record.fields,
            "calls": [(c.id, c.aliases, c.name, c.arguments_sha256) for c in record.tool_calls],
            "messages": record.extra_keys,
            "response_id": record.response_id,
        }
        for record in records
    ]


def oracle(output: list[dict], response_id: str) -> list[dict[str, Any]]:
    """Each reasoning item with what follows it up to the next one, written the simplest possible way."""
    groups: list[dict[str, Any]] = []
    for item in output:
        if item["type"] == "reasoning":
            groups.append({"reasoning": item, "calls": [], "messages": [], "response_id": response_id})
        elif groups and item["type"] == "function_call":
            digest = arguments_digest(item["arguments"])
            groups[-1]["calls"].append((item["call_id"], [item["id"]], item["name"], digest))
        elif groups and item["type"] == "message":
            groups[-1]["messages"].append(item["id"])
    for group in groups:  # the reasoning item's own id is a key too, where the record has others
        if group["calls"] or group["messages"]:
            group["messages"].insert(0, group["reasoning"]["id"])
    return groups


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_stream_capture_is_independent_of_chunking(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    docs = stream_documents(raw)
    done = [d["item"] for d in docs if d["type"] == "response.output_item.done"]
    expected = oracle(done, docs[0]["response"]["id"])
    assert len(expected) == 1
    assert summary(tap_records(raw, sse=True, size=size)) == expected


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_document_capture(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    doc = json.loads(raw)
    assert summary(tap_records(raw, sse=False, size=size)) == oracle(doc["output"], doc["id"])


def test_stream_keeps_the_output_item_done_copy() -> None:
    raw = PYDANTIC_STREAM.read_bytes()
    docs = stream_documents(raw)
    added = next(d["item"] for d in docs if d["type"] == "response.output_item.added")
    done = next(d["item"] for d in docs if d["type"] == "response.output_item.done")
    completed = docs[-1]["response"]["output"][0]
    (record,) = tap_records(raw, sse=True, size=7)
    assert record.fields == done
    assert record.fields["encrypted_content"].startswith("gAAAAABoyXvxI6jwG5j6rvTGC7PD6J")
    assert len(added["encrypted_content"]) == 824  # the stub
    assert len(completed["encrypted_content"]) == len(done["encrypted_content"]) == 3896
    assert completed["encrypted_content"] != done["encrypted_content"]
    assert record.tool_calls == [
        ToolCallRef(
            id="call_CWXgs68YprAjp6t0371hiPOI",
            aliases=["fc_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042"],
            name="final_result",
            arguments='{"result":6666}',
        )
    ]
    assert record.response_id == "resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33"
    assert record.response_model == "gpt-5-2025-08-07"
    assert record.keys()[:2] == [
        "call_CWXgs68YprAjp6t0371hiPOI",
        "fc_0050471a34b36ae60068c97bf19d9c819590eaf42c0edc1042",
    ]


def test_parallel_calls_share_one_reasoning_item() -> None:
    (record,) = tap_records(PARALLEL_STREAM.read_bytes(), sse=True, size=7)
    assert record.fields["id"] == "rs_0cebe04c7f5006bd0068e8278fab388195a6c538dd197d6fa0"
    assert record.tool_call_ids == ["call_hvKk3FjuupQx8xeHeVbQNZkM", "call_lzBOVwzUEAuTss7Gifvp1Rwi"]
    assert [c.aliases for c in record.tool_calls] == [
        ["fc_0cebe04c7f5006bd0068e827962aa8819592a7e51f7fa0d0b3"],
        ["fc_0cebe04c7f5006bd0068e827963dfc81958741d3a9f70c8a94"],
    ]
    assert record.fields["summary"][0]["text"].startswith("**Setting temperature units**")


def test_message_after_reasoning_is_an_extra_key() -> None:
    (record,) = tap_records(MESSAGE_STREAM.read_bytes(), sse=True, size=7)
    assert record.tool_calls == []
    assert record.extra_keys == [record.fields["id"], "msg_0d095c3febb788170068e81dc33acc81938f4c449a82d38322"]
    assert [part["text"].split("\n")[0] for part in record.fields["summary"]][:2] == [
        "**Deciding on Ruby's description**",
        "**Choosing Ruby's description**",
    ]


def test_summary_is_logged_as_text_and_encrypted_content_as_hash() -> None:
    (record,) = tap_records(PARALLEL_STREAM.read_bytes(), sse=True, size=None)
    fields, calls = summarize_record(record, FORMAT.text_fields, include_opaque=False)
    assert fields["id"].text == "rs_0cebe04c7f5006bd0068e8278fab388195a6c538dd197d6fa0"
    assert json.loads(fields["summary"].text)[0]["text"].startswith("**Setting temperature units**")
    assert fields["encrypted_content"].text is None and fields["encrypted_content"].length == 3148
    assert [c.aliases for c in calls][0] == ["fc_0cebe04c7f5006bd0068e827962aa8819592a7e51f7fa0d0b3"]


def test_completed_copy_is_used_only_for_items_without_a_done_event() -> None:
    raw = PYDANTIC_STREAM.read_bytes()
    events = raw.split(b"\n\n")
    without_done = b"\n\n".join(e for e in events if b"event: response.output_item.done" not in e)
    completed = stream_documents(raw)[-1]["response"]["output"]
    (record,) = tap_records(without_done, sse=True, size=7)
    assert record.fields == completed[0]
    assert record.tool_call_ids == ["call_CWXgs68YprAjp6t0371hiPOI"]


def test_done_copy_wins_when_the_completed_event_is_read() -> None:
    # Without response.created the final event is read (for the response id); its re-encrypted copy
    # must not replace the one from output_item.done.
    raw = PYDANTIC_STREAM.read_bytes()
    events = raw.split(b"\n\n")
    without_created = b"\n\n".join(e for e in events if b"event: response.created" not in e)
    done = next(d["item"] for d in stream_documents(raw) if d["type"] == "response.output_item.done")
    (record,) = tap_records(without_created, sse=True, size=7)
    assert record.fields == done
    assert record.response_id == "resp_0050471a34b36ae60068c97b94a480819587a9d70cf2979b33"


def test_completed_event_fills_in_only_the_reasoning_item_without_a_done_event() -> None:
    first, second = reasoning(1), reasoning(2)
    calls = [call(1), call(2)]
    done = [
        {"type": "response.output_item.done", "output_index": 0, "item": first},
        {"type": "response.output_item.done", "output_index": 1, "item": calls[0]},
        {"type": "response.output_item.done", "output_index": 3, "item": calls[1]},
    ]
    recopied = [{**item, "encrypted_content": "gAAAAAB-recopied"} for item in (first, second)]
    completed = {"type": "response.completed", "response": {"id": "resp_x", "output": [recopied[0], calls[0]]}}
    completed["response"]["output"] += [recopied[1], calls[1]]
    reader = FORMAT.reader()
    for doc in [{"type": "response.created", "response": {"id": "resp_x"}}, *done, completed]:
        reader.feed_event(SSEEvent(json.dumps(doc).encode(), doc["type"]))
    records = reader.records(complete=True)
    assert [(r.fields, r.tool_call_ids) for r in records] == [(first, ["call_1"]), (recopied[1], ["call_2"])]


def test_only_a_handful_of_events_are_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real_loads = jsoncodec.loads

    def loads(data: bytes) -> Any:
        doc = real_loads(data)
        parsed.append(doc["type"])
        return doc

    monkeypatch.setattr(responses_stream.jsoncodec, "loads", loads)
    tap_records(PYDANTIC_STREAM.read_bytes(), sse=True, size=None)
    # response.in_progress, the deltas and response.completed (every item already whole) are skipped.
    assert parsed == ["response.created", "response.output_item.done", "response.output_item.done"]


def test_cut_stream_keeps_what_came_whole() -> None:
    raw = PYDANTIC_STREAM.read_bytes()
    cut = raw.index(b"event: response.function_call_arguments.delta")
    (record,) = tap_records(raw[:cut], sse=True, size=7, complete=False)
    assert record.complete is False
    assert record.fields["id"] == "rs_0050471a34b36ae60068c97bac4dcc819595fd0f80d6b3c405"
    assert record.tool_calls == [] and record.keys() == []  # nothing to find it by: not cached

    cut = raw.index(b"event: response.completed")
    (record,) = tap_records(raw[:cut], sse=True, size=7, complete=False)
    assert record.tool_call_ids == ["call_CWXgs68YprAjp6t0371hiPOI"]


def test_unnamed_events_and_odd_payloads() -> None:
    reader = FORMAT.reader()
    item = {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA", "summary": []}
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
    for data in [
        b"not json",
        b'{"type":"response.output_item.done","item":"nope"}',
        b"[1, 2]",
        json.dumps({"type": "response.output_item.done", "output_index": 0, "item": item}).encode(),
        json.dumps({"type": "response.output_item.done", "item": call}).encode(),  # no output_index: next one
        json.dumps(
            {"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call"}}
        ).encode(),
    ]:
        reader.feed_event(SSEEvent(data))
    reader.feed_document({"output": "nope"})
    reader.feed_document(None)
    (record,) = reader.records(complete=True)
    assert record.fields == item and record.tool_call_ids == ["call_1"] and record.response_id is None


def test_no_reasoning_no_records() -> None:
    raw = (FIXTURES / "codecompanion_gpt41_parallel_function_calls_response.json").read_bytes()
    assert tap_records(raw, sse=False, size=None) == []


# --- repair ----------------------------------------------------------------------------------------

QUESTION = {"role": "user", "content": "What is in deleteme?"}


def reasoning(n: int = 1, *, summary: list | None = None) -> dict:
    return {
        "id": f"rs_{n}",
        "type": "reasoning",
        "encrypted_content": f"gAAAAAB-full-{n}",
        "summary": [{"type": "summary_text", "text": f"Thinking {n}"}] if summary is None else summary,
    }


def call(n: int, *, fc_id: bool = True, call_id: str | None = None) -> dict:
    item = {"type": "function_call", "call_id": call_id or f"call_{n}", "name": "list_directory"}
    item["arguments"] = json.dumps({"path": f"dir{n}"})
    if fc_id:
        item["id"] = f"fc_{n}"
    return item


def output(n: int, call_id: str | None = None) -> dict:
    return {"type": "function_call_output", "call_id": call_id or f"call_{n}", "output": "a.txt"}


def message(n: int) -> dict:
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_{n}",
        "content": [{"type": "output_text", "text": "Hi"}],
    }


def record(n: int, *calls: int, messages: tuple[str, ...] = (), model: str = MODEL) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="openai_responses",
        fields=reasoning(n),
        tool_calls=[
            ToolCallRef(id=f"call_{c}", aliases=[f"fc_{c}"], name="list_directory", arguments=call(c)["arguments"])
            for c in calls
        ],
        extra_keys=list(messages),
        response_id=f"resp_{n}",
        request_model=model,
    )


def cached_for(doc: dict, records: list[ReasoningRecord], model: str | None = MODEL) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    stored = {key: r for r in records for key in r.keys()}
    return CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, model) if k in stored}, model)


def request(*items: Any, **extra: Any) -> dict:
    return {"model": MODEL, "input": [QUESTION, *items], "store": False, **extra}


def repaired(doc: dict, records: list[ReasoningRecord], model: str | None = MODEL) -> list[str]:
    return [a.describe() for a in FORMAT.repair(doc, cached_for(doc, records, model), CONTEXT)]


def test_inserts_reasoning_before_a_single_call() -> None:
    doc = request(call(1), output(1))
    assert repaired(doc, [record(1, 1)]) == ["inserted reasoning rs_1 before input[2] (tool call call_1)"]
    assert doc["input"] == [QUESTION, reasoning(1), call(1), output(1)]


def test_inserts_once_before_parallel_calls() -> None:
    doc = request(call(1), call(2), output(1), output(2))
    actions = FORMAT.repair(doc, cached_for(doc, [record(1, 1, 2)]), CONTEXT)
    assert doc["input"] == [QUESTION, reasoning(1), call(1), call(2), output(1), output(2)]
    assert [(a.kind, a.location, a.index, a.tool_call_id, a.response_id, a.via) for a in actions] == [
        ("inserted", "input[2]", 2, "call_1", "resp_1", "id")
    ]


def test_parallel_group_found_by_its_second_call_still_gets_reasoning_first() -> None:
    # Only the second call is known (the first came from elsewhere or was rewritten): reasoning leads the run.
    doc = request(call(9), call(2), output(9), output(2))
    assert repaired(doc, [record(1, 2)]) == ["inserted reasoning rs_1 before input[2] (tool call call_2)"]
    assert doc["input"] == [QUESTION, reasoning(1), call(9), call(2), output(9), output(2)]


def test_interleaved_calls_and_outputs_get_one_reasoning_item() -> None:
    doc = request(call(1), output(1), call(2), output(2))
    assert repaired(doc, [record(1, 1, 2)]) == ["inserted reasoning rs_1 before input[2] (tool call call_1)"]
    assert doc["input"] == [QUESTION, reasoning(1), call(1), output(1), call(2), output(2)]


def test_each_turn_gets_its_own_reasoning() -> None:
    doc = request(call(1), output(1), call(2), output(2), message(3))
    actions = repaired(doc, [record(1, 1), record(2, 2), record(3, messages=("msg_3",))])
    assert doc["input"] == [
        QUESTION,
        reasoning(1),
        call(1),
        output(1),
        reasoning(2),
        call(2),
        output(2),
        reasoning(3),
        message(3),
    ]
    assert actions == [
        "inserted reasoning rs_1 before input[2] (tool call call_1)",
        "inserted reasoning rs_2 before input[5] (tool call call_2)",
        "inserted reasoning rs_3 before input[8]",
    ]


def test_message_and_calls_of_one_response_follow_one_reasoning_item() -> None:
    doc = request(message(1), call(1), output(1))
    repaired(doc, [record(1, 1, messages=("msg_1",))])
    assert doc["input"] == [QUESTION, reasoning(1), message(1), call(1), output(1)]


def test_reasoning_of_another_turn_right_before_is_kept_apart() -> None:
    # The run after rs_1 holds an unknown call and then rs_2's call: rs_2 goes right before its own call.
    doc = request(reasoning(1), call(9), call(2), output(9), output(2))
    assert repaired(doc, [record(2, 2)]) == ["inserted reasoning rs_2 before input[4] (tool call call_2)"]
    assert doc["input"] == [QUESTION, reasoning(1), call(9), reasoning(2), call(2), output(9), output(2)]


@pytest.mark.parametrize(
    "items, expected_input, descriptions",
    [
        (
            [reasoning(1)],
            [],
            ["removed reasoning rs_1 at input[1]: nothing follows it"],
        ),
        (
            [reasoning(1), output(1)],
            [output(1)],
            ["removed reasoning rs_1 at input[1]: nothing follows it"],
        ),
        (
            [call(1), output(1), reasoning(2), {"role": "user", "content": "And now?"}],
            [call(1), output(1), {"role": "user", "content": "And now?"}],
            ["removed reasoning rs_2 at input[3]: nothing follows it"],
        ),
        (
            [reasoning(1), reasoning(2)],
            [],
            [
                "removed reasoning rs_1 at input[1]: nothing follows it",
                "removed reasoning rs_2 at input[2]: nothing follows it",
            ],
        ),
    ],
    ids=["last", "before-tool-output", "before-user-message", "two-in-a-row-at-the-end"],
)
def test_orphaned_reasoning_is_removed(items: list, expected_input: list, descriptions: list[str]) -> None:
    doc = request(*items)
    assert repaired(doc, []) == descriptions
    assert doc["input"] == [QUESTION, *expected_input]


def test_removed_orphan_is_put_back_where_it_belongs() -> None:
    # A client that kept the reasoning item but put it after the call's output.
    doc = request(call(1), output(1), reasoning(1))
    assert repaired(doc, [record(1, 1)]) == [
        "removed reasoning rs_1 at input[3]: nothing follows it",
        "inserted reasoning rs_1 before input[2] (tool call call_1)",
    ]
    assert doc["input"] == [QUESTION, reasoning(1), call(1), output(1)]


@pytest.mark.parametrize(
    "items",
    [
        [reasoning(1, summary=[]), call(1), output(1)],  # an empty summary is a whole item
        [reasoning(1), message(1)],
        [reasoning(1), reasoning(2), call(2), output(2)],  # reasoning followed by reasoning: unknown, left
        [{"type": "reasoning", "summary": [], "encrypted_content": "x"}, output(1)],  # no id: the rule names ids
        [reasoning(1), {"type": "web_search_call", "id": "ws_1", "status": "completed"}],
        [reasoning(1), {"type": "item_reference", "id": "fc_1"}],
        [reasoning(1), "odd"],
    ],
    ids=["empty-summary", "message", "reasoning-reasoning", "no-id", "web-search", "item-reference", "odd-item"],
)
def test_reasoning_items_that_are_followed_are_kept(items: list) -> None:
    doc = request(*items)
    before = copy.deepcopy(doc)
    assert repaired(doc, [record(1, 1), record(2, 2)]) == []
    assert doc == before


@pytest.mark.parametrize(
    "extra",
    [{"previous_response_id": "resp_1"}, {"conversation": "conv_1"}, {"conversation": {"id": "conv_1"}}],
    ids=["previous_response_id", "conversation", "conversation-object"],
)
def test_server_side_history_means_no_insertion(extra: dict) -> None:
    doc = request(call(1), output(1), **extra)
    stored = {key: r for r in [record(1, 1)] for key in r.keys()}
    assert FORMAT.lookup_keys(doc, MODEL) == []
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, CacheView(stored, MODEL), CONTEXT) == []
    assert doc == before


def test_null_previous_response_id_is_not_a_chain() -> None:
    doc = request(call(1), output(1), previous_response_id=None)
    assert len(repaired(doc, [record(1, 1)])) == 1


def test_repair_is_idempotent() -> None:
    doc = request(call(1), call(2), output(1), output(2), reasoning(7), message(3))
    records = [record(1, 1, 2), record(3, messages=("msg_3",))]
    assert len(repaired(doc, records)) == 2
    once = copy.deepcopy(doc)
    assert repaired(doc, records) == []
    assert doc == once


def test_fallback_by_name_and_arguments_when_call_ids_were_rewritten() -> None:
    rewritten = call(1, fc_id=False, call_id="toolu_rewritten")
    doc = request(rewritten, output(1, "toolu_rewritten"))
    actions = FORMAT.repair(doc, cached_for(doc, [record(1, 1)]), CONTEXT)
    assert doc["input"] == [QUESTION, reasoning(1), rewritten, output(1, "toolu_rewritten")]
    assert [(a.via, a.tool_call_id) for a in actions] == [("fingerprint", "call_1")]
    assert actions[0].describe() == (
        "inserted reasoning rs_1 before input[2] (tool call call_1, matched by name and arguments)"
    )


def test_call_found_by_its_fc_id_when_call_id_differs() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_other", "name": "other", "arguments": "{}"}
    doc = request(item, output(1, "call_other"))
    assert repaired(doc, [record(1, 1)]) == ["inserted reasoning rs_1 before input[2] (tool call call_1)"]


def test_record_of_another_model_is_not_used() -> None:
    doc = request(call(1), output(1))
    stored = {key: r for r in [record(1, 1, model="o3")] for key in r.keys()}
    cache = CacheView({k: stored[k] for k in FORMAT.lookup_keys(doc, MODEL) if k in stored}, MODEL)
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cache, CONTEXT) == []
    assert doc == before
    assert cache.mismatched == {"call_1": "o3", "fc_1": "o3"}


def test_reasoning_the_client_kept_is_never_replaced() -> None:
    theirs = {**reasoning(1), "encrypted_content": "gAAAAAB-client-chosen"}
    doc = request(call(1), output(1), theirs, message(2))  # rs_1 is present, though not where it belongs
    before = copy.deepcopy(doc)
    assert repaired(doc, [record(1, 1)]) == []
    assert doc == before


def test_reasoning_without_id_before_the_group_is_left_alone() -> None:
    # Zed replays reasoning items without ids; what it kept is its choice.
    idless = {"type": "reasoning", "summary": [], "encrypted_content": "gAAAAAB-full-1"}
    doc = request(idless, call(1), call(2), output(1), output(2))
    before = copy.deepcopy(doc)
    assert repaired(doc, [record(1, 1, 2)]) == []
    assert doc == before


def test_adjacent_calls_of_two_responses_each_get_their_reasoning() -> None:
    doc = request(call(1), call(2), output(1), output(2))
    assert repaired(doc, [record(1, 1), record(2, 2)]) == [
        "inserted reasoning rs_1 before input[2] (tool call call_1)",
        "inserted reasoning rs_2 before input[4] (tool call call_2)",
    ]
    assert doc["input"] == [QUESTION, reasoning(1), call(1), reasoning(2), call(2), output(1), output(2)]


@pytest.mark.parametrize(
    "doc",
    [
        {"model": MODEL, "input": "just text"},
        {"model": MODEL, "input": None},
        {"model": MODEL},
        [],
        "x",
        {"input": [None, 3, "x", [], {"type": "function_call"}, {"type": "function_call", "call_id": 5, "name": 1}]},
        {
            "input": [
                {"type": "message", "role": "assistant", "id": 7},
                {"type": "reasoning", "id": 3},
                {"role": "user"},
            ]
        },
        {"input": [{"type": "function_call", "call_id": "call_9", "name": "x", "arguments": {"a": [1]}}]},
    ],
)
def test_odd_shapes_are_left_alone(doc: Any) -> None:
    before = copy.deepcopy(doc)
    FORMAT.lookup_keys(doc, MODEL)
    assert FORMAT.repair(doc, CacheView({}, MODEL), CONTEXT) == []
    assert doc == before


def test_record_without_a_reasoning_item_is_not_inserted() -> None:
    odd = record(1, 1).model_copy(update={"fields": {"encrypted_content": "x"}})
    doc = request(call(1), output(1))
    assert repaired(doc, [odd]) == []


def test_inserted_item_is_a_copy() -> None:
    cached = record(1, 1)
    doc = request(call(1), output(1))
    repaired(doc, [cached])
    doc["input"][1]["summary"].append("changed")
    assert cached.fields == reasoning(1)


def test_pydantic_ai_stateless_round_trip() -> None:
    """Strip the reasoning item from a real request 1 and get it back from the captured response 0."""
    original = json.loads((FIXTURES / "pydanticai_gpt5_reasoning_function_call_roundtrip_1_request.json").read_text())
    response = (FIXTURES / "pydanticai_gpt5_reasoning_function_call_roundtrip_0_response_200.json").read_bytes()
    (captured,) = tap_records(response, sse=False, size=None)
    captured = captured.model_copy(update={"request_model": original["model"]})
    stripped = copy.deepcopy(original)
    del stripped["input"][1]
    assert [item.get("type") for item in stripped["input"]] == [None, "function_call", "function_call_output"]
    actions = FORMAT.repair(stripped, cached_for(stripped, [captured], model="gpt-5"), CONTEXT)
    assert stripped == original
    assert [a.describe() for a in actions] == [
        "inserted reasoning rs_0c71d6d8526a7a4b006920e03fd67c819da5eead157faee94b before input[2] "
        "(tool call call_1w9YRdMtRTRucwZShoZYlLJp)"
    ]
    assert actions[0].response_id == "resp_0c71d6d8526a7a4b006920e03f691c819dbca4d1d793e86703"


def test_pydantic_ai_request_that_kept_its_reasoning_needs_nothing() -> None:
    doc = json.loads((FIXTURES / "pydanticai_gpt5_reasoning_function_call_roundtrip_1_request.json").read_text())
    response = (FIXTURES / "pydanticai_gpt5_reasoning_function_call_roundtrip_0_response_200.json").read_bytes()
    (captured,) = tap_records(response, sse=False, size=None)
    before = copy.deepcopy(doc)
    assert FORMAT.repair(doc, cached_for(doc, [captured.model_copy(update={"request_model": "gpt-5"})]), CONTEXT) == []
    assert doc == before


# --- claims and cheap checks -----------------------------------------------------------------------


def test_claims() -> None:
    body = b'{"model":"gpt-5","input":"hi"}'
    assert FORMAT.claims("POST", "/v1/responses", body)
    assert FORMAT.claims("POST", "/responses?api-version=1", body)  # Copilot's path, with a query
    assert FORMAT.claims("POST", "/openai/v1/responses/", body)
    assert not FORMAT.claims("GET", "/v1/responses", body)
    assert not FORMAT.claims("POST", "/v1/responses/resp_1/cancel", body)
    assert not FORMAT.claims("POST", "/v1/responses", b'{"model":"gpt-5","messages":[]}')
    assert not FORMAT.claims("POST", "/v1/chat/completions", body)
    assert claim("POST", "/v1/responses", body) is not None and claim("POST", "/v1/responses", body).name == (
        "openai_responses"
    )
    assert FORMAT.request_model("/v1/responses", body, None) == "gpt-5"
    assert FORMAT.request_model("/v1/responses", body, {"model": "o3"}) == "o3"


@pytest.mark.parametrize(
    "body, needed",
    [
        (b'{"input":[{"type":"function_call","call_id":"c"}]}', True),
        (b'{"input":[{"type": "message", "id": "msg_1", "role": "assistant"}]}', True),
        (b'{"input":[{"type" : "reasoning","id":"rs_1"}]}', True),
        (b'{"input":"hi","reasoning":{"effort":"low"}}', False),
        (b'{"input":[{"role":"user","content":"hi"}],"include":["reasoning.encrypted_content"]}', False),
    ],
)
def test_may_need_repair(body: bytes, needed: bool) -> None:
    assert FORMAT.may_need_repair(body) is needed


@pytest.mark.parametrize(
    "name",
    [
        "pydanticai_gpt5_reasoning_function_call_roundtrip_0_request.json",
        "pydanticai_gpt5_stream_reasoning_function_calls_0_request.json",
    ],
)
def test_real_first_turn_requests_are_claimed_and_never_parsed(name: str) -> None:
    body = (FIXTURES / name).read_bytes()
    assert b'"reasoning"' in body or b"reasoning.encrypted_content" in body
    assert FORMAT.claims("POST", "/v1/responses", body)
    assert FORMAT.request_model("/v1/responses", body, None) == "gpt-5"
    assert FORMAT.may_need_repair(body) is False


def test_real_turn_two_request_may_need_repair() -> None:
    body = (FIXTURES / "pydanticai_gpt5_reasoning_function_call_roundtrip_1_request.json").read_bytes()
    assert FORMAT.claims("POST", "/v1/responses", body) and FORMAT.may_need_repair(body)


# --------------------------------------------------------------------------------------
# an item right after its reasoning item, sent back without its id: OpenAI pairs the two by id


def test_a_call_that_lost_its_fc_id_after_its_reasoning_gets_it_back() -> None:
    doc = request(reasoning(1), call(1, fc_id=False), output(1))
    assert repaired(doc, [record(1, 1)]) == ["restored id on input[2] (tool call call_1)"]
    assert doc["input"][2]["id"] == "fc_1" and FORMAT.check(doc, CONTEXT) == []


def test_a_message_that_lost_its_msg_id_after_its_reasoning_gets_it_back() -> None:
    answer = {k: v for k, v in message(1).items() if k != "id"}
    doc = request(reasoning(1), answer, {"role": "user", "content": "And?"})
    assert FORMAT.lookup_keys(doc, MODEL) == ["rs_1"]  # found through the reasoning item's own id
    assert repaired(doc, [record(1, messages=("rs_1", "msg_1"))]) == ["restored id on input[2]"]
    assert doc["input"][2]["id"] == "msg_1"


def test_a_reasoning_item_whose_next_item_lost_its_id_for_good_is_taken_out() -> None:
    """Nothing cached for it: the pair cannot be restored, and the server refuses the reasoning item as sent."""
    answer = {k: v for k, v in message(1).items() if k != "id"}
    doc = request(reasoning(1), answer, {"role": "user", "content": "And?"})
    assert [v.rule for v in FORMAT.check(doc, CONTEXT)] == ["responses_reasoning_orphaned"]
    assert repaired(doc, []) == ["removed reasoning rs_1 at input[1]: the item after it lost the id it was issued"]
    assert [item.get("type") for item in doc["input"][1:]] == ["message", None]


def test_reasoning_is_not_put_back_before_an_item_that_lost_its_id_for_good() -> None:
    """A client that dropped both the reasoning item and its message's msg_ id: the cached reasoning item would be
    refused right before an item without an id, so it is put back only where the id can be put back too."""
    bare = {k: v for k, v in message(1).items() if k != "id"}
    doc = request(bare, call(1), output(1))
    assert repaired(doc, [record(1, 1)]) == ["inserted reasoning rs_1 before input[3] (tool call call_1)"]
    assert doc["input"][2]["id"] == "rs_1" and doc["input"][3]["id"] == "fc_1"  # before the call, which has its id


# --------------------------------------------------------------------------------------
# store: false, a reasoning item sent back as its id alone


def test_a_reasoning_item_sent_by_id_alone_under_store_false_gets_its_encrypted_content_back() -> None:
    doc = request({"type": "reasoning", "id": "rs_1"}, call(1), output(1))
    assert "rs_1" in FORMAT.lookup_keys(doc, MODEL)
    assert repaired(doc, [record(1, 1, messages=("rs_1",))]) == ["restored encrypted_content, summary on input[1]"]
    assert doc["input"][1] == reasoning(1) | {"id": "rs_1"}


def test_with_store_on_a_reasoning_item_by_id_is_left_for_the_server_to_find() -> None:
    doc = request({"type": "reasoning", "id": "rs_1"}, call(1), output(1), store=True)
    assert "rs_1" not in FORMAT.lookup_keys(doc, MODEL)
    assert repaired(doc, [record(1, 1, messages=("rs_1",))]) == []
