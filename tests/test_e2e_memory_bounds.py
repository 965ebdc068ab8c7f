"""End to end: what the proxy remembers between requests is bounded by the memory it holds, not by the bytes it was
sent, whatever shape a client gives its requests.

1. The history memory (addon/request/history.py) keeps each conversation's last request and what was parsed of it: a body of
   `[]`s parses to over twenty times its bytes, and that is what its bound counts.
2. The memos of tool call fingerprints (addon/shared/records.py) are keyed by arguments a client makes as long as it likes:
   an agent writing files sends tens of kilobytes a call.

Each runs the same requests through plain mitmdump and through `mitmdump -s addon/main.py`, and compares how much
each process's resident memory grew (from /proc, as tests/test_e2e_hostile.py measures it).
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy.shared.limits import MAX_HISTORY_BYTES

from tests.support.event_log import LogTail
from tests.support.loopback import LoopbackServer
from tests.support.proxy import MitmdumpProcess, plain_streaming, reverse_proxy

pytestmark = pytest.mark.e2e
MB = 1024 * 1024
PATH = "/v1/chat/completions"
CLIENTS = 4  # requests in flight at once


class ToolCallUpstream(LoopbackServer):
    """Answers every chat completions request with one tool call whose arguments are `answer_bytes` long and its
    own (a file the model writes), reading the request and keeping nothing of it."""

    def __init__(self, answer_bytes: int) -> None:
        super().__init__()
        self.answer_bytes = answer_bytes

    def handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._answer(b'{"ok": true}')

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                call = self.headers.get("x-call", "0")
                self._answer(answer(call, upstream.answer_bytes))

            def _answer(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def arguments(call: str, size: int) -> bytes:
    """The arguments of a call that writes a file of about `size` bytes, as the JSON text a chat message carries
    them in (a string holding JSON): each call's its own."""
    return json.dumps(json.dumps({"path": f"/src/file_{call}.py", "content": "x = 1\n" * (size // 6)})).encode()


def answer(call: str, size: int) -> bytes:
    tool_call = b'{"id":"call_answer_%s","type":"function","function":{"name":"write_file","arguments":%s}}' % (
        call.encode(),
        arguments(f"answer_{call}", size),
    )
    message = b'{"role":"assistant","content":null,"reasoning_content":"Writing it.","tool_calls":[%s]}' % tool_call
    return (
        b'{"id":"chatcmpl-%s","object":"chat.completion","model":"m","choices":[{"index":0,"message":%s,'
        b'"finish_reason":"tool_calls"}]}' % (call.encode(), message)
    )


def send_all(proxy: MitmdumpProcess, requests: Iterator[tuple[dict[str, str], bytes]]) -> list[int]:
    """Sends the requests through the proxy, CLIENTS at a time, each client on one kept-alive connection, each body
    made when it is sent; the status of each answer."""
    address = urllib.parse.urlsplit(proxy.url)
    taking = threading.Lock()

    def client() -> list[int]:
        connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
        statuses = []
        try:
            while True:
                with taking:
                    request = next(requests, None)
                if request is None:
                    return statuses
                headers, body = request
                connection.request("POST", PATH, body, {"content-type": "application/json", **headers})
                response = connection.getresponse()
                response.read()
                statuses.append(response.status)
        finally:
            connection.close()

    with ThreadPoolExecutor(CLIENTS) as pool:
        clients = [pool.submit(client) for _ in range(CLIENTS)]
        return [status for done in clients for status in done.result()]


def memory_mb(pid: int) -> float:
    """Resident memory of a process now, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))) / 1024


def growth(
    proxy: MitmdumpProcess, make: Callable[[], Iterator[tuple[dict[str, str], bytes]]], settle: Callable[[], Any]
) -> float:
    """MB of resident memory the proxy holds after the requests, over what it held after one request of the same
    shape; `settle` waits for what the proxy does after the last answer (its captures)."""
    with proxy:
        requests = make()
        assert send_all(proxy, iter([next(requests)])) == [200]  # what is measured is what comes after it
        started = memory_mb(proxy.pid)
        assert set(send_all(proxy, requests)) == {200}
        settle()
        grown = memory_mb(proxy.pid) - started
    return grown


# --- 1. the history memory ----------------------------------------------------------------------------------------

EMPTY_LISTS = 175_000  # `"tools": [[],[],…]`: 0.52 MB of a body, about 12 MB once parsed
HISTORY_REQUESTS = 48


def empty_lists_requests() -> Iterator[tuple[dict[str, str], bytes]]:
    """Chat requests of 0.52 MB, each with an assistant tool-call message (so that it is read, and remembered for its
    next turn) and its own API key (so that each is remembered apart), each carrying tools made of empty lists."""
    tools = b"[" + b",".join([b"[]"] * EMPTY_LISTS) + b"]"
    for number in range(HISTORY_REQUESTS + 1):
        call = {"id": f"call_{number}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"call_{number}", "content": "ok"},
        ]
        head = json.dumps({"model": "m", "messages": messages}).encode()[:-1]
        headers = {"authorization": f"Bearer sk-memory-{number:04d}", "x-call": str(number)}
        yield headers, head + b', "tools": ' + tools + b"}"


@pytest.fixture(scope="module")
def small_answers() -> Iterator[ToolCallUpstream]:
    upstream = ToolCallUpstream(answer_bytes=100).start()
    yield upstream
    upstream.stop()


@pytest.mark.slow
def test_the_history_memory_holds_no_more_than_its_bound_however_its_requests_parse(
    small_answers: ToolCallUpstream, confdir: Path, tmp_path: Path
) -> None:
    """Before: 48 such requests left the proxy holding 603 MB more once idle, plain mitmdump 4 MB more; the bound of
    128 MiB counted only the bodies' bytes (25 MB)."""
    plain = growth(plain_streaming(small_answers.url, confdir), empty_lists_requests, lambda: None)
    log = tmp_path / "events.jsonl"
    proxy = reverse_proxy(small_answers.url, confdir, llm_cache=tmp_path / "cache.db", llm_log=log)
    addon = growth(
        proxy, empty_lists_requests, lambda: LogTail(log, whole=True).wait_for("captured", HISTORY_REQUESTS + 1)
    )
    print(f"history: +{addon:.0f} MB through the addon, +{plain:.0f} MB through plain mitmdump")  # -s shows it
    bound = MAX_HISTORY_BYTES / MB + 32
    assert addon <= plain + bound, f"+{addon:.0f} MB through the addon, +{plain:.0f} MB through plain mitmdump"


# --- 2. the memos of tool call fingerprints ------------------------------------------------------------------------

ARGUMENT_BYTES = 20 * 1024  # a file an agent writes
CALLS_PER_REQUEST = 10
DISTINCT_CALLS = 10_000


def large_argument_requests() -> Iterator[tuple[dict[str, str], bytes]]:
    """Chat requests whose history holds assistant tool calls that each write a file of 20 KB, every call its own:
    the proxy fingerprints each (name and arguments) to look its reasoning up."""
    for number in range(DISTINCT_CALLS // CALLS_PER_REQUEST + 1):
        calls = [f"{number}_{k}" for k in range(CALLS_PER_REQUEST)]
        tool_calls = b",".join(
            b'{"id":"call_%s","type":"function","function":{"name":"write_file","arguments":%s}}'
            % (call.encode(), arguments(call, ARGUMENT_BYTES))
            for call in calls
        )
        results = b",".join(b'{"role":"tool","tool_call_id":"call_%s","content":"written"}' % c.encode() for c in calls)
        body = (
            b'{"model":"m","messages":[{"role":"user","content":"write the files"},'
            b'{"role":"assistant","content":null,"tool_calls":[%s]},%s]}' % (tool_calls, results)
        )
        yield {"authorization": "Bearer sk-memory-files", "x-call": str(number)}, body


@pytest.fixture(scope="module")
def large_answers() -> Iterator[ToolCallUpstream]:
    upstream = ToolCallUpstream(answer_bytes=ARGUMENT_BYTES).start()
    yield upstream
    upstream.stop()


@pytest.mark.slow
def test_fingerprints_of_ten_thousand_large_tool_calls_hold_no_more_than_their_bound(
    large_answers: ToolCallUpstream, confdir: Path, tmp_path: Path
) -> None:
    """Before: the memos kept 8,192 of them with their canonical text, 40 KB each (330 MB); they keep at most 8 MiB
    of arguments longer than 256 characters."""
    answered = DISTINCT_CALLS // CALLS_PER_REQUEST + 1
    plain = growth(plain_streaming(large_answers.url, confdir), large_argument_requests, lambda: None)
    log = tmp_path / "events.jsonl"
    proxy = reverse_proxy(large_answers.url, confdir, llm_cache=tmp_path / "cache.db", llm_log=log)
    addon = growth(proxy, large_argument_requests, lambda: LogTail(log, whole=True).wait_for("captured", answered))
    print(f"fingerprints: +{addon:.0f} MB through the addon, +{plain:.0f} MB through plain mitmdump")  # -s shows it
    assert addon <= plain + 64, f"+{addon:.0f} MB through the addon, +{plain:.0f} MB through plain mitmdump"
