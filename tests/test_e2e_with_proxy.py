"""End to end: scripts/with-proxy puts real clients through a real mitmdump with the addon.

Each client knows nothing of the proxy: it calls DeepSeek at https://api.deepseek.com, and with-proxy's variables
(and its Node preload) alone take it through mitmdump, which sends the host's connections to the fake provider on
loopback (tests/support/real_hosts.py). Turn 2 of each tool loop drops `reasoning_content`, which the fake refuses
as DeepSeek does: the answer arriving means the proxy put it back.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from mitmproxy import io

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.real_hosts import RealHostsFake
from tests.support.with_proxy import (
    ANSWER,
    WithProxy,
    node_client,
    python_client,
    running,
    siblings_client,
    wait_for_record,
)

pytestmark = pytest.mark.e2e
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="no node on PATH")
needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="no curl on PATH")
CLIENT_EXIT = 3  # the clients exit with this once they have the answer: with-proxy must return it


@pytest.fixture(scope="module")
def real_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealHostsFake]:
    fake = RealHostsFake(tmp_path_factory.mktemp("real-hosts")).start()
    yield fake
    fake.stop()


@pytest.fixture
def with_proxy(tmp_path: Path, confdir: Path, real_hosts: RealHostsFake, api_key: str) -> WithProxy:
    return WithProxy(tmp_path, confdir, real_hosts, api_key)


def assert_repaired_through_proxy(with_proxy: WithProxy, done: subprocess.CompletedProcess[str]) -> None:
    """The answer came, with the client's status; the proxy captured turn 1 and repaired turn 2, and says so."""
    assert done.returncode == CLIENT_EXIT, done.stderr
    assert done.stdout.strip() == ANSWER
    log = LogTail(with_proxy.events, whole=True)
    assert log.wait_for("captured") and log.wait_for("repaired")
    sent = with_proxy.fake.find("authorization", f"Bearer {with_proxy.api_key}")
    assert len(sent) == 2 and sent[1].doc["messages"][1]["reasoning_content"]
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith("with-proxy: 2 request(s) went through the proxy (2 to LLM providers: 1 repaired")


CLIENTS = [
    pytest.param(python_client("openai"), id="python-openai"),
    pytest.param(python_client("requests"), id="python-requests", marks=pytest.mark.slow),
    pytest.param(python_client("httpx"), id="python-httpx", marks=pytest.mark.slow),
    pytest.param(python_client("curl"), id="curl", marks=[needs_curl, pytest.mark.slow]),
    pytest.param(node_client("fetch"), id="node-fetch", marks=needs_node),
    pytest.param(node_client("https"), id="node-https", marks=[needs_node, pytest.mark.slow]),
]


@pytest.mark.parametrize("client", CLIENTS)
def test_client_goes_through_and_its_turn_two_is_repaired(with_proxy: WithProxy, client: list[str]) -> None:
    done = with_proxy.run(client=client, CLIENT_EXIT=str(CLIENT_EXIT))
    assert_repaired_through_proxy(with_proxy, done)


def test_mitmdump_options_reach_mitmdump(with_proxy: WithProxy) -> None:
    """`-w` before `--` goes to mitmdump: the session is in the flow file, under the provider's real host name."""
    flows = with_proxy.tmp / "session.mitm"
    done = with_proxy.run("-w", str(flows), client=python_client("httpx"), CLIENT_EXIT=str(CLIENT_EXIT))
    assert_repaired_through_proxy(with_proxy, done)
    with flows.open("rb") as handle:
        read = list(io.FlowReader(handle).stream())
    assert [(f.request.pretty_host, f.request.path) for f in read] == [("api.deepseek.com", "/chat/completions")] * 2


@needs_curl
def test_a_client_that_ignores_the_proxy_is_named(with_proxy: WithProxy, fake: FakeProvider) -> None:
    done = with_proxy.run(client=["curl", "-sS", "--noproxy", "*", f"{fake.url}/v1/models"])
    assert done.returncode == 0, done.stderr
    assert '"ok": true' in done.stdout
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith("with-proxy: nothing went through the proxy: if curl made requests, it ignores proxy")
    assert "scripts/run --mode reverse:" in summary


def test_nothing_is_left_running_once_the_client_exits(with_proxy: WithProxy) -> None:
    record = with_proxy.tmp / "record.json"
    done = with_proxy.run(client=siblings_client(record, wait=False))
    assert done.returncode == 0, done.stderr
    seen = json.loads(record.read_text())
    assert seen["siblings"], "the client saw no mitmdump beside it"
    assert not [pid for pid in [seen["client"], *seen["siblings"]] if running(pid)]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("how", "status"),
    [("kill the client", 128 + signal.SIGKILL), ("SIGTERM", 128 + signal.SIGTERM), ("SIGINT", 128 + signal.SIGINT)],
)
def test_nothing_is_left_running_when_the_client_is_killed_or_with_proxy_interrupted(
    with_proxy: WithProxy, how: str, status: int
) -> None:
    """A killed client ends with-proxy with the client's status; a signal to with-proxy goes on to the client
    (not typed at a terminal, so the client did not get it already); either way the proxy stops."""
    record = with_proxy.tmp / "record.json"
    process = with_proxy.start(client=siblings_client(record, wait=True))
    try:
        seen = wait_for_record(record, process)
        if how == "kill the client":
            signal_pid, sig = seen["client"], signal.SIGKILL
        else:
            signal_pid, sig = process.pid, getattr(signal, how)
        os.kill(signal_pid, sig)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == status, err
    assert not [pid for pid in [seen["client"], *seen["siblings"]] if running(pid)]


@needs_curl
@pytest.mark.slow
def test_a_client_that_distrusts_the_ca_is_named(with_proxy: WithProxy) -> None:
    """A client reading a trust store of its own refuses mitmproxy's certificate: the summary names it and the host,
    and with-proxy exits with the client's status (curl's 60: peer certificate cannot be authenticated)."""
    url = "https://api.deepseek.com/v1/models"
    done = with_proxy.run(client=["curl", "-sS", "--cacert", str(with_proxy.fake.ca_file), url])
    assert done.returncode == 60, done.stderr
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith("with-proxy: nothing went through the proxy: curl refused mitmproxy's certificate for ")
    assert "api.deepseek.com" in summary


@pytest.mark.slow
def test_a_turn_the_proxy_never_saw_is_recovered_and_counted(with_proxy: WithProxy) -> None:
    """Turn 2 of a conversation whose turn 1 went elsewhere: DeepSeek would refuse it, the proxy lets it go on
    without that reasoning, and the summary counts it."""
    done = with_proxy.run(client=[*python_client("httpx"), "--unseen"], CLIENT_EXIT=str(CLIENT_EXIT))
    assert done.returncode == CLIENT_EXIT, done.stderr
    assert done.stdout.strip() == ANSWER
    assert LogTail(with_proxy.events, whole=True).wait_for("recovered")
    summary = done.stderr.strip().splitlines()[-1]
    assert summary.startswith(
        "with-proxy: 1 request(s) went through the proxy (1 to LLM providers: 0 repaired, 1 recov"
    )
