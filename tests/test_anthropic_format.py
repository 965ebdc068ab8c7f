"""The Anthropic Messages format: capture over real captures, and repair as pure functions over parsed bodies."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from llm_reasoning_proxy.cache.base import CacheLimits
from llm_reasoning_proxy.cache.sqlite_store import SQLiteStore
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef, canonical_arguments
from llm_reasoning_proxy.wire import CacheView, RepairContext, claim
from llm_reasoning_proxy.wire.anthropic.format import AnthropicMessages
from llm_reasoning_proxy.wire.sse import SSEEvent

from tests.support import capture

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
STREAMS = sorted(FIXTURES.glob("*.sse"))
DOCUMENTS = sorted(FIXTURES.glob("*_response_200.json")) + [
    FIXTURES / "codecompanion_claude37_thinking_signature_response.json"
]
FORMAT = AnthropicMessages()
CONTEXT = RepairContext(path="/v1/messages", model="claude-sonnet-4-5")
MODEL = "claude-sonnet-4-5"
THINKING = {
    "type": "thinking",
    "thinking": 'Call "list_directory" — ✓.\n\nThen answer.',
    "signature": "EqQBCkYIBxgCKkA=",
}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}


def tap_records(raw: bytes, **options) -> list[ReasoningRecord]:
    return capture.tap_records(FORMAT, raw, **options)


def json_of(value: object) -> str:
    """JSON with the keys in their order: equal only when the blocks are identical key for key."""
    return json.dumps(value, ensure_ascii=False)


# capture -------------------------------------------------------------------------------------
def oracle_from_lines(raw: bytes) -> dict:
    """What a careful reader gets from a stream, written the simplest possible way (one JSON per data: line)."""
    blocks: dict[int, dict] = {}
    uses: dict[int, dict] = {}
    message: dict = {}
    for line in raw.decode().splitlines():
        if not line.startswith("data:"):
            continue
        doc = json.loads(line[len("data:") :])
        if doc["type"] == "message_start":
            message = doc["message"]
        elif doc["type"] == "content_block_start" and doc["content_block"]["type"] in ("thinking", "redacted_thinking"):
            blocks[doc["index"]] = dict(doc["content_block"])
        elif doc["type"] == "content_block_start" and doc["content_block"]["type"] == "tool_use":
            uses[doc["index"]] = {"id": doc["content_block"]["id"], "json": ""}
        elif doc["type"] == "content_block_delta":
            delta = doc["delta"]
            if delta["type"] == "thinking_delta":
                blocks[doc["index"]]["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                blocks[doc["index"]]["signature"] += delta["signature"]
            elif delta["type"] == "input_json_delta":
                uses[doc["index"]]["json"] += delta["partial_json"]
    return {
        "blocks": [blocks[i] for i in sorted(blocks)],
        "ids": [uses[i]["id"] for i in sorted(uses)],
        "response_id": message.get("id"),
        "model": message.get("model"),
    }


def oracle_from_document(doc: dict) -> dict:
    return {
        "blocks": [b for b in doc["content"] if b["type"] in ("thinking", "redacted_thinking")],
        "ids": [b["id"] for b in doc["content"] if b["type"] == "tool_use"],
        "response_id": doc["id"],
        "model": doc["model"],
    }


def assert_matches(records: list[ReasoningRecord], expected: dict) -> None:
    if not expected["blocks"]:
        assert records == []
        return
    (record,) = records
    assert [json_of(b) for b in record.fields["thinking_blocks"]] == [json_of(b) for b in expected["blocks"]]
    thinking = [b["thinking"] for b in expected["blocks"] if b["type"] == "thinking"]
    assert record.fields.get("thinking") == ("\n\n".join(thinking) if thinking else None)
    assert record.tool_call_ids == expected["ids"]
    assert (record.response_id, record.response_model) == (expected["response_id"], expected["model"])


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_stream_capture_is_independent_of_chunking(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    assert_matches(tap_records(raw, sse=True, size=size), oracle_from_lines(raw))
    assert tap_records(raw, sse=True, size=size) == tap_records(raw, sse=True, size=None)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
@pytest.mark.parametrize("size", [None, 1, 7])
def test_document_capture(path: Path, size: int | None) -> None:
    raw = path.read_bytes()
    assert_matches(tap_records(raw, sse=False, size=size), oracle_from_document(json.loads(raw)))


def test_codecompanion_stream_without_blank_lines_gives_the_non_streamed_shape() -> None:
    # The stub has no blank line between events: the SSE parser sees one event holding every data: line.
    raw = (FIXTURES / "codecompanion_claude37_thinking_signature_delta_stream.sse").read_bytes()
    assert b"\n\n" not in raw
    (record,) = tap_records(raw, sse=True, size=7)
    (block,) = record.fields["thinking_blocks"]
    document = json.loads((FIXTURES / "codecompanion_claude37_thinking_signature_response.json").read_bytes())
    assert list(block) == list(document["content"][0]) == ["type", "thinking", "signature"]
    assert block["thinking"].startswith("The user is asking me to describe the Ruby programming language")
    assert block["thinking"].endswith(
        'I think "Elegant simplicity" best captures what Ruby is known for in the programming community.'
    )
    assert block["signature"] == (
        "ErUBCkYIARgCIkD2TbY0dBj4TX6j9jLgU26mB6oDbc93/3vETJg/qq0PSyG3Xl2YMJefENtLSEhETavznU7kszXycQGdosQAyTQvEgw7PKGa9"
        "7oZW+qHSMgaDNEjEybHMgXvWWf4ICIwIwGrPIrMPucyIKwt/fD4pjtRGQMRLA8JljU9l6fgMoa4q2833/4cCQCyR44B3tpqKh0zHS0N/n80Wst"
        "QDoMibOxcYrI4d2bRe94D9l8Pjg=="
    )
    assert record.tool_calls == [] and record.keys() == []  # no tool_use: logged, nothing to link it to
    assert record.response_id == "msg_01L5kboATr86wxt6pSa3MtBw"
    assert record.response_model == "claude-3-7-sonnet-20250219"
    assert "thinking_layout" not in record.fields


def test_redacted_blocks_arrive_whole_in_content_block_start() -> None:
    raw = (FIXTURES / "pydanticai_claude45_redacted_thinking_stream_0_response_200.sse").read_bytes()
    (record,) = tap_records(raw, sse=True, size=1)
    starts = [
        json.loads(line[len("data:") :])
        for line in raw.decode().splitlines()
        if line.startswith("data:") and "content_block_start" in line
    ]
    expected = [s["content_block"] for s in starts if s["content_block"]["type"] == "redacted_thinking"]
    assert len(expected) == 2
    assert [json_of(b) for b in record.fields["thinking_blocks"]] == [json_of(b) for b in expected]
    assert set(record.fields) == {"thinking_blocks"}  # nothing readable to log
    assert record.response_model == "claude-sonnet-4-5-20250929"


def sse(*docs: dict) -> bytes:
    return b"".join(f"event: {d['type']}\ndata: {json.dumps(d)}\n\n".encode() for d in docs)


def start(index: int, block: dict) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": block}


def delta(index: int, value: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": value}


def stop(index: int) -> dict:
    return {"type": "content_block_stop", "index": index}


MESSAGE_START = {"type": "message_start", "message": {"id": "msg_1", "model": "claude-x", "content": []}}
THINKING_EVENTS = (
    start(0, {"type": "thinking", "thinking": "", "signature": ""}),
    {"type": "ping"},
    delta(0, {"type": "thinking_delta", "thinking": 'Call "list_directory" — '}),
    delta(0, {"type": "thinking_delta", "thinking": "✓.\n\nThen answer."}),
    delta(0, {"type": "thinking_delta", "thinking": ""}),
    delta(0, {"type": "signature_delta", "signature": "EqQBCkYIBxgCKkA="}),
    stop(0),
)


def tool_use_events(index: int, call_id: str, arguments: str) -> tuple[dict, ...]:
    use = {"type": "tool_use", "id": call_id, "name": "list_directory", "input": {}}
    parts = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    return (
        start(index, use),
        delta(index, {"type": "input_json_delta", "partial_json": ""}),
        *(delta(index, {"type": "input_json_delta", "partial_json": p}) for p in parts),
        stop(index),
    )


TOOL_STREAM = sse(
    MESSAGE_START,
    *THINKING_EVENTS,
    start(1, {"type": "text", "text": ""}),
    delta(1, {"type": "text_delta", "text": "I will look."}),
    stop(1),
    *tool_use_events(2, "toolu_a", '{"path": "dir0"}'),
    *tool_use_events(3, "toolu_b", '{"path": "dir1", "depth": 2}'),
    {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": None}, "usage": {}},
    {"type": "message_stop"},
)


@pytest.mark.parametrize("size", [None, 1, 7])
def test_streamed_tool_use_input_is_assembled_from_partial_json(size: int | None) -> None:
    (record,) = tap_records(TOOL_STREAM, sse=True, size=size)
    assert [json_of(b) for b in record.fields["thinking_blocks"]] == [json_of(THINKING)]
    assert record.fields["thinking"] == THINKING["thinking"]
    assert record.tool_calls == [
        ToolCallRef(id="toolu_a", name="list_directory", arguments='{"path":"dir0"}'),
        ToolCallRef(id="toolu_b", name="list_directory", arguments='{"depth":2,"path":"dir1"}'),
    ]
    assert record.response_id == "msg_1" and record.complete is True


def test_text_deltas_are_not_parsed() -> None:
    reader = FORMAT.reader()
    reader.feed_event(
        SSEEvent(b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}', None)
    )
    reader.feed_event(SSEEvent(b"not json at all, and no marker", "content_block_delta"))
    reader.feed_event(SSEEvent(b'{"type": "ping"}', "ping"))
    assert reader.records(complete=True) == []


def test_cut_stream_keeps_only_blocks_that_ended() -> None:
    cut_in_thinking = TOOL_STREAM[: TOOL_STREAM.index(b"signature_delta")]
    assert tap_records(cut_in_thinking, sse=True, size=7, complete=False) == []

    # All of the second call's input arrived, but not its stop.
    cut_in_second_call = TOOL_STREAM[: TOOL_STREAM.index(b'{"type": "content_block_stop", "index": 3}')]
    (record,) = tap_records(cut_in_second_call, sse=True, size=7, complete=False)
    assert [json_of(b) for b in record.fields["thinking_blocks"]] == [json_of(THINKING)]
    # The first call ended; the second is linked by id only (its input is not whole).
    assert record.tool_calls == [
        ToolCallRef(id="toolu_a", name="list_directory", arguments='{"path":"dir0"}'),
        ToolCallRef(id="toolu_b"),
    ]
    assert record.complete is False


def test_stream_ended_by_an_error_event_keeps_only_blocks_that_stopped() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    raw = sse(MESSAGE_START, *THINKING_EVENTS[:4], overloaded)  # no signature, no stop, no message_stop
    assert tap_records(raw, sse=True, size=None) == []


def test_interleaved_thinking_keeps_the_layout() -> None:
    second = {"type": "thinking", "thinking": "Now the other one.", "signature": "EqSecond=="}
    raw = sse(
        MESSAGE_START,
        *THINKING_EVENTS,
        *tool_use_events(1, "toolu_a", '{"path": "dir0"}'),
        start(2, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(2, {"type": "thinking_delta", "thinking": second["thinking"]}),
        delta(2, {"type": "signature_delta", "signature": second["signature"]}),
        stop(2),
        *tool_use_events(3, "toolu_b", '{"path": "dir1"}'),
        {"type": "message_stop"},
    )
    (record,) = tap_records(raw, sse=True, size=5)
    assert record.fields["thinking_blocks"] == [THINKING, second]
    assert record.fields["thinking_layout"] == ["thinking", "tool_use", "thinking", "tool_use"]
    assert record.fields["thinking"] == THINKING["thinking"] + "\n\n" + second["thinking"]


@pytest.mark.parametrize(
    "doc",
    [None, [], "text", {"content": "text"}, {"content": [None, 3, {"type": "thinking"}]}, {"id": 5, "content": [{}]}],
)
def test_odd_documents_do_not_raise(doc: object) -> None:
    reader = FORMAT.reader()
    reader.feed_document(doc)
    records = reader.records(complete=True)
    assert records == [] or records[0].fields["thinking_blocks"] == [{"type": "thinking"}]


@pytest.mark.parametrize(
    "data",
    [
        b'{"type":"content_block_start","index":"0","content_block":{"type":"thinking"}}',
        b'{"type":"content_block_start","index":0,"content_block":"thinking"}',
        b'{"type":"content_block_delta","index":9,"delta":{"type":"thinking_delta","thinking":"x"}}',
        b'{"type":"content_block_delta","index":0,"delta":"thinking_delta"}',
        b'{"type":"message_start","message":"thinking"}',
        b'["thinking"]',
    ],
)
def test_odd_events_do_not_raise(data: bytes) -> None:
    reader = FORMAT.reader()
    reader.feed_event(SSEEvent(data, None))
    assert reader.records(complete=True) == []


# claims and cheap checks ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "method, path, body, claimed",
    [
        ("POST", "/v1/messages", b'{"model":"claude","messages":[]}', True),
        ("POST", "/v1/messages?beta=true", b'{"messages":[]}', True),
        ("POST", "/anthropic/v1/messages/", b'{"messages":[]}', True),
        ("POST", "/messages", b'{"messages":[]}', True),
        ("GET", "/v1/messages", b'{"messages":[]}', False),
        ("POST", "/v1/messages/count_tokens", b'{"messages":[]}', False),
        ("POST", "/v1/messages/batches", b'{"requests":[{"params":{"messages":[]}}]}', False),
        ("POST", "/v1/threads/thread_abc/messages", b'{"role":"user","content":"hi"}', False),
        ("POST", "/v1/threads/thread_abc/messages", b'{"role":"user","content":"messages"}', False),
        ("POST", "/v1/threads/thread_abc/messages", b'{"metadata":{"messages":"1"}}', False),
        ("POST", "/v1/messages", b'{"prompt":"hi"}', False),
        ("POST", "/v1/chat/completions", b'{"messages":[]}', False),
    ],
)
def test_claims(method: str, path: str, body: bytes, claimed: bool) -> None:
    assert FORMAT.claims(method, path, body) is claimed


def test_registered_and_claimed_by_the_dispatcher() -> None:
    raw = (FIXTURES / "pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_1_request.json").read_bytes()
    assert claim("POST", "/v1/messages", raw) is not None
    assert claim("POST", "/v1/messages", raw).name == "anthropic_messages"
    assert FORMAT.request_model("/v1/messages", raw, None) == "claude-sonnet-4-0"


@pytest.mark.parametrize(
    "name, needs",
    [
        ("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_0_request.json", False),  # no tool_use yet
        ("pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_1_request.json", True),
        ("pydanticai_claude45_redacted_thinking_roundtrip_0_request.json", False),
        ("pydanticai_claude45_redacted_thinking_roundtrip_1_request.json", False),
        ("pydanticai_claude45_redacted_thinking_stream_0_request.json", False),
    ],
)
def test_may_need_repair(name: str, needs: bool) -> None:
    assert FORMAT.may_need_repair((FIXTURES / name).read_bytes()) is needs


def test_may_need_repair_needs_thinking_and_tool_use() -> None:
    assert FORMAT.may_need_repair(b'{"messages":[{"content":[{"type":"tool_use"}]}]}') is False
    assert FORMAT.may_need_repair(b'{"thinking":{"type":"enabled"},"messages":[{"content":[]}]}') is False
    assert FORMAT.may_need_repair(b'{"thinking": {"type": "adaptive"}, "x": [{"type": "tool_use"}]}') is True


# repair --------------------------------------------------------------------------------------
def stored(records: list[ReasoningRecord]) -> dict[str, ReasoningRecord]:
    return {key: r for r in records for key in r.keys()}


def cached_for(doc: dict, records: list[ReasoningRecord], model: str | None = MODEL) -> CacheView:
    """What the proxy would find in a cache holding `records`, for this request."""
    everything = stored(records)
    return CacheView({k: everything[k] for k in FORMAT.lookup_keys(doc, model) if k in everything}, model)


def record(*ids: str, blocks: list[dict] | None = None, model: str | None = MODEL, **fields: object) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="anthropic_messages",
        fields={"thinking_blocks": blocks if blocks is not None else [THINKING], **fields},
        tool_calls=[ToolCallRef(id=i, name="list_directory", arguments=canonical_arguments({"path": i})) for i in ids],
        response_id="msg_1",
        request_model=model,
    )


def use(call_id: str, path: str | None = None) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "list_directory", "input": {"path": path or call_id}}


def result(*ids: str) -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "a.txt"} for i in ids]}


def conversation(*messages: dict, thinking: object = None) -> dict:
    return {
        "model": MODEL,
        "max_tokens": 1024,
        "thinking": thinking if thinking is not None else {"type": "enabled", "budget_tokens": 1024},
        "messages": [{"role": "user", "content": "What is in deleteme?"}, *messages],
    }


def test_pydanticai_tool_round_trip_is_restored_exactly(tmp_path: Path) -> None:
    """Strip request 1's thinking block, capture response 0, and repair gives back request 1 byte for byte."""
    request_1 = (FIXTURES / "pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_1_request.json").read_bytes()
    response_0 = (FIXTURES / "pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_0_response_200.json").read_bytes()
    expected = jsoncodec.loads(request_1)
    doc = copy.deepcopy(expected)
    doc["messages"][1]["content"] = [b for b in doc["messages"][1]["content"] if b["type"] != "thinking"]

    (captured,) = tap_records(response_0, sse=False, size=3)
    model = FORMAT.request_model("/v1/messages", request_1, doc)
    captured = captured.model_copy(update={"request_model": model})
    # Through the real cache: the blocks must come out of SQLite with their keys in the same order.
    store = SQLiteStore(tmp_path / "cache.db", CacheLimits(max_age=3600, max_entries=100))
    store.put("scope", captured.keys(), captured)
    cache = CacheView(store.get_many("scope", FORMAT.lookup_keys(doc, model)), model)
    store.close()
    actions = FORMAT.repair(doc, cache, CONTEXT)

    assert jsoncodec.dumps(doc) == jsoncodec.dumps(expected)
    assert [a.describe() for a in actions] == [
        "inserted thinking before messages[1].content[1] (tool call toolu_01YGzqpRE16Vricda3Aqcejo)"
    ]
    assert actions[0].response_id == "msg_01WvueFjZVbHcj4H4zUzeGv2" and actions[0].via == "id"
    assert FORMAT.repair(doc, cache, CONTEXT) == []


def test_pydanticai_redacted_round_trip_text_only_turn_is_left_alone() -> None:
    """The capture is exactly what request 1 replays; a text-only turn needs no repair and gets none."""
    request_1 = jsoncodec.loads(
        (FIXTURES / "pydanticai_claude45_redacted_thinking_roundtrip_1_request.json").read_bytes()
    )
    response_0 = (FIXTURES / "pydanticai_claude45_redacted_thinking_roundtrip_0_response_200.json").read_bytes()
    (captured,) = tap_records(response_0, sse=False, size=None)
    assert [json_of(b) for b in captured.fields["thinking_blocks"]] == [json_of(request_1["messages"][1]["content"][0])]
    assert captured.keys() == []  # no tool_use to link the blocks to: logged, not stored

    stripped = copy.deepcopy(request_1)
    stripped["messages"][1]["content"] = stripped["messages"][1]["content"][1:]
    before = jsoncodec.dumps(stripped)
    assert FORMAT.lookup_keys(stripped, MODEL) == []
    assert FORMAT.repair(stripped, CacheView({}, MODEL), CONTEXT) == []
    assert jsoncodec.dumps(stripped) == before


def test_restores_the_blocks_before_text_and_tool_use() -> None:
    doc = conversation(
        {"role": "assistant", "content": [{"type": "text", "text": "I will look."}, use("toolu_a")]}, result("toolu_a")
    )
    actions = FORMAT.repair(doc, cached_for(doc, [record("toolu_a", blocks=[THINKING, REDACTED])]), CONTEXT)
    assert [json_of(b) for b in doc["messages"][1]["content"]] == [
        json_of(THINKING),
        json_of(REDACTED),
        json_of({"type": "text", "text": "I will look."}),
        json_of(use("toolu_a")),
    ]
    assert [a.describe() for a in actions] == [
        "inserted thinking, redacted_thinking before messages[1].content[2] (tool call toolu_a)"
    ]
    assert (actions[0].kind, actions[0].index, actions[0].fields) == ("inserted", 1, ["thinking", "redacted_thinking"])


def test_restored_blocks_are_copies() -> None:
    cached = record("toolu_a")
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"))
    FORMAT.repair(doc, cached_for(doc, [cached]), CONTEXT)
    doc["messages"][1]["content"][0]["thinking"] = "changed later by someone"
    assert cached.fields["thinking_blocks"] == [THINKING]


@pytest.mark.parametrize("thinking", [{"type": "disabled"}, {"budget_tokens": 1024}, "enabled", None])
def test_no_repair_unless_thinking_is_enabled(thinking: object) -> None:
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"))
    if thinking is None:
        del doc["thinking"]
    else:
        doc["thinking"] = thinking
    before = copy.deepcopy(doc)
    assert FORMAT.lookup_keys(doc, MODEL) == []
    assert FORMAT.repair(doc, CacheView(stored([record("toolu_a")]), MODEL), CONTEXT) == []
    assert doc == before


def test_adaptive_thinking_counts_as_enabled() -> None:
    doc = conversation(
        {"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"), thinking={"type": "adaptive"}
    )
    assert len(FORMAT.repair(doc, cached_for(doc, [record("toolu_a")]), CONTEXT)) == 1
    assert doc["messages"][1]["content"][0] == THINKING


@pytest.mark.parametrize(
    "own", [dict(THINKING, signature="client-chosen"), REDACTED, dict(THINKING, thinking="edited")]
)
def test_a_thinking_block_the_client_sent_is_never_touched(own: dict) -> None:
    content = [{"type": "text", "text": "Looking."}, own, use("toolu_a")]  # even out of place
    doc = conversation({"role": "assistant", "content": copy.deepcopy(content)}, result("toolu_a"))
    assert FORMAT.repair(doc, cached_for(doc, [record("toolu_a")]), CONTEXT) == []
    assert doc["messages"][1]["content"] == content


def test_parallel_tool_use_found_by_any_of_its_ids() -> None:
    doc = conversation(
        {"role": "assistant", "content": [use("toolu_unknown"), use("toolu_b")]}, result("toolu_unknown", "toolu_b")
    )
    (action,) = FORMAT.repair(doc, cached_for(doc, [record("toolu_a", "toolu_b")]), CONTEXT)
    assert action.tool_call_id == "toolu_b" and action.via == "id"
    assert doc["messages"][1]["content"] == [THINKING, use("toolu_unknown"), use("toolu_b")]


def test_rewritten_ids_fall_back_to_name_and_input() -> None:
    cached = record("toolu_a", "toolu_b")
    doc = conversation(
        {"role": "assistant", "content": [use("call_1", "toolu_a"), use("call_2", "toolu_b")]},
        result("call_1", "call_2"),
    )
    (action,) = FORMAT.repair(doc, cached_for(doc, [cached]), CONTEXT)
    assert (action.via, action.tool_call_id) == ("fingerprint", "toolu_a")
    assert action.describe() == (
        "inserted thinking before messages[1].content[1] (tool call toolu_a, matched by name and arguments)"
    )
    assert doc["messages"][1]["content"][0] == THINKING


def test_input_spelling_does_not_matter_for_the_fallback() -> None:
    cached = ReasoningRecord(
        wire_format="anthropic_messages",
        fields={"thinking_blocks": [THINKING]},
        tool_calls=[ToolCallRef(id="toolu_a", name="search", arguments='{"q":"x","limit":2}')],
        request_model=MODEL,
    )
    block = {"type": "tool_use", "id": "renamed", "name": "search", "input": {"limit": 2, "q": "x"}}
    doc = conversation({"role": "assistant", "content": [block]}, result("renamed"))
    assert [a.via for a in FORMAT.repair(doc, cached_for(doc, [cached]), CONTEXT)] == ["fingerprint"]


def test_records_of_another_model_are_not_replayed() -> None:
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"))
    cache = cached_for(doc, [record("toolu_a", model="claude-opus-4-1")])
    assert FORMAT.repair(doc, cache, CONTEXT) == []
    assert cache.mismatched == {"toolu_a": "claude-opus-4-1"}
    assert doc["messages"][1]["content"] == [use("toolu_a")]


def test_repair_is_idempotent() -> None:
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"))
    cache = cached_for(doc, [record("toolu_a", blocks=[THINKING, REDACTED])])
    assert len(FORMAT.repair(doc, cache, CONTEXT)) == 1
    once = jsoncodec.dumps(doc)
    assert FORMAT.repair(doc, cached_for(doc, [record("toolu_a", blocks=[THINKING, REDACTED])]), CONTEXT) == []
    assert jsoncodec.dumps(doc) == once


def test_every_assistant_message_of_the_current_loop_is_repaired() -> None:
    second = dict(THINKING, thinking="Second step.", signature="EqSecond==")
    doc = conversation(
        {"role": "assistant", "content": [use("toolu_a")]},
        result("toolu_a"),
        {"role": "assistant", "content": [{"type": "text", "text": "More."}, use("toolu_b")]},
        result("toolu_b"),
    )
    actions = FORMAT.repair(doc, cached_for(doc, [record("toolu_a"), record("toolu_b", blocks=[second])]), CONTEXT)
    assert [(a.location, a.tool_call_id) for a in actions] == [
        ("messages[1].content[1]", "toolu_a"),
        ("messages[3].content[1]", "toolu_b"),
    ]
    assert doc["messages"][1]["content"][0] == THINKING
    assert doc["messages"][3]["content"][0] == second


def test_finished_turns_before_the_last_prompt_are_left_alone() -> None:
    """The API only requires the blocks of the loop in progress; earlier turns may omit them."""
    old_turn = {"role": "assistant", "content": [use("toolu_old")]}
    doc = conversation(
        copy.deepcopy(old_turn),
        result("toolu_old"),
        {"role": "assistant", "content": "Two files."},
        {"role": "user", "content": [{"type": "text", "text": "And now?"}]},
        {"role": "assistant", "content": [use("toolu_new")]},
        result("toolu_new"),
    )
    cache = cached_for(doc, [record("toolu_old"), record("toolu_new")])
    assert "toolu_old" not in cache.found
    assert [a.location for a in FORMAT.repair(doc, cache, CONTEXT)] == ["messages[5].content[1]"]
    assert doc["messages"][1] == old_turn


def test_tool_results_with_text_and_split_user_messages_continue_the_loop() -> None:
    doc = conversation(
        {"role": "assistant", "content": [use("toolu_a")]},
        result("toolu_a"),
        {"role": "user", "content": "Also, be brief."},  # merged by the API into the tool_result turn
    )
    assert len(FORMAT.repair(doc, cached_for(doc, [record("toolu_a")]), CONTEXT)) == 1


def test_last_assistant_message_is_always_a_candidate() -> None:
    # A prompt after the tool_use (an invalid history, but the API checks this message first).
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, {"role": "user", "content": "Go on."})
    assert len(FORMAT.repair(doc, cached_for(doc, [record("toolu_a")]), CONTEXT)) == 1


def test_interleaved_blocks_go_back_to_their_places() -> None:
    second = dict(THINKING, thinking="Now the other one.", signature="EqSecond==")
    layout = ["thinking", "text", "tool_use", "thinking", "tool_use"]
    cached = record("toolu_a", "toolu_b", blocks=[THINKING, second], thinking_layout=layout)
    text = {"type": "text", "text": "Looking."}
    doc = conversation(
        {"role": "assistant", "content": [text, use("toolu_a"), use("toolu_b")]}, result("toolu_a", "toolu_b")
    )
    (action,) = FORMAT.repair(doc, cached_for(doc, [cached]), CONTEXT)
    assert doc["messages"][1]["content"] == [THINKING, text, use("toolu_a"), second, use("toolu_b")]
    assert action.location == "messages[1].content[1]"

    # The client dropped the text block too: the layout no longer fits, so every block leads.
    doc = conversation({"role": "assistant", "content": [use("toolu_a"), use("toolu_b")]}, result("toolu_a", "toolu_b"))
    FORMAT.repair(doc, cached_for(doc, [cached]), CONTEXT)
    assert doc["messages"][1]["content"] == [THINKING, second, use("toolu_a"), use("toolu_b")]


@pytest.mark.parametrize(
    "doc",
    [
        None,
        [],
        "text",
        {"thinking": {"type": "enabled"}, "messages": "hello"},
        {"thinking": {"type": "enabled"}, "messages": [None, 3, "x", {"role": "assistant"}]},
        conversation({"role": "assistant", "content": "I will call a tool."}, result("toolu_a")),
        conversation({"role": "assistant", "content": None}),
        conversation({"role": "assistant", "content": [None, "text", 3]}),
        conversation({"role": "assistant", "content": [{"type": "tool_use"}]}),
        conversation({"role": "assistant", "content": [{"type": "tool_use", "id": 5, "name": None, "input": "x"}]}),
        conversation({"role": "user", "content": [use("toolu_a")]}),
    ],
)
def test_odd_shapes_are_left_alone(doc: object) -> None:
    before = copy.deepcopy(doc)
    cache = CacheView(stored([record("toolu_a")]), MODEL)
    assert FORMAT.repair(doc, cache, CONTEXT) == []
    assert doc == before
    FORMAT.lookup_keys(doc, MODEL)  # must not raise either


def test_non_dict_blocks_beside_a_tool_use_do_not_stop_the_repair() -> None:
    doc = conversation({"role": "assistant", "content": [None, use("toolu_a")]}, result("toolu_a"))
    assert len(FORMAT.repair(doc, cached_for(doc, [record("toolu_a")]), CONTEXT)) == 1
    assert doc["messages"][1]["content"] == [THINKING, None, use("toolu_a")]


@pytest.mark.parametrize("blocks", [[], [{"type": "text", "text": "x"}], ["thinking"]])
def test_a_record_without_usable_blocks_is_not_replayed(blocks: list) -> None:
    doc = conversation({"role": "assistant", "content": [use("toolu_a")]}, result("toolu_a"))
    assert FORMAT.repair(doc, cached_for(doc, [record("toolu_a", blocks=blocks)]), CONTEXT) == []
    assert doc["messages"][1]["content"] == [use("toolu_a")]


def test_lookup_keys_cover_the_candidates_only() -> None:
    doc = conversation(
        {"role": "assistant", "content": [THINKING, use("toolu_kept")]},
        result("toolu_kept"),
        {"role": "assistant", "content": [use("toolu_a")]},
        result("toolu_a"),
    )
    keys = FORMAT.lookup_keys(doc, MODEL)
    assert keys[0] == "toolu_a" and len(keys) == 2 and keys[1].startswith("fp:")
