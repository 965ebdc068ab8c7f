"""A turn read from where its conversation's last request ended sends on what reading it whole would: the same
bytes, the same repairs, the same flow comment, turn after turn, for each format that reads turns that way."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import tracemalloc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.cache import CacheLimits, open_store
from llm_reasoning_proxy.request.history import HistoryMemory, Remembered, list_bounds
from llm_reasoning_proxy.shared import jsoncodec
from llm_reasoning_proxy.shared.flow_meta import META
from llm_reasoning_proxy.shared.records import ActionTally, ReasoningRecord, RepairAction, ToolCallRef
from llm_reasoning_proxy.shared.sizes import action_size, parsed_size, record_size
from mitmproxy import http
from mitmproxy.flow import Error
from mitmproxy.test import taddons, tflow

from tests.support.addon_context import addon_context
from tests.support.scope import request_scope

URL = "https://api.example.test"
HEADERS = {"authorization": "Bearer sk-test-resume", "content-type": "application/json"}


@pytest.fixture
def addons(tmp_path: Any) -> Iterator[tuple[list[Any], taddons.context]]:
    made = make_addons()
    with addon_context(*made) as tctx:
        tctx.configure(made[0], llm_cache=str(tmp_path / "cache.db"), llm_log=str(tmp_path / "events.jsonl"))
        yield made, tctx


def make_flow(path: str, doc: dict[str, Any], *, spaced: bool = True) -> http.HTTPFlow:
    body = json.dumps(doc).encode() if spaced else json.dumps(doc, separators=(",", ":")).encode()
    flow = tflow.tflow(req=http.Request.make("POST", URL + path, body, HEADERS))
    flow.response = None
    return flow


def store(made: list[Any], path: str, record: ReasoningRecord) -> None:
    scope = request_scope(http.Request.make("POST", URL + path, b"{}", HEADERS))
    made[0].store.put(str(scope), record.keys(), record)


def both_ways(made: list[Any], path: str, doc: dict[str, Any]) -> tuple[http.HTTPFlow, http.HTTPFlow]:
    """The request as the proxy reads it (from what it remembers), then as it reads it whole (memory empty)."""
    runtime, repair = made[0], made[1]
    resumed = make_flow(path, doc)
    repair.request(resumed)
    remembered, runtime.history = runtime.history, HistoryMemory()
    try:
        whole = make_flow(path, doc)
        repair.request(whole)
    finally:
        runtime.history = remembered
    return resumed, whole


def same(resumed: http.HTTPFlow, whole: http.HTTPFlow, made: list[Any]) -> None:
    assert resumed.request.content == whole.request.content
    assert resumed.comment == whole.comment
    plans = [made[0].recall_plan(flow.id) for flow in (resumed, whole)]
    assert [p.actions if p else None for p in plans[:1]] == [p.actions if p else None for p in plans[1:]]
    if plans[0] is not None:
        assert sorted(e.response_id or "" for e in plans[0].cache_entries()) == sorted(
            e.response_id or "" for e in plans[1].cache_entries()
        )


def run_session(
    made: list[Any], path: str, turns: Iterator[dict[str, Any]], before: Callable[[int], None] = lambda turn: None
) -> list[bool]:
    """Each turn both ways, compared; whether each was read from memory."""
    read_from_memory = []
    for number, doc in enumerate(turns):
        before(number)
        resumed, whole = both_ways(made, path, doc)
        same(resumed, whole, made)
        read_from_memory.append(bool(resumed.metadata[META].get("resumed")))
    return read_from_memory


# --- chat completions ------------------------------------------------------------------------------------------


MODEL = "gpt-5-mini"


def chat_call(i: int) -> dict[str, Any]:
    return {"id": f"call_{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"n": {i}}}'}}


def chat_record(i: int) -> ReasoningRecord:
    call = chat_call(i)
    return ReasoningRecord(
        wire_format="chat_completions",
        request_model=MODEL,
        response_id=f"r{i}",
        fields={"reasoning_text": f"thinking {i}", "reasoning_opaque": f"opaque-{i}-" + "x" * 40},
        tool_calls=[ToolCallRef(id=call["id"], name="read", arguments=call["function"]["arguments"])],
    )


def chat_turns(count: int, *, keep: bool, prompts: tuple[int, ...] = (), split: tuple[int, ...] = ()) -> Iterator[dict]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    for i in range(count):
        if i in prompts:
            messages.append({"role": "user", "content": f"and now {i}"})
        assistant: dict[str, Any] = {"role": "assistant", "content": [] if not keep else None}
        assistant["tool_calls"] = [chat_call(i)]
        if keep:
            assistant |= {"reasoning_text": f"thinking {i}", "reasoning_opaque": f"opaque-{i}-" + "x" * 40}
        if i in split:  # the client sent the turn's text apart from its tool calls
            messages.append({"role": "assistant", "content": f"Let me read {i}."})
        messages.append(assistant)
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"result {i} é"})
        yield {"model": MODEL, "messages": messages, "tools": [{"type": "function"}], "stream": True}


@pytest.mark.parametrize("keep", [False, True], ids=["drops-state", "keeps-state"])
def test_a_chat_session_is_read_turn_by_turn_as_it_would_be_whole(addons: Any, keep: bool) -> None:
    made, _ = addons
    for i in range(12):
        store(made, "/v1/chat/completions", chat_record(i))
    resumed = run_session(made, "/v1/chat/completions", chat_turns(12, keep=keep))
    assert resumed[0] is False and all(resumed[1:]), resumed


def test_a_conversation_that_holds_all_of_another_goes_on_from_its_own_last_turn(addons: Any) -> None:
    """Two conversations in one scope, the longer holding all of the shorter (a fork, or a retry from an earlier
    turn), their turns sent in turn: each goes on from its own last request, not from the other's latest."""
    made, _ = addons
    for i in range(16):
        store(made, "/v1/chat/completions", chat_record(i))
    docs = [json.loads(json.dumps(doc)) for doc in chat_turns(16, keep=True)]
    shorter, longer = [], []
    for k in range(6):
        for turns, doc in ((shorter, docs[k]), (longer, docs[8 + k])):
            resumed, whole = both_ways(made, "/v1/chat/completions", doc)
            same(resumed, whole, made)
            turns.append(bool(resumed.metadata[META].get("resumed")))
    # The longer one's first turn goes on from the shorter's (it holds it all), so the shorter's next is read whole.
    assert shorter[:2] == [False, False] and all(shorter[2:]), shorter
    assert all(longer), longer


def test_the_memory_continues_the_request_a_body_goes_furthest_beyond() -> None:
    memory = HistoryMemory()
    memory.remember("a", remembered(b'{"messages":[1,2,3]}'))
    memory.remember("a", remembered(b'{"messages":[1]}'))  # the latest, which the body also continues
    matched = memory.match("a", b'{"messages":[1,2,3,4]}')
    assert matched is not None and matched[1] == b"4"
    matched = memory.match("a", b'{"messages":[1,5]}')
    assert matched is not None and matched[1] == b"5"


def test_a_new_prompt_or_a_split_turn_is_read_whole_once_and_the_rest_resumed(addons: Any) -> None:
    made, _ = addons
    for i in range(12):
        store(made, "/v1/chat/completions", chat_record(i))
    resumed = run_session(made, "/v1/chat/completions", chat_turns(12, keep=False, prompts=(4, 9), split=(6,)))
    # A prompt ends the tool loop: its turn is read whole. The split turn's merge joins two new messages.
    assert resumed == [False, True, True, True, False, True, True, True, True, False, True, True], resumed


def test_an_answer_cached_after_its_turn_was_read_is_put_back_on_the_next(addons: Any) -> None:
    made, _ = addons
    for i in range(8):
        if i != 5:
            store(made, "/v1/chat/completions", chat_record(i))

    def late(turn: int) -> None:
        if turn == 6:  # the answer of turn 5 is stored only now (a stream whose capture ended late)
            store(made, "/v1/chat/completions", chat_record(5))

    resumed = run_session(made, "/v1/chat/completions", chat_turns(8, keep=False), before=late)
    assert resumed == [False, True, True, True, True, True, False, True], resumed


def test_a_refused_turn_is_not_resumed(addons: Any) -> None:
    made, _ = addons
    for i in range(4):
        store(made, "/v1/chat/completions", chat_record(i))
    turns = list(chat_turns(4, keep=False))
    first = make_flow("/v1/chat/completions", turns[0])
    made[1].request(first)
    assert len(made[0].history) == 1
    first.response = http.Response.make(400, b'{"error": {"message": "bad"}}', {"content-type": "application/json"})
    made[3].response(first)
    assert len(made[0].history) == 0


def test_the_plan_of_a_request_whose_answer_never_came_is_let_go_of(addons: Any) -> None:
    """A repaired request's plan (the records it found, the arguments it asked about) waits for its answer, which it
    explains if it is an error; a flow that ends without one (the client or the upstream hung up) lets it go. Before,
    it stayed until 1,024 later plans pushed it out, whatever it held."""
    made, _ = addons
    store(made, "/v1/chat/completions", chat_record(0))
    flow = make_flow("/v1/chat/completions", next(chat_turns(1, keep=False)))
    made[1].request(flow)
    assert flow.metadata[META].get("repaired")
    flow.error = Error("client disconnected")
    for addon in made:
        if hasattr(addon, "error"):
            addon.error(flow)
    assert made[0].recall_plan(flow.id) is None


# --- Responses ---------------------------------------------------------------------------------------------


def responses_record(i: int) -> ReasoningRecord:
    item = {"id": f"rs_{i}", "type": "reasoning", "summary": [], "encrypted_content": f"gAAAA{i}" + "y" * 40}
    call = ToolCallRef(id=f"call_r{i}", aliases=[f"fc_{i}"], name="read", arguments=f'{{"n": {i}}}')
    return ReasoningRecord(
        wire_format="openai_responses", request_model="gpt-5", response_id=f"resp_{i}", fields=item, tool_calls=[call]
    )


def responses_turns(count: int) -> Iterator[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(count):
        call = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_r{i}", "name": "read"}
        items.append(call | {"arguments": f'{{"n": {i}}}'})
        items.append({"type": "function_call_output", "call_id": f"call_r{i}", "output": f"result {i}"})
        yield {"model": "gpt-5", "input": items, "store": False, "include": ["reasoning.encrypted_content"]}


def test_a_responses_session_is_read_turn_by_turn_as_it_would_be_whole(addons: Any) -> None:
    made, _ = addons
    for i in range(10):
        store(made, "/v1/responses", responses_record(i))
    resumed = run_session(made, "/v1/responses", responses_turns(10))
    assert resumed[0] is False and all(resumed[1:]), resumed


# --- Anthropic ---------------------------------------------------------------------------------------------


def anthropic_record(i: int) -> ReasoningRecord:
    block = {"type": "thinking", "thinking": f"read {i}", "signature": f"Eq{i}" + "z" * 40}
    use = ToolCallRef(id=f"toolu_{i}", name="read", arguments=json.dumps({"n": i}))
    return ReasoningRecord(
        wire_format="anthropic_messages",
        request_model="claude-sonnet-4-5",
        response_id=f"msg_{i}",
        fields={"thinking_blocks": [block]},
        tool_calls=[use],
    )


def anthropic_turns(count: int, prompts: tuple[int, ...] = ()) -> Iterator[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(count):
        if i in prompts:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
            messages.append({"role": "user", "content": f"now {i}"})
        use = {"type": "tool_use", "id": f"toolu_{i}", "name": "read", "input": {"n": i}}
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": f"result {i}"}
        messages.append({"role": "user", "content": [result]})
        yield {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": messages,
        }


def test_an_anthropic_session_is_read_turn_by_turn_as_it_would_be_whole(addons: Any) -> None:
    made, _ = addons
    for i in range(10):
        store(made, "/v1/messages", anthropic_record(i))
    resumed = run_session(made, "/v1/messages", anthropic_turns(10, prompts=(5,)))
    assert resumed == [False, True, True, True, True, False, True, True, True, True], resumed


# --- bytes ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "last_item", "after"),
    [
        (b'{"messages": [1, 2], "tools": [{"a": [3]}], "stream": true}', b"2", b'], "tools"'),
        (b'{"model":"m","messages":[]}', b"[", b"]}"),
        (b'{ "messages" : [ {"x": "]"} ] \n}\n', b'"]"}', b"] \n}"),
        (b'{"tools": {"messages": [9]}, "messages": [1]}', b"1", b"]}"),
    ],
)
def test_the_end_of_the_list_is_found_in_any_spacing(body: bytes, last_item: bytes, after: bytes) -> None:
    bounds = list_bounds(body, "messages")
    assert bounds is not None
    end, close, _ = bounds
    assert body[:end].endswith(last_item) and body[close:].startswith(after)
    assert body[end:close].strip() == b""


@pytest.mark.parametrize("body", [b"[1, 2]", b'{"messages": [1], "t\\u0061": 1}', b"not json"])
def test_a_body_whose_list_cannot_be_told_apart_is_not_remembered(body: bytes) -> None:
    assert list_bounds(body, "messages") is None


def remembered(body: bytes) -> Remembered:
    return Remembered(
        body=body,
        items_end=len(body) - 2,
        tail=b"]}",
        model=None,
        others={},
        window=[],
        sent_count=1,
        sent=None,
        actions=[],
        tally=ActionTally(),
        found={},
        used=[],
        mismatched={},
    )


def test_the_memory_keeps_to_its_bounds_after_a_match_emptied_a_key() -> None:
    memory = HistoryMemory(max_entries=2)
    memory.remember("a", remembered(b'{"messages":[1]}'))
    assert memory.match("a", b'{"messages":[1,2]}') is not None  # key "a" holds nothing now
    memory.remember("b", remembered(b'{"messages":[3]}'))
    memory.remember("c", remembered(b'{"messages":[4]}'))
    memory.remember("d", remembered(b'{"messages":[5]}'))
    assert len(memory) == 2
    assert memory.match("b", b'{"messages":[3,6]}') is None and memory.match("d", b'{"messages":[5,6]}') is not None


def test_the_memory_counts_what_a_request_made_beside_its_bytes() -> None:
    body = b'{"messages":[1]}'
    bare = remembered(body).size
    actions = [RepairAction("content_null", f"messages[{i}]", i) for i in range(1000)]
    entry = dataclasses.replace(remembered(body), actions=actions, carried=sum(map(action_size, actions)))
    assert bare < len(body) + 1000 and entry.size >= len(body) + 1000 * 100
    memory = HistoryMemory(max_bytes=50_000)
    memory.remember("a", entry)
    assert len(memory) == 0  # past the bound on its own


async def test_a_request_the_memory_drops_is_let_go_of_on_the_loops_next_turn() -> None:
    """Freeing a body of megabytes costs a tenth of a millisecond: not while the request that dropped it is read."""

    class Held:
        pass

    held = Held()
    memory = HistoryMemory()
    memory.remember("a", dataclasses.replace(remembered(b'{"messages":[1]}'), others={"held": held}))
    assert memory.match("a", b'{"messages":[1,2]}') is not None
    dropped = weakref.ref(held)
    del held
    memory.release()
    assert dropped() is not None
    await asyncio.sleep(0)
    assert dropped() is None


# --- what the memory holds ----------------------------------------------------------------------------------------


def traced_while(make: Callable[[], Any]) -> tuple[Any, int]:
    """What `make` returns, and the bytes of Python memory it left allocated (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        made = make()
        return made, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def many(item: bytes, count: int = 20_000) -> bytes:
    return b"[" + b",".join([item] * count) + b"]"


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        many(b"[]"),
        many(b"{}"),
        many(b'{"a":0}'),
        b"[" + b",".join(b'{"k%d":[]}' % n for n in range(20_000)) + b"]",
        b"{" + b",".join(b'"k%d":0' % n for n in range(20_000)) + b"}",
        many(b"1000"),
        many(b"1.50"),  # kept as written: an object and its text
        many(b'"ab"'),
        many('"a\U0001f600"'.encode()),  # one character past U+FFFF: four bytes a character
        many(b'"\\ud83d\\ude00"'),
        b'"' + b"a" * 1_000_000 + b'\\u4e00"',  # one escape makes a long ASCII text a string of two bytes a character
        b'"' + b"a" * 1_000_000 + b'\\ud83d\\ude00"',  # and of four
        many(b"[0]"),
        many(b"1" * 4001, 50),  # wider than int() reads: kept as text
        b'{"a":' * 400 + b"0" + b"}" * 400,
        json.dumps(
            {"tools": [{"type": "function", "function": {"name": f"t{n}", "parameters": {}}} for n in range(999)]}
        ).encode(),
    ],
    ids=lambda text: text[:12].decode(errors="replace"),
)
def test_what_a_value_parses_to_is_never_more_than_its_text_says(text: bytes) -> None:
    """`parsed_size` reads the bound off the text, which the history memory counts for what it keeps parsed of a
    request: it is above what CPython really takes, for every shape of JSON that takes the most for its bytes."""
    _, held = traced_while(lambda: jsoncodec.loads_exact(text))
    assert held <= parsed_size(text)


@pytest.mark.slow
def test_records_and_repairs_are_counted_for_what_they_hold() -> None:
    """Cache records as the stores parse them, and repairs with the flow comment's tally of them."""
    texts = [responses_record(n).model_dump_json() for n in range(300)]
    records, held = traced_while(lambda: [ReasoningRecord.model_validate_json(text) for text in texts])
    assert held <= sum(map(record_size, records))

    def repairs() -> list[RepairAction]:
        made = [
            RepairAction("restored", f"messages[{n}]", n, [f"field_{n}"], f"call_{n}", f"r{n}") for n in range(3000)
        ]
        ActionTally().add(made)  # a group each: the most a tally holds
        return made

    actions, held = traced_while(repairs)
    assert held <= sum(map(action_size, actions))


def held_by_memory(made: list[Any], send: Callable[[], Any]) -> tuple[int, int]:
    """What the history memory says it holds after `send`, and what it really held: the Python memory let go of when
    it forgets everything (the cache closed first, so that the records it parsed are the memory's alone)."""
    runtime = made[0]
    tracemalloc.start()
    try:
        send()
        runtime.store.close()
        runtime.store = None
        gc.collect()
        counted, before = runtime.history.held_bytes, tracemalloc.get_traced_memory()[0]
        runtime.history.clear()
        gc.collect()
        return counted, before - tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_the_memory_counts_what_a_request_parses_to_not_only_its_bytes(addons: Any) -> None:
    """A request whose tools are 20,000 empty lists: 60 KB of a body, over a megabyte parsed (before, counted as its
    60 KB: the bound of 128 MiB let the proxy hold 3 GB)."""
    made, _ = addons
    doc = next(chat_turns(1, keep=False)) | {"tools": [[]] * 20_000}

    def send() -> None:
        made[1].request(make_flow("/v1/chat/completions", doc))

    counted, held = held_by_memory(made, send)
    assert held > 1_000_000, held  # remembered, with what it parsed
    assert counted >= held, (counted, held)


@pytest.mark.slow
@pytest.mark.parametrize("keep", [False, True], ids=["drops-state", "keeps-state"])
def test_the_memory_counts_what_a_session_read_turn_by_turn_holds(addons: Any, tmp_path: Any, keep: bool) -> None:
    """Each turn adds what it found and repaired to what the conversation carries on (records, repairs, ids)."""
    made, _ = addons
    settings = made[0].settings
    # Written by another process's store: the proxy's parses them while the memory is measured.
    writer = open_store(str(tmp_path / "cache.db"), CacheLimits(settings.cache_max_age, settings.cache_max_entries))
    scope = request_scope(http.Request.make("POST", URL + "/v1/chat/completions", b"{}", HEADERS))
    for i in range(40):
        writer.put(str(scope), chat_record(i).keys(), chat_record(i))
    writer.close()
    resumed = []

    def send() -> None:
        for doc in chat_turns(40, keep=keep):
            flow = make_flow("/v1/chat/completions", doc)
            made[1].request(flow)
            made[0].recall_plan(flow.id)  # as its answer does: the records are the memory's alone
            resumed.append(bool(flow.metadata[META].get("resumed")))

    counted, held = held_by_memory(made, send)
    assert all(resumed[1:]) and held > 100_000, (resumed, held)
    assert counted >= held, (counted, held)


def test_a_call_like_an_earlier_one_gets_nothing_of_its_reasoning_when_read_from_memory(addons: Any) -> None:
    """A later call with the name and arguments of an earlier one whose capture is in: the earlier call's record is
    the earlier call's, found by its id in the part of the request the memory does not read again."""
    made, _ = addons
    store(made, "/v1/chat/completions", chat_record(0))
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}]
    messages += [{"role": "assistant", "content": None, "tool_calls": [chat_call(0)]}]
    messages += [{"role": "tool", "tool_call_id": "call_0", "content": "r0"}]
    both_ways(made, "/v1/chat/completions", {"model": MODEL, "messages": list(messages), "stream": True})
    like_it = chat_call(0) | {"id": "call_B"}
    messages += [{"role": "assistant", "content": None, "tool_calls": [like_it]}]
    messages += [{"role": "tool", "tool_call_id": "call_B", "content": "rB"}]
    resumed, whole = both_ways(made, "/v1/chat/completions", {"model": MODEL, "messages": messages, "stream": True})
    for flow in (resumed, whole):
        sent = json.loads(flow.request.content)["messages"]
        assert sent[2]["reasoning_opaque"] == chat_record(0).fields["reasoning_opaque"]
        assert "reasoning_opaque" not in sent[4]
