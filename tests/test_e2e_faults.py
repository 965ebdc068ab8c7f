"""End to end: faults around the proxy. Upstreams and clients that hang up, fail or stall; 50 MB bodies; bytes
that are not JSON; every content-encoding both ways; a proxy killed while it writes; two proxies on one cache, also
while other processes open, checkpoint and back it up; a cache that cannot be written.

Already covered in test_e2e_proxy_behaviour.py, and not repeated here: an upstream cut after the tool call
(turn 2 still repaired), gzip requests (repaired, and left alone when nothing needs repair), decoded SSE
responses in every encoding, turn 2 through a new process after SIGKILL of an idle proxy, and a cache path
whose directory cannot be created (/proc/no-such-dir).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import json
import os
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import brotli
import httpx
import openai
import pytest
import zstandard
from llm_reasoning_proxy.cache import CacheLimits, SQLiteStore
from llm_reasoning_proxy.shared.scope import Scope, credential_fingerprint

from tests.support.cache_fill import fill_cache
from tests.support.event_log import LogTail, of_kind
from tests.support.fake_provider import SERVER_ERROR, FakeProvider, Recorded
from tests.support.file_locks import dms_holders
from tests.support.proxy import MitmdumpProcess, reverse_proxy, start_failure
from tests.support.turns import QUESTION, TOOLS, client, history_as_sent, second_turn

pytestmark = pytest.mark.e2e

GEMINI = "gemini-3-pro-preview"
ANSWER = "The directory holds two files."
CHAT = "/v1/chat/completions"
MB = 1 << 20
COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,  # HTTP deflate: zlib-wrapped
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


# --- helpers -------------------------------------------------------------------------------------


def chat_body(*, stream: bool, messages: list[dict] | None = None, model: str = GEMINI) -> bytes:
    return json.dumps({"model": model, "messages": messages or [QUESTION], "tools": TOOLS, "stream": stream}).encode()


def headers_for(api_key: str | None = None, **fake: str) -> dict[str, str]:
    headers = {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    return headers | ({"authorization": f"Bearer {api_key}"} if api_key else {})


def fetch_raw(
    base_url: str, body: bytes, headers: dict[str, str], *, path: str = CHAT, http: httpx.Client | None = None
) -> tuple[httpx.Response, bytes]:
    """POSTs and returns the response with its body exactly as it came off the wire (not decoded)."""
    sender = http or httpx.Client(timeout=30)
    try:
        with sender.stream("POST", f"{base_url}{path}", content=body, headers=headers) as response:
            return response, b"".join(response.iter_raw())
    finally:
        if http is None:
            sender.close()


def tool_calls_in(stream: bytes) -> list[dict[str, Any]]:
    """The tool calls of a chat completions stream, as the client received them."""
    return [
        call
        for event in stream.split(b"\n\n")
        if event.startswith(b"data: {")
        for call in json.loads(event[6:])["choices"][0]["delta"].get("tool_calls", [])
    ]


def turn_two(call: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn 2 as a client that kept the tool call but dropped the reasoning sends it."""
    return history_as_sent({"tool_calls": [call]}, drop=(), content=None)


def ours(fake: FakeProvider, since: int) -> Recorded:
    """The only request the fake got since `since`."""
    (recorded,) = fake.requests[since:]
    return recorded


def marked(path: str = CHAT) -> tuple[str, str]:
    """`path` with a query of its own, and that query's marker: the events of such a request name it in their url."""
    marker = uuid.uuid4().hex
    return f"{path}?test={marker}", marker


def own_events(log: LogTail, marker: str, *kinds: str) -> list[dict[str, Any]]:
    """The events of the requests whose url holds `marker`, once one of `kinds` is among them. The session's proxy
    logs a capture just after its client has the last byte, so another test's may land in this test's tail."""

    def own(event: dict[str, Any]) -> bool:
        return marker in event.get("url", "")

    events = log.wait(lambda found: any(e["kind"] in kinds and own(e) for e in found))
    return [e for e in events if own(e)]


def calling(call_id: str) -> Callable[[dict[str, Any]], bool]:
    """Whether an event is about a tool call: a capture that holds it or a repair that acts on it."""

    def about(event: dict[str, Any]) -> bool:
        ids = [c["id"] for c in event.get("tool_calls", [])] + [a.get("tool_call_id") for a in event.get("actions", [])]
        return call_id in ids

    return about


def assert_no_addon_failure(log: LogTail, proxy: MitmdumpProcess, first_line: int) -> None:
    assert of_kind(log.events(), "failure") == []
    new_output = "\n".join(proxy.lines[first_line:])
    assert "Traceback" not in new_output and "failed on flow" not in new_output, new_output


def still_serving(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """A whole streamed turn 1 and a repaired turn 2 through the proxy."""
    marker = uuid.uuid4().hex  # finds this turn 1 among whatever else the fake got meanwhile
    response, raw = fetch_raw(proxy.url, chat_body(stream=True), headers_for(api_key) | {"x-test-turn": marker})
    (sent,) = fake.find("x-test-turn", marker)
    assert response.status_code == 200 and raw == bytes(sent.wire)
    assert second_turn(client(proxy.url, api_key), GEMINI, turn_two(tool_calls_in(raw)[0]), stream=False) == ANSWER


def start_all(*processes: MitmdumpProcess) -> None:
    """Starts several mitmdump processes at once (each takes about a second, mostly waiting)."""
    errors: list[BaseException] = []

    def run(process: MitmdumpProcess) -> None:
        try:
            process.start()
        except BaseException as e:  # noqa: BLE001 - re-raised below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(p,)) for p in processes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        for process in processes:
            process.stop()
        raise errors[0]


def sqlite_proxy(fake: FakeProvider, confdir: Path, cache: Path, log: Path, **options: Any) -> MitmdumpProcess:
    return reverse_proxy(fake.url, confdir, llm_cache=cache, llm_log=log, **options)


def scope_of(fake: FakeProvider, api_key: str) -> str:
    """The cache scope the proxy files a conversation under (reverse mode: the fake's host and port)."""
    host = fake.url.removeprefix("http://")
    return str(Scope(host, credential_fingerprint([f"authorization:Bearer {api_key}"])))


# --- 1. the upstream hangs up mid-stream ---------------------------------------------------------


@pytest.mark.parametrize(
    "abort_after, encoding",
    [(1, None), (1, "br"), (3, "gzip"), (3, "zstd")],
    ids=["before-tool-calls", "before-tool-calls-br", "after-tool-call-gzip", "after-tool-call-zstd"],
)
def test_upstream_cut_mid_stream(
    fake: FakeProvider,
    proxy: MitmdumpProcess,
    proxy_state: Path,
    api_key: str,
    abort_after: int,
    encoding: str | None,
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    options = {"abort_after": str(abort_after)} | ({"encoding": encoding} if encoding else {})
    path, marker = marked()
    received = bytearray()
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"):
        with httpx.stream(
            "POST", f"{proxy.url}{path}", content=chat_body(stream=True), headers=headers_for(api_key, **options)
        ) as response:
            for piece in response.iter_raw():
                received += piece
    sent = ours(fake, since)
    assert bytes(received) == bytes(sent.wire)  # everything the upstream sent, compressed as it was, nothing more
    calls = tool_calls_in(sent.sent)
    if calls:
        events = own_events(log, marker, "captured")
        (captured,) = of_kind(events, "captured")
        assert (captured["complete"], captured["stored"]) == (False, True)
        assert [c["id"] for c in captured["tool_calls"]] == [calls[0]["id"]]
        # What was read of the cut (compressed) stream repairs the next turn.
        assert second_turn(client(proxy.url, api_key), GEMINI, turn_two(calls[0]), stream=False) == ANSWER
        repaired = fake.last().doc["messages"][1]
        assert repaired["reasoning_opaque"] == fake.issued[calls[0]["id"]]["reasoning_opaque"]
    else:
        events = own_events(log, marker, "skipped")
        (skipped,) = of_kind(events, "skipped")
        assert skipped["reason"].startswith("answer cut off before any tool call (HTTP/1 protocol error: peer closed")
        assert skipped["reason"].endswith("; nothing cached")
        assert of_kind(events, "captured") == []
        still_serving(fake, proxy, api_key)
    proxy.wait_for_line("peer closed connection without sending complete message body", since=first_line)
    assert_no_addon_failure(log, proxy, first_line)


# --- 2. the client hangs up mid-stream -----------------------------------------------------------


@pytest.mark.parametrize("hang_up", ["after-first-event", "after-tool-call"])
def test_client_gone_mid_stream(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, hang_up: str
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    path, marker = marked()
    received = b""
    # The fake holds the stream (after its first event, or before its last) until the client is gone.
    hold = f"gone-{uuid.uuid4().hex}"
    held = headers_for(api_key, hold=hold, hold_after="1" if hang_up == "after-first-event" else "-1")
    try:
        with httpx.stream("POST", f"{proxy.url}{path}", content=chat_body(stream=True), headers=held) as response:
            for piece in response.iter_raw():
                received += piece
                if b'"tool_calls"' in received if hang_up == "after-tool-call" else b"\n\n" in received:
                    break
        events = own_events(log, marker, "captured", "skipped")
        proxy.wait_for_line("Client disconnected.", since=first_line)  # mitmdump prints it after the addon's hooks
    finally:
        fake.release(hold)
    if hang_up == "after-tool-call":
        (call,) = tool_calls_in(received)
        (captured,) = of_kind(events, "captured")
        assert (captured["complete"], captured["stored"]) == (False, True)
        assert second_turn(client(proxy.url, api_key), GEMINI, turn_two(call), stream=True) == ANSWER
        assert fake.last().doc["messages"][1]["reasoning_opaque"] == fake.issued[call["id"]]["reasoning_opaque"]
    else:
        assert [e["reason"] for e in of_kind(events, "skipped")] == [
            "answer cut off before any tool call (Client disconnected.); nothing cached"
        ]
        still_serving(fake, proxy, api_key)
    assert fake.requests[since].status == 200  # the fake did answer: it was the client that went away
    assert_no_addon_failure(log, proxy, first_line)


# --- 3. upstream errors and timeouts -------------------------------------------------------------


@pytest.mark.parametrize("status, stream", [(500, True), (503, False)], ids=["500-streamed", "503-plain"])
def test_upstream_5xx_reaches_the_client_unchanged(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, status: int, stream: bool
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    path, marker = marked()
    response, raw = fetch_raw(proxy.url, chat_body(stream=stream), headers_for(api_key, status=str(status)), path=path)
    assert response.status_code == status
    assert raw == bytes(ours(fake, since).wire) == json.dumps(SERVER_ERROR).encode()
    assert response.headers["retry-after"] == "1" and response.headers["x-request-id"] == "req_fake_5xx"
    assert response.headers["content-type"] == "application/json"
    # The SDK sees the provider's own error, as it would without the proxy.
    with pytest.raises(openai.APIStatusError, match="The server had an error") as failure:
        client(proxy.url, api_key, status=str(status)).chat.completions.create(
            model=GEMINI, messages=[QUESTION], tools=TOOLS, stream=stream, extra_query={"test": marker}
        )
    assert failure.value.status_code == status
    diagnosed = log.wait_for("diagnosed", count=2, where=lambda e: marker in e["url"])
    assert [(e["status"], e["rule"]) for e in diagnosed] == [(status, "unknown")] * 2  # explained, not guessed at
    assert [e for e in log.events("captured") if marker in e["url"]] == []
    still_serving(fake, proxy, api_key)
    assert_no_addon_failure(log, proxy, first_line)


def test_upstream_that_never_answers_costs_only_its_own_request(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """mitmproxy 11 has no upstream read timeout of its own: the request waits, costing only itself, until the
    upstream answers or the client's own timeout ends it."""
    log, first_line = LogTail(proxy_state / "events.jsonl"), len(proxy.lines)
    hold = f"never-{uuid.uuid4().hex}"  # the fake answers this request only once the test releases it
    body = chat_body(stream=True)
    head = (
        f"POST {CHAT} HTTP/1.1\r\nhost: 127.0.0.1:{proxy.port}\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer {api_key}\r\nx-fake-hold: {hold}\r\ncontent-length: {len(body)}\r\n\r\n"
    )
    # A plain socket, so that the client's read timeout starts when the test says, not when the request is sent.
    hung = socket.create_connection(("127.0.0.1", proxy.port), timeout=60)
    try:
        hung.sendall(head.encode() + body)
        fake.wait_for_request("x-fake-hold", hold)  # it reached the fake, which answers nothing
        # Meanwhile other conversations go on through the same proxy.
        still_serving(fake, proxy, api_key)
        # The proxy gave up on nothing all this time: once the upstream answers, the hung client gets that answer
        # whole, as the first bytes it ever receives (not an error, not a hang-up).
        fake.release(hold)
        received = b""
        while not received.endswith(b"0\r\n\r\n"):  # the chunked stream's end
            piece = hung.recv(65536)
            assert piece, f"the proxy hung up after {len(received)} bytes"
            received += piece
        assert received.startswith(b"HTTP/1.1 200 ") and b"data: [DONE]" in received
        port = hung.getsockname()[1]
        hung.close()
        proxy.wait_for_line(f":{port}] client disconnect", since=first_line)
        still_serving(fake, proxy, api_key)
    finally:
        hung.close()
        fake.release(hold)
    assert_no_addon_failure(log, proxy, first_line)


def test_upstream_that_gives_up_gets_the_client_mitmproxys_502(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """An upstream (or a gateway in front of it) that times out and hangs up without an answer."""
    log, first_line = LogTail(proxy_state / "events.jsonl"), len(proxy.lines)
    path, marker = marked()
    response = httpx.post(
        f"{proxy.url}{path}",
        content=chat_body(stream=True),
        headers=headers_for(api_key, delay="0.3", drop="1"),
        timeout=30,
    )
    assert response.status_code == 502
    assert response.headers["server"].startswith("mitmproxy ")
    assert "<h1>502 Bad Gateway</h1>" in response.text and "server closed connection" in response.text
    still_serving(fake, proxy, api_key)
    # mitmproxy's own answer is not the provider's to explain
    assert [e for e in log.events("diagnosed") if marker in e["url"]] == []
    assert_no_addon_failure(log, proxy, first_line)


# --- 4. 50 MB bodies -----------------------------------------------------------------------------


def memory(pid: int, field: str) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith(f"{field}:")).split()[1]) * 1024


def rss_growth(pid: int, operation: Callable[[], None]) -> int:
    """How far the process's resident memory rose above where it was while `operation` ran, in bytes."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # resets the peak (VmHWM) to the current RSS
    before = memory(pid, "VmRSS")
    operation()
    return memory(pid, "VmHWM") - before


@pytest.mark.slow
def test_50_mb_bodies_pass_intact_without_ballooning(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    """The same 50 MB traffic through the addon and through plain mitmdump (which buffers what it does not
    stream): the addon's memory peak must stay near what mitmproxy itself needs."""
    addon = sqlite_proxy(fake, confdir, tmp_path / "cache.db", tmp_path / "events.jsonl")
    plain = MitmdumpProcess("--mode", f"reverse:{fake.url}", confdir=confdir, addon=False)
    start_all(addon, plain)
    big_request = json.dumps({"model": GEMINI, "messages": [{"role": "user", "content": "x" * (50 * MB)}]}).encode()
    since = len(fake.requests)
    growth: dict[tuple[str, str], int] = {}
    try:
        for name, process in (("addon", addon), ("plain", plain)):
            log = LogTail(tmp_path / "events.jsonl")
            fetch_raw(process.url, chat_body(stream=False), headers_for(api_key))  # warm up

            def send_request(process: MitmdumpProcess = process) -> None:
                response = httpx.post(f"{process.url}{CHAT}", content=big_request, timeout=120)
                assert response.status_code == 200
                assert fake.requests[-1].body == big_request  # needed no repair: byte for byte

            def receive(stream: bool, process: MitmdumpProcess = process, log: LogTail = log) -> None:
                headers = headers_for(api_key, pad=str(50 * MB))
                with httpx.Client(timeout=120) as http:
                    response, raw = fetch_raw(process.url, chat_body(stream=stream), headers, http=http)
                assert response.status_code == 200 and len(raw) > 50 * MB
                assert hashlib.sha256(raw).digest() == hashlib.sha256(fake.requests[-1].wire).digest()
                if process is addon:  # captured: read whole, parsed, stored (after the client had it all)
                    first = raw.split(b"\n\n", 1)[0].removeprefix(b"data: ") if stream else raw
                    response_id = json.loads(first)["id"]
                    (captured,) = log.wait_for("captured", where=lambda e: e.get("response_id") == response_id)
                    assert captured["complete"] is True

            growth[name, "request"] = rss_growth(process.pid, send_request)
            growth[name, "json"] = rss_growth(process.pid, lambda: receive(False))
            if process is addon:  # plain mitmdump would buffer the stream whole: no fair comparison
                growth[name, "sse"] = rss_growth(process.pid, lambda: receive(True))
            assert process._process is not None and process._process.poll() is None
        summary = {f"{n} {k}": f"{v / MB:.0f} MB" for (n, k), v in growth.items()}
        # Plain mitmdump's own peak for one 50 MB body varies by some 30 MB from run to run; a copy of the body
        # more than mitmproxy holds would still break this bound.
        for kind in ("request", "json"):
            assert growth["addon", kind] <= 1.25 * growth["plain", kind] + 32 * MB, summary
        assert growth["addon", "sse"] <= 16 * MB, summary  # streams stay streams
        still_serving(fake, addon, api_key)
        assert of_kind(LogTail(tmp_path / "events.jsonl").events(), "failure") == []
    finally:
        addon.stop()
        plain.stop()
        with fake._lock:  # the session's fake would otherwise hold some 300 MB to the end
            del fake.requests[since:]


# --- 5. bodies that are not JSON -----------------------------------------------------------------

# One request per wire format that holds what makes the addon parse it (a tool call to repair), and a Latin-1 byte.
LLM_REQUESTS = {
    "chat": (
        CHAT,
        b'{"model":"gemini-3-pro-preview","messages":[{"role":"user","content":"caf\xe9"},{"role":"assistant",'
        b'"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}]}',
    ),
    "responses": (
        "/v1/responses",
        b'{"model":"gpt-5","input":[{"role":"user","content":"caf\xe9"},'
        b'{"type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}]}',
    ),
    "anthropic": (
        "/v1/messages",
        b'{"model":"claude-sonnet-4-5","max_tokens":2048,"thinking":{"type":"enabled","budget_tokens":1024},'
        b'"messages":[{"role":"user","content":"caf\xe9"},'
        b'{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}]}]}',
    ),
    "gemini": (
        "/v1beta/models/gemini-3-pro-preview:generateContent",
        b'{"contents":[{"role":"user","parts":[{"text":"caf\xe9"}]},'
        b'{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}]}',
    ),
}


@pytest.mark.parametrize("spoilt", ["non-utf8", "truncated"])
@pytest.mark.parametrize("wire_format", sorted(LLM_REQUESTS))
def test_request_body_that_is_not_json_is_forwarded_and_skipped(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, wire_format: str, spoilt: str
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    route, body = LLM_REQUESTS[wire_format]
    path, marker = marked(route)
    if spoilt == "truncated":  # valid UTF-8, cut off just before its closing brackets
        body = body.replace(b"\xe9", b"e")[:-3]
    response = httpx.post(f"{proxy.url}{path}", content=body, headers={"content-type": "application/json"}, timeout=30)
    assert ours(fake, since).body == body
    assert response.status_code == 400 and "could not parse the JSON body" in response.text  # the provider's
    events = own_events(log, marker, "skipped")
    assert [(e["reason"], e["url"]) for e in of_kind(events, "skipped")] == [
        ("request body is not valid JSON; forwarded unchanged", f"{fake.url}{path}")
    ]
    assert of_kind(events, "repaired") == []
    assert_no_addon_failure(log, proxy, first_line)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("spoilt", ["non-utf8", "truncate"])
def test_response_body_that_is_not_json_is_forwarded_and_skipped(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, spoilt: str, stream: bool
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    path, marker = marked()
    response, raw = fetch_raw(proxy.url, chat_body(stream=stream), headers_for(api_key, corrupt=spoilt), path=path)
    sent = ours(fake, since)
    assert response.status_code == 200 and raw == bytes(sent.wire) == bytes(sent.sent)
    assert (b"\xe9" in raw) if spoilt == "non-utf8" else (b"[DONE]" in raw if stream else not raw.endswith(b"}"))
    events = own_events(log, marker, "skipped")
    (skipped,) = of_kind(events, "skipped")
    if stream:  # every event but [DONE] is spoilt
        spoilt_events = sent.sent.count(b"data: {")  # the reasoning and the tool call
        assert skipped["reason"] == f"{spoilt_events} stream event(s) not valid JSON (cut short or not UTF-8); not read"
    else:
        assert skipped["reason"] == "response body is not JSON"
    assert of_kind(events, "captured") == []
    assert_no_addon_failure(log, proxy, first_line)


# --- 6. content-encodings, both ways -------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["deflate", "br", "zstd"])  # gzip: test_e2e_proxy_behaviour.py
def test_compressed_request_is_repaired_and_recompressed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, encoding: str
) -> None:
    log, first_line = LogTail(proxy_state / "events.jsonl"), len(proxy.lines)
    _, raw = fetch_raw(proxy.url, chat_body(stream=True), headers_for(api_key))
    (call,) = tool_calls_in(raw)
    body = COMPRESS[encoding](
        chat_body(stream=False, messages=history_as_sent({"tool_calls": [call]}, drop=(), content=[]))
    )
    since = len(fake.requests)
    response = httpx.post(
        f"{proxy.url}{CHAT}",
        content=body,
        headers={"content-type": "application/json", "content-encoding": encoding} | headers_for(api_key),
        timeout=30,
    )
    assert response.status_code == 200, response.text
    received = ours(fake, since)
    assert received.headers["content-encoding"] == encoding
    assert int(received.headers["content-length"]) == len(received.body)
    assert received.body != body  # repaired, so compressed anew
    message = received.doc["messages"][1]  # the fake decoded it with its own decoder
    assert message["content"] is None
    assert message["reasoning_opaque"] == fake.issued[call["id"]]["reasoning_opaque"]
    (repaired,) = log.wait_for("repaired", where=calling(call["id"]))
    assert {a["kind"] for a in repaired["actions"]} == {"content_null", "restored"}
    assert_no_addon_failure(log, proxy, first_line)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate", "br", "zstd"])
def test_compressed_response_reaches_the_client_as_sent_and_is_captured(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, encoding: str, stream: bool
) -> None:
    log, first_line, since = LogTail(proxy_state / "events.jsonl"), len(proxy.lines), len(fake.requests)
    response, raw = fetch_raw(proxy.url, chat_body(stream=stream), headers_for(api_key, encoding=encoding))
    sent = ours(fake, since)
    assert response.headers["content-encoding"] == encoding
    assert raw == bytes(sent.wire)  # the compressed bytes, untouched
    calls = tool_calls_in(sent.sent) if stream else json.loads(sent.sent)["choices"][0]["message"]["tool_calls"]
    (captured,) = log.wait_for("captured", where=calling(calls[0]["id"]))
    assert captured["stored"] and captured["complete"] and captured["streamed"] is stream
    assert [c["id"] for c in captured["tool_calls"]] == [calls[0]["id"]]
    assert {"reasoning_opaque", "reasoning_text"} <= set(captured["fields"])
    if not stream:  # streamed: test_e2e_proxy_behaviour.py repairs turn 2 from a compressed stream
        assert second_turn(client(proxy.url, api_key), GEMINI, turn_two(calls[0]), stream=False) == ANSWER
    assert_no_addon_failure(log, proxy, first_line)


# --- 7. SIGKILL while 20 conversations write to the cache ----------------------------------------


@pytest.mark.slow
def test_sigkill_during_concurrent_writes_loses_nothing_committed(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    cache, log_path = tmp_path / "cache.db", tmp_path / "events.jsonl"
    proxy = sqlite_proxy(fake, confdir, cache, log_path).start()
    log = LogTail(log_path)
    stop, lock = threading.Event(), threading.Lock()
    finished: list[tuple[str, dict[str, Any]]] = []  # (api key, tool call) of every stream the client got whole
    interrupted: list[str] = []
    http = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=32, max_keepalive_connections=32))

    def conversation_after_conversation(worker: int) -> None:
        api_key = f"sk-kill-{worker}-{os.urandom(4).hex()}"
        while not stop.is_set():
            try:
                response, raw = fetch_raw(proxy.url, chat_body(stream=True), headers_for(api_key), http=http)
            except httpx.HTTPError as e:
                interrupted.append(type(e).__name__)
                return
            (call,) = tool_calls_in(raw)
            with lock:
                finished.append((api_key, call))

    workers = [threading.Thread(target=conversation_after_conversation, args=(i,)) for i in range(20)]
    try:
        for worker in workers:
            worker.start()
        log.wait_for("captured", count=60)
        with lock:  # nothing finishes between the snapshot and the kill
            finished_before_kill = list(finished)
            os.kill(proxy.pid, signal.SIGKILL)
        proxy.wait_exit()
        # Every worker's conversation in flight, or its next one, fails now: each ends by itself, interrupted.
        for worker in workers:
            worker.join(60)
    finally:
        stop.set()  # only if the test failed before the kill
        for worker in workers:
            worker.join(60)
        http.close()
        proxy.kill()
    assert len(finished_before_kill) >= 40
    assert len(interrupted) == 20  # every worker was mid-conversation when the proxy died
    # "captured" is logged once the entry is committed: each one logged before the kill must have survived it.
    stored = [e for e in log.events("captured") if e["stored"]]
    captured_ids = {c["id"] for e in stored for c in e["tool_calls"]}
    assert len(captured_ids) >= 60

    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        keys = {key for (key,) in db.execute("SELECT key FROM record_keys")}
    assert captured_ids <= keys
    store = SQLiteStore(cache, CacheLimits(max_age=3600, max_entries=100_000))
    try:
        # The entry is committed just after the client has the answer's last byte, so an answer finished in the
        # instant before the kill may be missing; every one that was logged as captured has its exact value.
        committed = [(key, call) for key, call in finished_before_kill if call["id"] in captured_ids]
        assert len(committed) >= len(finished_before_kill) - 20
        for api_key, call in committed:
            found = store.get_many(scope_of(fake, api_key), [call["id"]])
            assert call["id"] in found, f"{call['id']}: logged as captured before the kill, not in the cache after it"
            assert found[call["id"]].fields["reasoning_opaque"] == fake.issued[call["id"]]["reasoning_opaque"]
    finally:
        store.close()
    # A proxy started on the same file repairs the turn 2 of a conversation whose turn 1 the killed one answered.
    api_key, call = committed[-1]
    restarted = sqlite_proxy(fake, confdir, cache, log_path).start()
    try:
        assert second_turn(client(restarted.url, api_key), GEMINI, turn_two(call), stream=False) == ANSWER
    finally:
        restarted.stop()


# --- 8. two proxies, one SQLite file -------------------------------------------------------------


@pytest.mark.slow
def test_two_proxies_share_one_sqlite_file(fake: FakeProvider, confdir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.db"
    logs = [tmp_path / "events-a.jsonl", tmp_path / "events-b.jsonl"]
    proxies = [sqlite_proxy(fake, confdir, cache, log) for log in logs]
    start_all(*proxies)
    http = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=32, max_keepalive_connections=32))

    def first(conversation: int) -> tuple[int, str, dict[str, Any]]:
        api_key = f"sk-two-{conversation}-{os.urandom(4).hex()}"
        _, raw = fetch_raw(proxies[conversation % 2].url, chat_body(stream=True), headers_for(api_key), http=http)
        return conversation, api_key, tool_calls_in(raw)[0]

    def second(turn: tuple[int, str, dict[str, Any]]) -> tuple[int, Any]:
        conversation, api_key, call = turn
        other = proxies[(conversation + 1) % 2]  # turn 2 through the proxy that did not see turn 1
        body = chat_body(stream=False, messages=turn_two(call))
        response = http.post(f"{other.url}{CHAT}", content=body, headers=headers_for(api_key))
        return response.status_code, response.json()

    try:
        with ThreadPoolExecutor(16) as pool:
            turns = list(pool.map(first, range(80)))  # 40 per proxy, 16 at a time: both write at once
            for log in logs:  # each commit lands just after its answer's last byte
                LogTail(log, whole=True).wait(lambda e: len(of_kind(e, "captured")) == 40)
            answers = list(pool.map(second, turns))
    finally:
        http.close()
        for process in proxies:
            process.stop()
    assert [status for status, _ in answers] == [200] * 80
    assert all(doc["choices"][0]["message"]["content"] == ANSWER for _, doc in answers)
    for process, log in zip(proxies, logs):
        events = LogTail(log, whole=True)
        kinds = [e["kind"] for e in events.events()]
        assert kinds.count("captured") == 40 and kinds.count("repaired") == 40 and "failure" not in kinds
        assert all(e["cache_hits"] >= 1 for e in events.events("repaired"))
        assert "locked" not in process.output and "Traceback" not in process.output
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM records").fetchone() == (80,)


@pytest.mark.slow
def test_a_capture_the_proxy_has_not_got_costs_a_miss_never_another_turns_reasoning(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    """An agent calls the same tool with the same arguments on two turns. The second answer's capture is not in the
    cache when the next turn arrives (it went through another proxy that has not written it yet; here it went
    around this one). Its call must not be taken for the first one by name and arguments: the first call is in the
    request under its own id, so that record is the first call's, and the second call goes as the client sent it."""
    api_key = f"sk-late-{os.urandom(4).hex()}"
    log_path = tmp_path / "events.jsonl"
    steps = {"x-fake-steps": "3"}  # one tool offered: every step calls it with the same arguments
    with sqlite_proxy(fake, confdir, tmp_path / "cache.db", log_path) as proxy:
        _, raw = fetch_raw(proxy.url, chat_body(stream=True), headers_for(api_key) | steps)
        (first,) = tool_calls_in(raw)
        LogTail(log_path, whole=True).wait_for("captured", where=calling(first["id"]))
        kept = {"reasoning_opaque": fake.issued[first["id"]]["reasoning_opaque"]}
        history = history_as_sent({"tool_calls": [first]} | kept, drop=(), content=None)
        _, raw = fetch_raw(fake.url, chat_body(stream=True, messages=history), headers_for(api_key) | steps)
        (second,) = tool_calls_in(raw)
        assert second["function"] == first["function"] and second["id"] != first["id"]
        history = turn_two(first) + turn_two(second)[1:]
        since = len(fake.requests)
        fetch_raw(proxy.url, chat_body(stream=False, messages=history), headers_for(api_key) | steps)
    sent = [m for m in ours(fake, since).doc["messages"] if m.get("tool_calls")]
    assert [m["tool_calls"][0]["id"] for m in sent] == [first["id"], second["id"]]
    assert sent[0]["reasoning_opaque"] == kept["reasoning_opaque"]  # repaired by its id
    assert "reasoning_opaque" not in sent[1]  # a miss: the provider's own 400, not a value of another turn


@pytest.mark.slow
def test_a_cache_far_over_its_limit_is_pruned_while_the_proxy_serves(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    """A proxy opened on a file of 20,000 entries with a limit of 1,000 listens before it has pruned them, serves
    repaired turns meanwhile, and brings the file to its limit a short step at a time (a step drops at most
    PRUNE_STEP records, with pauses between: the last of 300 steps comes seconds after it started listening)."""
    cache, log_path = tmp_path / "cache.db", tmp_path / "events.jsonl"
    fill_cache(cache, 20_000, stored_at=time.time() - 60)

    def records() -> int:
        with contextlib.closing(sqlite3.connect(cache, timeout=30)) as db:
            return db.execute("SELECT count(*) FROM records").fetchone()[0]

    with sqlite_proxy(fake, confdir, cache, log_path, llm_cache_max_entries=1000) as proxy:
        assert records() > 10_000, "the proxy pruned the cache before it listened"
        still_serving(fake, proxy, f"sk-big-{os.urandom(4).hex()}")
        deadline = time.monotonic() + 120
        while (remaining := records()) > 1000 and time.monotonic() < deadline:  # waits for the promised outcome
            time.sleep(0.1)
        assert remaining == 1000
        assert "Traceback" not in proxy.output and "pruning" not in proxy.output, proxy.output
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count FROM tallies WHERE name = 'records'").fetchone() == (1000,)
        strays = "SELECT count(*) FROM record_keys WHERE record_id NOT IN (SELECT id FROM records)"
        assert db.execute(strays).fetchone() == (0,)


def _sqlite_loop(statement: str, pause: float) -> str:
    """A program that opens the cache, runs `statement` and closes it again until the stop file exists, then
    prints how often it did."""
    return f"""
import sqlite3, sys, time
from pathlib import Path
cache, stop, runs = sys.argv[1], Path(sys.argv[2]), 0
while not stop.exists():
    db = sqlite3.connect(cache, timeout=30)
    db.execute({statement!r}).fetchone()
    db.close()
    runs += 1
    time.sleep({pause})
print(runs)
"""


CHURN = {
    # Opens the cache, reads it and closes it, as a second proxy starting, the sqlite3 shell or a script would.
    "opener": _sqlite_loop("SELECT count(*) FROM records", 0.002),
    # Moves the WAL into the database and truncates it, whenever no reader is in the way.
    "checkpointer": _sqlite_loop("PRAGMA wal_checkpoint(TRUNCATE)", 0.005),
    # Backs the cache up with the sqlite3 shell, as a cron job would.
    "backup": """
import subprocess, sys
from pathlib import Path
cache, stop, runs = sys.argv[1], Path(sys.argv[2]), 0
while not stop.exists():
    backup = f".backup {stop.parent / 'backup.db'}"
    subprocess.run(["sqlite3", cache, ".timeout 30000", backup], check=True, timeout=60)
    runs += 1
print(runs)
""",
}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("sqlite3") is None, reason="needs the sqlite3 shell (scripts/test installs it)")
def test_other_processes_opening_checkpointing_and_backing_up_the_cache_harm_nothing(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    """Two proxies share one file while other processes open and close it every few milliseconds, checkpoint it
    and back it up: no proxy dies, every answer and every capture arrives, each proxy keeps SQLite's shared lock on
    the -shm file (which tells the others not to rebuild it), and the file stays whole."""
    cache, stop = tmp_path / "cache.db", tmp_path / "stop"
    logs = [tmp_path / "events-a.jsonl", tmp_path / "events-b.jsonl"]
    proxies = [sqlite_proxy(fake, confdir, cache, log) for log in logs]
    start_all(*proxies)
    churners = {
        name: subprocess.Popen([sys.executable, "-c", code, str(cache), str(stop)], stdout=subprocess.PIPE, text=True)
        for name, code in CHURN.items()
    }
    http = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=16, max_keepalive_connections=16))
    lock_holders: list[set[int]] = []

    def conversation(number: int) -> tuple[int, str]:
        api_key = f"sk-churn-{number}-{os.urandom(4).hex()}"
        first, other = proxies[number % 2], proxies[(number + 1) % 2]
        _, raw = fetch_raw(first.url, chat_body(stream=True), headers_for(api_key), http=http)
        (call,) = tool_calls_in(raw)
        LogTail(logs[number % 2], whole=True).wait_for("captured", where=calling(call["id"]))
        lock_holders.append(dms_holders(cache))
        body = chat_body(stream=False, messages=turn_two(call))
        response = http.post(f"{other.url}{CHAT}", content=body, headers=headers_for(api_key))
        return response.status_code, response.json()["choices"][0]["message"]["content"]

    try:
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(conversation, range(120)))
    finally:
        stop.touch()
        runs = {name: churner.communicate(timeout=120)[0].strip() for name, churner in churners.items()}
        http.close()
        exits = [process.returncode for process in proxies]  # None: still running
        for process in proxies:
            process.stop()
    assert exits == [None, None], [process.output[-2000:] for process in proxies]
    assert all(int(count) > 0 for count in runs.values()), runs
    assert answers == [(200, ANSWER)] * 120
    pids = {process.pid for process in proxies}
    assert all(pids <= holders for holders in lock_holders), lock_holders
    for process, log in zip(proxies, logs):
        kinds = [e["kind"] for e in LogTail(log, whole=True).events()]
        assert kinds.count("captured") == 60 and kinds.count("repaired") == 60 and "failure" not in kinds
        assert "Traceback" not in process.output
    with sqlite3.connect(cache) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM records").fetchone() == (120,)


# --- 9. a cache that cannot be written -----------------------------------------------------------


@pytest.fixture(scope="module")
def unwritable_start(confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, int | None]:
    """mitmdump started on a cache in a directory nobody may create files in: the path, the output, the exit code."""
    if os.geteuid() != 0:
        directory = tmp_path_factory.mktemp("read-only")
        directory.chmod(0o500)
    else:
        directory = Path("/sys")  # root ignores permission bits, but sysfs takes no new files from anyone
    path = directory / "cache.db"
    code, output = start_failure(MitmdumpProcess("--set", f"llm_cache={path}", "--set", "llm_log=", confdir=confdir))
    return path, output, code


@pytest.mark.slow
def test_unwritable_cache_location_stops_mitmdump(unwritable_start: tuple[Path, str, int | None]) -> None:
    path, output, code = unwritable_start
    assert code == 1, output
    assert f"cannot open the reasoning cache at {path}: [Errno 13] Permission denied" in output
    # one line, before anything listens: as mitmproxy says its own option errors
    assert output.splitlines()[-1].startswith("mitmdump: llm_cache: cannot open the reasoning cache"), output
    assert "Traceback" not in output and "listening" not in output and " active: " not in output


@pytest.mark.slow
def test_unwritable_cache_message_names_the_option(unwritable_start: tuple[Path, str, int | None]) -> None:
    path, output, _ = unwritable_start
    assert f"llm_cache: cannot open the reasoning cache at {path}" in output


FSIZE_LIMIT = 128 * 1024  # the startup writes fit; a handful of captures later the WAL file hits it
# What each answer's reasoning quotes: twelve of them could not fit in the files even if the WAL were checkpointed
# into the database after every capture (the proxy checkpoints every second, and a WAL starts again from its
# beginning after a checkpoint), so the later captures fail however the checkpoints fall.
LONG_THOUGHT = base64.b64encode(b"The listing shows two files, a.txt and b.txt. " * 400).decode()


@dataclass
class FullCacheRun:
    proxy: MitmdumpProcess
    alive: bool
    events: list[dict[str, Any]]
    turns: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture(scope="module")
def full_cache_run(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> FullCacheRun:
    """Twelve conversations through a proxy whose files may not grow past FSIZE_LIMIT (writes past it fail with
    EFBIG; CPython ignores SIGXFSZ). The event log stays well under the limit."""
    state = tmp_path_factory.mktemp("full-cache")

    def limit_file_size() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))

    proxy = sqlite_proxy(fake, confdir, state / "cache.db", state / "events.jsonl", preexec_fn=limit_file_size)
    proxy.start()
    log = LogTail(state / "events.jsonl")
    turns = []
    try:
        for number in range(12):
            api_key = f"sk-full-{number}-{os.urandom(4).hex()}"
            since = len(fake.requests)
            headers = headers_for(api_key, say=LONG_THOUGHT)  # quoted in the reasoning the cache keeps
            response, raw = fetch_raw(proxy.url, chat_body(stream=number % 2 == 0), headers)
            turn1 = ours(fake, since)
            # Each answer is either stored (captured) or not (failure) before turn 2 is sent.
            log.wait(lambda e, n=number: len(of_kind(e, "captured")) + len(of_kind(e, "failure")) > n)
            doc = json.loads(raw) if number % 2 else None
            call = doc["choices"][0]["message"]["tool_calls"][0] if doc else tool_calls_in(raw)[0]
            body = chat_body(stream=False, messages=turn_two(call))
            since = len(fake.requests)
            answer = httpx.post(f"{proxy.url}{CHAT}", content=body, headers=headers_for(api_key), timeout=30)
            turns.append(
                {
                    "call_id": call["id"],
                    "turn1_intact": response.status_code == 200 and raw == bytes(turn1.wire),
                    "status": answer.status_code,
                    "answer": answer.json(),
                    "forwarded_as_sent": ours(fake, since).body == body,
                }
            )
        alive = proxy._process is not None and proxy._process.poll() is None
    finally:
        proxy.stop()
    return FullCacheRun(proxy, alive, log.events(), turns)


@pytest.mark.slow
def test_cache_full_at_run_time_keeps_traffic_flowing(full_cache_run: FullCacheRun) -> None:
    run = full_cache_run
    assert run.alive
    assert all(turn["turn1_intact"] for turn in run.turns)
    stored = {c["id"] for e in of_kind(run.events, "captured") if e["stored"] for c in e["tool_calls"]}
    failures = of_kind(run.events, "failure")
    assert stored and failures, "the limit should let the first captures in and refuse later ones"
    assert {f["stage"] for f in failures} == {"response capture"}
    assert len(stored) + len(failures) == len(run.turns)
    for turn in run.turns:
        if turn["call_id"] in stored:  # cached before the file was full: repaired
            assert turn["status"] == 200 and turn["answer"]["choices"][0]["message"]["content"] == ANSWER
        else:  # not cached: sent on as the client sent it, and the provider's refusal reaches the client
            assert turn["forwarded_as_sent"] and turn["status"] == 400
            assert "missing a `thought_signature`" in turn["answer"]["error"]["message"]
    # The proxy says so where people look, once per failed capture, and goes on.
    warnings = [line for line in run.proxy.lines if "response capture failed on flow" in line]
    assert len(warnings) == len(failures)
    failed = [number for number, turn in enumerate(run.turns) if turn["call_id"] not in stored]
    assert failed[0] < len(run.turns) - 1  # and it went on answering after a capture failed


@pytest.mark.slow
def test_cache_full_failure_names_its_cause(full_cache_run: FullCacheRun) -> None:
    errors = {f["error"] for f in of_kind(full_cache_run.events, "failure")}
    assert errors and all("disk I/O error" in e or "full" in e or "too large" in e for e in errors), errors
