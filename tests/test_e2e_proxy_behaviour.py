"""End to end: what the proxy guarantees about traffic it passes, streams, survives and writes down."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
import uuid
from pathlib import Path

import httpx
import openai
import pytest
from llm_reasoning_proxy import __version__
from llm_reasoning_proxy.shared import compat
from mitmproxy import http, io

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.planted import planted
from tests.support.proxy import ROOT, MitmdumpProcess, read_flow_file, reverse_proxy, scripts_env
from tests.support.turns import QUESTION, TOOLS, client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e
GEMINI = "gemini-3-pro-preview"


def post(base_url: str, path: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{base_url}{path}", content=body, headers={k.replace("_", "-"): v for k, v in headers.items()}, timeout=30
    )


def zed_turn_two(fake: FakeProvider, base_url: str, api_key: str, **options: str) -> list[dict]:
    """Turn 1 through `base_url`, then the history a client that drops the opaque would send."""
    turn = first_turn(client(base_url, api_key, **options), GEMINI, stream=True)
    assert turn["reasoning_opaque"] == fake.issued[turn["tool_calls"][0]["id"]]["reasoning_opaque"]
    return history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=[])


# --- passthrough ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, body, content_type",
    [
        ("/v1/other", b'{"a": 1}', "application/json"),
        (
            "/v1/chat/completions",
            b'{ "model" : "gemini-3-pro-preview",\n "messages": [{"role":"user","content":"caf\\u00e9"}] }',
            "application/json",
        ),
        # tool calls present, but nothing cached for them and nothing malformed: no repair
        (
            "/v1/chat/completions",
            json.dumps(
                {
                    "model": GEMINI,
                    "messages": [
                        QUESTION,
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {"id": "call_unknown", "type": "function", "function": {"name": "x", "arguments": "{}"}}
                            ],
                        },
                        {"role": "tool", "tool_call_id": "call_unknown", "content": "ok"},
                    ],
                },
                indent=1,
            ).encode(),
            "application/json",
        ),
        ("/v1/chat/completions", b"hello, not json", "text/plain"),
        ("/v1/chat/completions", b'{"messages": [{"role": "assistant", "tool_calls": [', "application/json"),
    ],
    ids=["not-llm", "odd-formatting", "uncached-tool-calls", "non-json-content-type", "truncated-json"],
)
def test_requests_needing_no_repair_arrive_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, path: str, body: bytes, content_type: str
) -> None:
    post(proxy.url, path, body, content_type=content_type)
    assert fake.requests[-1].body == body
    assert post(proxy.url, "/v1/other", b"{}").status_code == 200  # still serving


def test_malformed_json_is_logged_and_forwarded(fake: FakeProvider, proxy: MitmdumpProcess) -> None:
    body = b'{"messages": [{"role": "assistant", "tool_calls": [{"id": "c1"'
    first_line = len(proxy.lines)
    response = post(proxy.url, "/v1/chat/completions", body, content_type="application/json")
    assert response.status_code == 400  # the provider's own answer, passed through
    assert fake.requests[-1].body == body
    proxy.wait_for_line("request body is not valid JSON; forwarded unchanged", since=first_line)


def test_gzip_request_needing_no_repair_is_untouched(fake: FakeProvider, proxy: MitmdumpProcess) -> None:
    body = gzip.compress(json.dumps({"model": GEMINI, "messages": [QUESTION]}).encode())
    post(proxy.url, "/v1/chat/completions", body, content_type="application/json", content_encoding="gzip")
    assert fake.requests[-1].body == body
    assert fake.requests[-1].headers["content-encoding"] == "gzip"


def test_gzip_request_is_repaired_and_stays_gzip(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    messages = zed_turn_two(fake, proxy.url, api_key)
    body = gzip.compress(json.dumps({"model": GEMINI, "messages": messages, "tools": TOOLS}).encode())
    response = post(
        proxy.url,
        "/v1/chat/completions",
        body,
        content_type="application/json",
        content_encoding="gzip",
        authorization=f"Bearer {api_key}",
    )
    assert response.status_code == 200, response.text
    received = fake.requests[-1]
    assert received.headers["content-encoding"] == "gzip"
    sent = json.loads(gzip.decompress(received.body))["messages"][1]
    assert sent["reasoning_opaque"] == fake.issued[sent["tool_calls"][0]["id"]]["reasoning_opaque"]


# --- streams -------------------------------------------------------------------------------------


def test_first_event_of_a_slow_stream_arrives_long_before_its_end(fake: FakeProvider, proxy: MitmdumpProcess) -> None:
    body = json.dumps({"model": GEMINI, "messages": [QUESTION], "tools": TOOLS, "stream": True}).encode()
    hold = f"slow-{uuid.uuid4().hex}"  # the fake stops after its first event until the test releases it
    sent_when_first_arrived = None
    received = b""
    try:
        with httpx.stream(
            "POST",
            f"{proxy.url}/v1/chat/completions",
            content=body,
            timeout=180,  # past the fake's own limit on a hold: a proxy that buffered fails the assertion below
            headers={"x-fake-events": "12", "x-fake-hold": hold, "x-fake-hold-after": "1"},
        ) as response:
            for piece in response.iter_raw():
                if sent_when_first_arrived is None:
                    sent_when_first_arrived = bytes(fake.wait_for_request("x-fake-hold", hold).sent)
                    fake.release(hold)
                received += piece
    finally:
        fake.release(hold)
    recorded = fake.wait_for_request("x-fake-hold", hold)
    assert sent_when_first_arrived is not None
    # The client had the first bytes while the rest of the stream was still to come: not buffered to its end.
    assert b"[DONE]" not in sent_when_first_arrived and sent_when_first_arrived.count(b"data: ") == 1
    assert received == bytes(recorded.wire) and b"data: [DONE]" in recorded.sent  # then the whole stream


@pytest.mark.parametrize("encoding", [None, "gzip", "br", "zstd", "deflate"])
def test_stream_reaches_client_byte_for_byte_and_is_captured(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, encoding: str | None
) -> None:
    options = {"encoding": encoding} if encoding else {}
    body = json.dumps({"model": GEMINI, "messages": [QUESTION], "tools": TOOLS, "stream": True}).encode()
    headers = {"authorization": f"Bearer {api_key}", **{f"x-fake-{k}": v for k, v in options.items()}}
    with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", content=body, headers=headers, timeout=30) as r:
        received = b"".join(r.iter_bytes())  # decoded by httpx, as the client sees it
    assert received == bytes(fake.requests[-1].sent)
    # The capture read the compressed copy: turn 2 through the proxy is repaired.
    events = [json.loads(line[6:]) for line in received.decode().splitlines() if line.startswith("data: {")]
    call = next(c for e in events for c in e["choices"][0]["delta"].get("tool_calls", []))
    turn = {"tool_calls": [{"id": call["id"], "function": call["function"]}]}
    messages = history_as_sent(turn, drop=(), content=[])
    assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=False) == "The directory holds two files."


def test_aborted_stream_after_the_tool_call_is_still_usable(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    body = json.dumps({"model": GEMINI, "messages": [QUESTION], "tools": TOOLS, "stream": True}).encode()
    headers = {"authorization": f"Bearer {api_key}", "x-fake-abort-after": "3"}  # reasoning x2, tool call, then cut
    received = b""
    with pytest.raises(httpx.HTTPError):
        with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", content=body, headers=headers, timeout=30) as r:
            for piece in r.iter_raw():
                received += piece
    call = json.loads(received.split(b"data: ")[3])["choices"][0]["delta"]["tool_calls"][0]
    messages = history_as_sent({"tool_calls": [call]}, drop=(), content=None)
    assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=False) == "The directory holds two files."
    assert fake.last().doc["messages"][1]["reasoning_opaque"] == fake.issued[call["id"]]["reasoning_opaque"]


# --- processes -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("how", ["terminate", "kill"])
def test_turn_two_through_a_new_process_on_the_same_cache(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str, how: str
) -> None:
    args = ("--mode", f"reverse:{fake.url}", "--set", f"llm_cache={tmp_path / 'cache.db'}")
    first = MitmdumpProcess(*args, confdir=confdir).start()
    try:
        messages = zed_turn_two(fake, first.url, api_key)
        # What is promised: an entry is in the cache once its `captured` event is written, which comes just
        # after the client has the answer's last byte. A kill in between may lose it (see the README).
        (captured,) = LogTail(tmp_path / "events.jsonl", whole=True).wait_for("captured")
        assert captured["stored"] is True
    finally:
        first.kill() if how == "kill" else first.stop()
    with MitmdumpProcess(*args, confdir=confdir) as second:
        assert (
            second_turn(client(second.url, api_key), GEMINI, messages, stream=True) == "The directory holds two files."
        )
    sent = fake.last().doc["messages"][1]
    assert sent["reasoning_opaque"] == fake.issued[sent["tool_calls"][0]["id"]]["reasoning_opaque"]


def test_other_credential_gets_nothing(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    messages = zed_turn_two(fake, proxy.url, api_key)
    with pytest.raises(openai.BadRequestError, match="missing a `thought_signature`"):
        # content [] is still fixed, but no reasoning from another account is inserted
        second_turn(client(proxy.url, api_key + "-other"), GEMINI, messages, stream=False)
    assert "reasoning_opaque" not in fake.last().doc["messages"][1]


@pytest.mark.slow
def test_secrets_never_reach_the_log_or_the_cache(fake: FakeProvider, confdir: Path, tmp_path: Path) -> None:
    token = planted("sk-test-", "PLANTEDSECRET0123456789abcdef")
    query_key = planted("AIza", "PLANTEDQUERYKEY0123456789abcdefghij")
    cache, log = tmp_path / "cache.db", tmp_path / "events.jsonl"
    with reverse_proxy(fake.url, confdir, llm_cache=cache, llm_log=log) as proxy:
        llm = openai.OpenAI(
            base_url=f"{proxy.url}/v1",
            api_key=token,
            max_retries=0,
            default_query={"key": query_key},
            default_headers={"cookie": "session=PLANTEDCOOKIE"},
        )
        turn = first_turn(llm, GEMINI, stream=False)
        second_turn(llm, GEMINI, history_as_sent(turn, drop=("reasoning_opaque",), content=[]), stream=False)
    written = log.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("cache.db*"))
    assert b'"kind":"repaired"' in log.read_bytes()
    for secret in (token, query_key, "PLANTEDCOOKIE"):
        assert secret.encode() not in written
    assert "key=%5BREDACTED%5D" in log.read_text() or "key=[REDACTED]" in log.read_text()
    assert oct(cache.stat().st_mode & 0o777) == "0o600" and oct(log.stat().st_mode & 0o777) == "0o600"


@pytest.mark.slow
def test_observe_only_logs_what_it_would_repair(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    log = tmp_path / "events.jsonl"
    with reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log=log, llm_repair="false") as proxy:
        assert "repair=off (observe only)" in proxy.output
        messages = zed_turn_two(fake, proxy.url, api_key)
        with pytest.raises(openai.BadRequestError, match="invalid request body"):
            second_turn(client(proxy.url, api_key), GEMINI, messages, stream=False)
    repaired = [e for e in map(json.loads, log.read_text().splitlines()) if e["kind"] == "repaired"]
    assert repaired and repaired[-1]["applied"] is False
    assert {a["kind"] for a in repaired[-1]["actions"]} == {"content_null", "restored"}


# --- startup -------------------------------------------------------------------------------------


def startup_error(process: MitmdumpProcess) -> str:
    """What mitmdump printed when it refused to start (exit status 1), without its "Loading script" line."""
    with pytest.raises(RuntimeError, match="exited with 1"):
        process.start()
    return "\n".join(line for line in process.lines if "Loading script" not in line)


@pytest.mark.slow
@pytest.mark.parametrize(
    "option, message",
    [
        ("llm_repair=maybe", "llm_repair: expected true or false, got 'maybe'"),
        (
            "llm_cache_max_age=banana",
            "llm_cache_max_age: expected a positive duration such as 3600, 30m, 12h or 7d, got 'banana'",
        ),
        ("llm_cache_max_entries=0", "llm_cache_max_entries: expected a whole number of at least 1"),
        ("llm_cahce=memory", "unknown option(s) llm_cahce; the llm addon knows llm_anonymous_fallback, "),
        ("llm_cache=/proc/no-such-dir/cache.db", "llm_cache: cannot open the reasoning cache at /proc/no-such-dir/"),
    ],
)
def test_bad_configuration_stops_mitmdump_with_one_line(confdir: Path, option: str, message: str) -> None:
    """One line naming the option and what it takes, as mitmproxy's own option errors: no traceback, and no
    "listening" line first, on either line of mitmproxy."""
    output = startup_error(MitmdumpProcess("--set", option, confdir=confdir))
    assert len(output.splitlines()) == 1 and output.startswith(f"mitmdump: {message}"), output


@pytest.mark.slow
def test_repeated_option_stops_mitmdump_with_one_line(confdir: Path) -> None:
    process = MitmdumpProcess("--set", "llm_cache=memory", "--set", "llm_cache=/tmp/x.db", confdir=confdir)
    output = startup_error(process)
    assert output == "mitmdump: llm options set more than once: llm_cache ('memory', '/tmp/x.db'); set each once"


@pytest.mark.slow
def test_missing_dependency_stops_mitmdump_with_one_line(confdir: Path, tmp_path: Path) -> None:
    """mitmproxy's standalone binaries, or a mitmproxy installed without this project, cannot import what the addon
    needs: mitmdump says which package is missing and how to install it."""
    blocker = tmp_path / "sitecustomize.py"  # as if msgspec were not installed where mitmproxy runs
    blocker.write_text("import sys\nsys.modules['msgspec'] = None\n")
    process = MitmdumpProcess(confdir=confdir, env={"PYTHONPATH": str(tmp_path)})
    output = startup_error(process)
    assert len(output.splitlines()) == 1, output
    assert output.startswith("mitmdump: llm-reasoning-proxy cannot import msgspec in the Python that runs mitmproxy")
    assert "pipx inject mitmproxy" in output and "standalone binaries cannot load extra packages" in output


@pytest.mark.slow
def test_a_broken_addon_reloads_once_mended(confdir: Path, tmp_path: Path) -> None:
    """mitmproxy reloads a script whose file changes. A mistake in the addon's own code, saved while mitmproxy
    runs, is shown with its traceback and mitmproxy goes on watching: once mended, the addon is active again."""
    addon = tmp_path / "addon"
    shutil.copytree(ROOT / "addon", addon, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    limits, main = addon / "shared" / "limits.py", addon / "main.py"
    mended = limits.read_text()

    def save(path: Path, text: str, seconds: int) -> None:
        path.write_text(text)
        later = time.time() + seconds  # a newer time than any before, however coarse the clock of the file system
        os.utime(main, (later, later))

    with MitmdumpProcess("--set", "llm_cache=memory", "--set", "llm_log=", confdir=confdir, script=main) as proxy:
        since = len(proxy.lines)
        save(limits, mended + "\nfrom ..no_such_module import anything\n", 10)
        proxy.wait_for_line("No module named 'llm_reasoning_proxy.no_such_module'", since=since)
        assert "cannot import" not in proxy.output  # not taken for a missing dependency
        since = len(proxy.lines)
        save(limits, mended, 20)
        proxy.wait_for_line(" active: cache=memory", since=since)


@pytest.mark.slow
def test_loads_from_any_working_directory_and_says_it_is_active(confdir: Path, tmp_path: Path) -> None:
    with MitmdumpProcess("--set", "llm_cache=memory", "--set", "llm_log=", confdir=confdir, cwd=tmp_path) as proxy:
        # the version of the code that runs (installed or not) and what it runs on
        startup = f"llm-reasoning-proxy {__version__} on {compat.runtime()}, active: cache=memory"
        assert startup in proxy.output and "log=off, repair=on" in proxy.output


def test_scripts_web_runs_mitmweb_with_the_addon(fake: FakeProvider, confdir: Path, api_key: str) -> None:
    """The README's mitmweb command: the addon active, traffic through it repaired as under mitmdump, the UI up."""
    with socket_port() as web_port:
        pass
    web = MitmdumpProcess(
        "--web-port",
        str(web_port),
        "--set",
        "web_open_browser=false",
        "--mode",
        f"reverse:{fake.url}",
        "--set",
        "llm_cache=memory",
        "--set",
        "llm_log=",
        confdir=confdir,
        mitmdump=ROOT / "scripts" / "web",
        addon=False,  # scripts/web loads it itself
        env=scripts_env(),
    )
    with web:
        web.wait_for_line(" active: cache=memory")
        messages = zed_turn_two(fake, web.url, api_key)
        assert second_turn(client(web.url, api_key), GEMINI, messages, stream=True)
        web.wait_for_line("llm repaired")
        ui = web.wait_for_line(f"Web server listening at http://127.0.0.1:{web_port}/")
        page = httpx.get(ui.split("listening at ", 1)[1].strip(), timeout=30)
        assert page.status_code == 200 and "mitmproxy" in page.text


class socket_port:
    """A free TCP port on loopback."""

    def __enter__(self) -> int:
        import socket

        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        return self._socket.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self._socket.close()


@pytest.mark.slow
def test_flow_file_keeps_bodies_comments_and_markers(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    flows = tmp_path / "flows.mitm"
    with reverse_proxy(fake.url, confdir, "-w", str(flows), llm_cache="memory") as proxy:
        messages = zed_turn_two(fake, proxy.url, api_key)
        second_turn(client(proxy.url, api_key), GEMINI, messages, stream=True)
    with flows.open("rb") as handle:
        recorded = [f for f in io.FlowReader(handle).stream() if isinstance(f, http.HTTPFlow)]
    first, second = recorded
    assert b"reasoning_opaque" in first.response.content  # the streamed body was re-attached
    assert first.comment.startswith("llm captured reasoning_opaque, reasoning_text for 1 tool call")
    assert second.marked == ":wrench:"
    assert "restored reasoning_text, reasoning_opaque on messages[1]" in second.comment
    assert second.metadata["llm"]["repairs"][0] == "content [] -> null on messages[1]"
    assert b'"content": " directory"' in second.response.content


@pytest.mark.slow
def test_a_flow_file_read_back_is_read_as_it_was_live(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    """`mitmdump -r` (and `scripts/web -r`) hands the addon answers whose bodies are already whole: a JSON answer
    and a streamed one are read as they were live, never taken for an answer that is not JSON."""
    flows = tmp_path / "flows.mitm"
    with reverse_proxy(fake.url, confdir, "-w", str(flows), llm_cache="memory", llm_log="") as proxy:
        first_turn(client(proxy.url, api_key), GEMINI, stream=False)
        first_turn(client(proxy.url, api_key), GEMINI, stream=True)
    log = tmp_path / "events.jsonl"
    result = read_flow_file(flows, confdir, "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "llm skipped" not in result.stdout + result.stderr
    events = [json.loads(line) for line in log.read_text().splitlines()]
    captured = [e for e in events if e["kind"] == "captured"]
    assert [(e["streamed"], e["complete"], len(e["tool_calls"])) for e in captured] == [
        (False, True, 1),
        (True, True, 1),
    ]
    assert all(e["stored"] and {"reasoning_opaque", "reasoning_text"} <= e["fields"].keys() for e in captured)


@pytest.mark.slow
def test_event_log_is_rotated_at_its_size(fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str) -> None:
    log = tmp_path / "events.jsonl"
    with reverse_proxy(
        fake.url, confdir, llm_cache="memory", llm_log=log, llm_log_max_size="8KB", llm_log_backups=1
    ) as proxy:
        for _ in range(12):  # each turn logs a captured event with its reasoning text: well past 16 KB in all
            first_turn(client(proxy.url, api_key), GEMINI, stream=False)
    assert sorted(p.name for p in tmp_path.glob("events.jsonl*")) == ["events.jsonl", "events.jsonl.1"]
    assert all(p.stat().st_size < 8192 + 4096 for p in tmp_path.glob("events.jsonl*"))
    assert '"kind":"captured"' in "".join(p.read_text() for p in tmp_path.glob("events.jsonl*"))
