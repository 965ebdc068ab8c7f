"""The proxy hooks, driven in process through mitmproxy's test context."""

from __future__ import annotations

import asyncio
import gc
import io as stdio
import json
import logging
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.answer import tap as response_tap
from llm_reasoning_proxy.answer.tap import ResponseTap
from llm_reasoning_proxy.hooks.runtime import Runtime
from llm_reasoning_proxy.shared.flow_meta import flow_meta
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.wire.chat_completions.format import ChatCompletions
from mitmproxy import http, io
from mitmproxy.test import tflow, tutils

from tests.support.addon_context import addon_context
from tests.support.planted import planted
from tests.support.scope import request_scope

TURN_TWO = {
    "model": "gemini-3-pro-preview",
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [],
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "a"},
    ],
}


@pytest.fixture
def addons(tmp_path: Path) -> Iterator[tuple[Runtime, object, object, Path]]:
    config, repair, capture, _explain = make_addons()[:4]
    log = tmp_path / "events.jsonl"
    with addon_context(config, repair, capture) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log=str(log))
        yield config, repair, capture, log


def chat_flow(doc: object, path: str = "/v1/chat/completions", headers: dict | None = None) -> http.HTTPFlow:
    body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    fields = {"content_type": "application/json", "authorization": "Bearer t1", **(headers or {})}
    request = tutils.treq(method=b"POST", path=path.encode(), content=body, headers=http.Headers(**fields))
    return tflow.tflow(req=request)


def store_turn(config: Runtime, flow: http.HTTPFlow) -> None:
    record = ReasoningRecord(
        wire_format="chat_completions",
        fields={"reasoning_opaque": "OPAQUE"},
        tool_calls=[ToolCallRef(id="call_1")],
        request_model=flow.request.json().get("model"),  # reasoning is only replayed into the model it came from
    )
    config.store.put(str(request_scope(flow.request)), ["call_1"], record)


def answered(repair: object, flow: http.HTTPFlow, status: int = 200) -> None:
    """The provider's answer to a flow, as mitmproxy hands it to the request hook's addon."""
    flow.response = tutils.tresp(status_code=status)
    repair.response(flow)  # type: ignore[attr-defined]


def repaired_events(log: Path) -> list[dict]:
    return [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "repaired"]


def test_request_is_repaired_marked_and_annotated(addons) -> None:
    config, repair, _, log = addons
    config.settings = config.settings.model_copy(update={"keep_bodies": "true"})  # as when flows are saved
    flow = chat_flow(TURN_TWO)
    store_turn(config, flow)
    repair.request(flow)
    sent = flow.request.json()["messages"][1]
    assert sent["reasoning_opaque"] == "OPAQUE" and sent["content"] is None
    assert flow.marked == ":wrench:"
    assert flow.comment.startswith("llm repaired: content [] -> null on messages[1]; restored reasoning_opaque")
    assert flow.metadata["llm"]["repairs"] and flow.metadata["llm"]["format"] == "chat_completions"
    io.FlowWriter(stdio.BytesIO()).add(flow)  # metadata must stay serialisable for -w
    assert '"kind":"repaired"' in log.read_text()


def test_a_turn_that_needs_the_same_repairs_again_logs_them_as_counts(addons, caplog) -> None:
    """Turn 3 of a client that drops state needs turn 2's repairs again: its event and its line only count them."""
    config, repair, _, log = addons
    store_turn(config, chat_flow(TURN_TWO))
    with caplog.at_level(logging.INFO):
        first_flow = chat_flow(TURN_TWO)
        repair.request(first_flow)
        answered(repair, first_flow)
        flow = chat_flow(TURN_TWO)  # the same history again (turn 3 without its own newest message)
        repair.request(flow)
        answered(repair, flow)
    assert flow.request.json()["messages"][1]["reasoning_opaque"] == "OPAQUE"  # repaired all the same
    assert flow.comment.startswith("llm repaired: content [] -> null on messages[1]; restored reasoning_opaque")
    first, again = repaired_events(log)
    assert [a["kind"] for a in first["actions"]] == ["content_null", "restored"]
    assert (first["again"], first["again_by_kind"], first["total"]) == (0, {}, 2)
    assert again["actions"] == [] and again["applied"] is True
    assert (again["again"], again["again_by_kind"], again["total"]) == (2, {"content_null": 1, "restored": 1}, 2)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("llm repaired")]
    assert lines[0].endswith(
        ": content [] -> null on messages[1]; restored reasoning_opaque on messages[1] (tool call call_1)"
    )
    assert lines[1].endswith("/v1/chat/completions: 2 earlier repairs again")


def test_with_repair_off_the_events_say_what_would_be_done_once_too(addons) -> None:
    config, repair, _, log = addons
    config.settings = config.settings.model_copy(update={"repair": False})  # as --set llm_repair=false
    store_turn(config, chat_flow(TURN_TWO))
    for _ in range(2):
        flow = chat_flow(TURN_TWO)
        repair.request(flow)
        answered(repair, flow)
        assert flow.request.json()["messages"][1]["content"] == []  # only observed
    first, again = repaired_events(log)
    assert first["applied"] is False and len(first["actions"]) == 2 and first["again"] == 0
    assert again["applied"] is False and again["actions"] == [] and again["again"] == 2 and again["total"] == 2


def test_other_credential_is_another_scope(addons) -> None:
    config, repair, _, _ = addons
    store_turn(config, chat_flow(TURN_TWO))
    flow = chat_flow(TURN_TWO, headers={"authorization": "Bearer t2"})
    repair.request(flow)
    assert "reasoning_opaque" not in flow.request.json()["messages"][1]


def test_a_credential_that_rotates_with_no_account_in_it_is_said_once_per_host_and_kind(
    addons, caplog: pytest.LogCaptureFixture
) -> None:
    _, repair, _, _ = addons
    oauth = [planted("ya29.", f"a0AfB_token{n}abcdefghijklmnop") for n in range(3)]
    jwt = planted("eyJ", "hbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJl")
    flows = [chat_flow(TURN_TWO, headers={"authorization": f"Bearer {token}"}) for token in [*oauth, jwt]]
    flows.append(chat_flow(TURN_TWO, headers={"authorization": f"Bearer {oauth[0]}"}))
    flows[-1].request.host = "other.example"
    flows.append(chat_flow(TURN_TWO, headers={"authorization": "Bearer sk-a-key-that-does-not-rotate"}))
    with caplog.at_level(logging.WARNING):
        for flow in flows:
            repair.request(flow)
    lines = [r.getMessage() for r in caplog.records if "llm scope:" in r.getMessage()]
    assert len(lines) == 3, lines  # one per (host, kind): the OAuth tokens on the first host, the JWT, the other host
    assert "a Google OAuth access token (ya29.…)" in lines[0] and "a JWT" in lines[1]
    assert "address:22" in lines[0] and "other.example:22" in lines[2]
    assert not any(token[5:] in line for token in oauth for line in lines) and "c2lnbmF0dXJl" not in "".join(lines)


def test_a_failing_cache_leaves_the_request_unchanged(addons, caplog: pytest.LogCaptureFixture) -> None:
    config, repair, _, log = addons
    flow = chat_flow(TURN_TWO)
    original = flow.request.raw_content

    def broken(*args: object) -> dict:
        raise RuntimeError(f"disk on fire, Bearer {planted('sk-', 'should-not-appear-123456')}")

    config.store.get_many = broken  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING):
        repair.request(flow)
    assert flow.request.raw_content == original
    assert not flow.marked
    (line,) = [r.getMessage() for r in caplog.records if "forwarded unchanged" in r.getMessage()]
    assert flow.id in line and "disk on fire" in line and "sk-should-not-appear" not in line
    assert '"kind":"failure"' in log.read_text()


@pytest.mark.parametrize(
    "flow",
    [
        tflow.tflow(req=tutils.treq(method=b"GET", path=b"/v1/chat/completions")),
        tflow.tflow(req=tutils.treq(method=b"POST", path=b"/v1/embeddings", content=b'{"input": "x"}')),
        tflow.tflow(req=tutils.treq(method=b"POST", path=b"/upload", content=b"\x00\xff" * 100)),
    ],
    ids=["get", "other-path", "binary"],
)
def test_other_traffic_is_not_touched(addons, flow: http.HTTPFlow) -> None:
    _, repair, capture, _ = addons
    before = flow.request.raw_content
    repair.request(flow)
    flow.response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=None)
    capture.responseheaders(flow)
    assert flow.request.raw_content == before
    assert "llm" not in flow.metadata and not flow.response.stream


def streamed_flow(repair, capture) -> tuple[http.HTTPFlow, ResponseTap]:
    """A streamed chat request, read by the repair addon, and the tap its answer's headers got."""
    flow = chat_flow({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True})
    repair.request(flow)
    flow.response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=None)
    capture.responseheaders(flow)
    tap = flow.response.stream
    assert isinstance(tap, ResponseTap)
    return flow, tap


def test_a_reader_that_breaks_never_breaks_the_stream(addons) -> None:
    config, repair, capture, _ = addons
    flow, tap = streamed_flow(repair, capture)

    def explode(event: object) -> None:
        raise ValueError("reader bug")

    tap.reader.feed_event = explode  # type: ignore[method-assign]
    pieces = [b'data: {"choices": []}\n\n', b"data: [DONE]\n\n", b""]
    assert [tap(p) for p in pieces] == pieces
    capture.response(flow)
    assert "stream not readable: ValueError: reader bug" in (tap.problem or "")


STREAMED_CALL = [
    b'data: {"id":"r1","model":"m","choices":[{"index":0,"delta":{"reasoning_opaque":"OPQ","tool_calls":'
    b'[{"index":0,"id":"call_7","type":"function","function":{"name":"ls","arguments":"{}"}}]}}]}\n\n',
    b"data: [DONE]\n\n",
]


async def test_a_stream_is_read_once_its_response_hook_returned(addons) -> None:
    """mitmproxy sends the client the end of a stream when the response hooks return: the reading waits until the
    loop's next turn, and is done before the loop reads anything else (the next request finds the entry)."""
    config, repair, capture, _ = addons
    flow, tap = streamed_flow(repair, capture)
    for piece in [*STREAMED_CALL, b""]:
        assert tap(piece) is piece
    capture.response(flow)
    assert "captured" not in flow.metadata["llm"]
    assert not config.store.get_many(str(request_scope(flow.request)), ["call_7"])
    await asyncio.sleep(0)
    assert flow.metadata["llm"]["captured"][0]["tool_calls"] == ["call_7"]
    assert config.store.get_many(str(request_scope(flow.request)), ["call_7"])


def test_a_stream_is_held_unread_up_to_its_bound_and_read_as_it_passes_past_it(monkeypatch) -> None:
    fed: list[bytes] = []

    class Reader(ChatCompletions().reader().__class__):
        def feed_event(self, event) -> None:
            fed.append(event.data)
            super().feed_event(event)

    event = b'data: {"id":"r1","choices":[{"index":0,"delta":{"reasoning_content":"' + b"t" * 100 + b'"}}]}\n\n'
    monkeypatch.setattr(response_tap, "MAX_HELD_STREAM_BYTES", 100 * len(event))
    tap = ResponseTap(Reader(), sse=True, content_encoding=None, read=True, keep_body=False, defer=True)
    for _ in range(100):
        tap(event)
    assert not fed  # held: nothing read while the stream passes
    for _ in range(2 * response_tap.BACKLOG_CHUNKS):
        tap(event)
    assert len(fed) >= 100 + response_tap.BACKLOG_CHUNKS  # past the bound: read in batches as it passes
    assert tap.unread_bytes < response_tap.BACKLOG_BYTES
    tap(b"")
    tap.finish()
    assert len(fed) == 100 + 2 * response_tap.BACKLOG_CHUNKS


def test_a_stream_in_an_encoding_the_proxy_cannot_decode_passes_untouched_and_unread() -> None:
    """The decoder is made when the reading starts, not when the answer's headers come: the stream still goes on
    byte for byte, nothing is read or held once the encoding is known to be unreadable, and the result says why."""
    reader = ChatCompletions().reader()
    tap = ResponseTap(reader, sse=True, content_encoding="x-unknown", read=True, keep_body=False, defer=True)
    for piece in STREAMED_CALL:
        assert tap(piece) is piece
    tap(b"")
    tap.finish()
    assert "unsupported content-encoding 'x-unknown'" in (tap.problem or "")
    assert not reader.records(complete=True) and not tap.unread_bytes
    assert tap(b"more") == b"more" and not tap.unread_bytes  # after the stop nothing more is set aside


def test_a_cut_stream_is_read_at_once(addons) -> None:
    config, repair, capture, _ = addons
    flow, tap = streamed_flow(repair, capture)
    tap(STREAMED_CALL[0])
    capture.error(flow)
    assert flow.metadata["llm"]["captured"][0]["tool_calls"] == ["call_7"]


def test_stream_already_claimed_by_another_addon_is_left_alone(addons) -> None:
    _, repair, capture, _ = addons
    flow = chat_flow({"model": "m", "messages": [], "stream": True})
    repair.request(flow)
    flow.response = tutils.tresp(headers=http.Headers(content_type="text/event-stream"), content=None)

    def theirs(chunk: bytes) -> bytes:
        return chunk

    flow.response.stream = theirs
    capture.responseheaders(flow)
    assert flow.response.stream is theirs


def test_plain_json_answer_is_captured_and_its_body_kept(addons) -> None:
    config, repair, capture, _ = addons
    config.settings = config.settings.model_copy(update={"keep_bodies": "true"})
    flow = chat_flow({"model": "gemini-3-pro-preview", "messages": [{"role": "user", "content": "x"}]})
    repair.request(flow)
    answer = {
        "id": "r1",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "reasoning_opaque": "OPQ",
                    "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
                },
            }
        ],
    }
    body = json.dumps(answer).encode()
    flow.response = tutils.tresp(headers=http.Headers(content_type="application/json"), content=None)
    capture.responseheaders(flow)
    for i in range(0, len(body), 5):
        flow.response.stream(body[i : i + 5])
    flow.response.stream(b"")
    capture.response(flow)
    assert flow.response.content == body
    found = config.store.get_many(flow.metadata["llm"]["scope"], ["call_9"])
    assert found["call_9"].fields == {"reasoning_opaque": "OPQ"}
    assert found["call_9"].request_model == "gemini-3-pro-preview"
    assert flow.comment == "llm captured reasoning_opaque for 1 tool call"


def test_an_answer_without_tool_calls_is_commented_as_one(addons) -> None:
    config, repair, capture, _ = addons
    flow = chat_flow({"model": "deepseek-reasoner", "messages": [{"role": "user", "content": "x"}]})
    repair.request(flow)
    message = {"role": "assistant", "content": "Hello.", "reasoning_content": "Say hello."}
    body = json.dumps({"id": "r2", "choices": [{"index": 0, "message": message}]}).encode()
    flow.response = tutils.tresp(headers=http.Headers(content_type="application/json"), content=None)
    capture.responseheaders(flow)
    flow.response.stream(body)
    flow.response.stream(b"")
    capture.response(flow)
    assert flow.comment == "llm captured reasoning_content for an answer without tool calls"


async def test_a_repair_is_logged_once_its_answer_went_on(addons) -> None:
    """Writing the line is no work the answer waits for: it comes on the loop's turn after the answer went on."""
    config, repair, _, log = addons
    flow = chat_flow(TURN_TWO)
    store_turn(config, flow)
    repair.request(flow)
    await asyncio.sleep(0)  # the request went on: the answer is not in yet
    assert repaired_events(log) == []
    answered(repair, flow)
    assert repaired_events(log) == []
    await asyncio.sleep(0)
    (event,) = repaired_events(log)
    assert event["flow_id"] == flow.id and [a["kind"] for a in event["actions"]] == ["content_null", "restored"]
    answered(repair, flow)  # said once
    await asyncio.sleep(0)
    assert len(repaired_events(log)) == 1


async def test_a_refused_repair_is_logged_before_its_diagnosis(addons) -> None:
    config, repair, _, log = addons
    flow = chat_flow(TURN_TWO)
    store_turn(config, flow)
    repair.request(flow)
    answered(repair, flow, 400)  # the explainer's hook comes next, and writes its line at once
    assert len(repaired_events(log)) == 1


async def test_a_repair_whose_answer_failed_or_never_came_is_logged_all_the_same(addons) -> None:
    config, repair, _, log = addons
    failed, unanswered = chat_flow(TURN_TWO), chat_flow(TURN_TWO)
    store_turn(config, failed)
    repair.request(failed)
    repair.request(unanswered)
    repair.error(failed)  # the connection to the provider broke
    await asyncio.sleep(0)
    assert [e["flow_id"] for e in repaired_events(log)] == [failed.id]
    config.done()  # mitmproxy stops with the other request in flight
    assert [e["flow_id"] for e in repaired_events(log)] == [failed.id, unanswered.id]


NEEDS_NOTHING = {"model": "deepseek-v4-flash", "messages": [{"role": "user", "content": "hi"}], "stream": True}


async def test_a_request_that_needs_nothing_is_described_once_on_its_way(addons) -> None:
    config, repair, _, _ = addons
    flow = chat_flow(NEEDS_NOTHING)
    client_scope = str(request_scope(flow.request))
    repair.request(flow)
    meta = flow.metadata["llm"]
    assert "scope" not in meta and "request_model" not in meta  # not on the way to the provider
    # An addon after this one changes the request before it leaves: what is filed is still the client's.
    flow.request.headers["authorization"] = "Bearer another"
    flow.request.path = "/v1/chat/completions?key=other"
    flow.request.content = json.dumps({**NEEDS_NOTHING, "model": "other-model"}).encode()
    await asyncio.sleep(0)  # the loop's next turn: mitmproxy has sent the request on
    assert "pending" not in meta
    assert (meta["scope"], meta["host"], meta["request_model"]) == (client_scope, "address:22", "deepseek-v4-flash")
    assert meta["by_content"] is True and "named_account" not in meta


async def test_an_entry_asked_for_before_its_turn_is_written_then(addons) -> None:
    _, repair, _, _ = addons
    flow = chat_flow(NEEDS_NOTHING)
    repair.request(flow)
    meta = flow_meta(flow)
    assert meta is not None and "pending" not in meta
    assert meta["scope"] == str(request_scope(flow.request)) and meta["request_model"] == "deepseek-v4-flash"
    await asyncio.sleep(0)  # and nothing runs twice
    assert meta["request_model"] == "deepseek-v4-flash"


async def test_an_entry_is_whole_at_once_when_flows_are_kept(addons) -> None:
    config, repair, _, _ = addons
    config.settings = config.settings.model_copy(update={"keep_bodies": "true"})
    flow = chat_flow(NEEDS_NOTHING)
    repair.request(flow)
    meta = flow.metadata["llm"]
    assert "pending" not in meta and meta["request_model"] == "deepseek-v4-flash"
    io.FlowWriter(stdio.BytesIO()).add(flow)  # a flow file can hold it


@pytest.fixture
def identity_breaks(monkeypatch) -> None:
    """Reading whose request it is fails: the deferred part of the request hook cannot write the entry."""

    def broken(*args: object) -> object:
        raise RuntimeError("identity broke")

    monkeypatch.setattr("llm_reasoning_proxy.request.claim.identity_of", broken)


async def test_an_entry_that_cannot_be_written_leaves_the_flow_alone(addons, identity_breaks, caplog) -> None:
    _, repair, _, log = addons
    flow = chat_flow(NEEDS_NOTHING)
    repair.request(flow)
    await asyncio.sleep(0)
    assert "llm" not in flow.metadata  # the later hooks leave it alone, as one the request hook failed on
    assert "identity broke" in caplog.text
    assert '"stage":"request"' in log.read_text().replace(" ", "")


async def test_an_entry_asked_for_early_that_cannot_be_written_leaves_the_flow_alone(
    addons, identity_breaks, caplog
) -> None:
    _, repair, _, _ = addons
    flow = chat_flow(NEEDS_NOTHING)
    repair.request(flow)
    assert flow_meta(flow) is None and "llm" not in flow.metadata  # asked before the loop's next turn
    assert "identity broke" in caplog.text
    await asyncio.sleep(0)  # the deferred part finds nothing left to do
    assert "llm" not in flow.metadata


def test_a_finished_tap_holds_nothing_of_what_it_read(addons) -> None:
    """The tap stays on its flow for as long as the flow is kept (mitmweb, a flow file): once it has finished it
    lets go of its reader, with all the reasoning it assembled, and of its parser."""
    config, repair, capture, _ = addons
    flow, tap = streamed_flow(repair, capture)
    reader = weakref.ref(tap.reader)
    for piece in [*STREAMED_CALL, b""]:
        tap(piece)
    capture.response(flow)
    tap.finish()
    assert flow.metadata["llm"]["captured"][0]["tool_calls"] == ["call_7"]
    gc.collect()
    assert reader() is None and flow.response.stream is tap
    assert tap(b"late") == b"late"  # still passes bytes on, reading nothing
