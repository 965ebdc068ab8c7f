"""End to end: a real mitmdump with llm_metrics, a tool loop with a repair and a 400, /metrics read with httpx and
scraped by a real Prometheus server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess, reverse_proxy, start_failure
from tests.support.turns import client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e
MODEL = "deepseek-v4-flash"
DEADLINE = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def metrics_proxy(fake: FakeProvider, confdir: Path, tmp_path: Path) -> Iterator[tuple[MitmdumpProcess, str]]:
    port = free_port()
    process = reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log="", llm_metrics=f"127.0.0.1:{port}")
    with process:
        yield process, f"127.0.0.1:{port}"


def tool_loop_with_a_repair_and_a_400(proxy: MitmdumpProcess, fake: FakeProvider, api_key: str) -> None:
    proxied = client(proxy.url, api_key, parallel="2")
    turn = first_turn(proxied, MODEL, stream=True)
    # The client drops reasoning_content: the proxy puts it back from what it captured.
    assert second_turn(proxied, MODEL, history_as_sent(turn, drop=("reasoning_content",), content=""), stream=True) == (
        "The directory holds two files."
    )
    # A turn the proxy never saw (made past it, by another caller, so not even its calls' arguments match): nothing
    # to put back, the provider's 400 is explained.
    other_key = f"{api_key}-other"
    unseen = first_turn(client(fake.url, other_key, parallel="2"), MODEL, stream=False)
    with pytest.raises(openai.BadRequestError):
        second_turn(
            client(proxy.url, other_key),
            MODEL,
            history_as_sent(unseen, drop=("reasoning_content",), content=""),
            stream=False,
        )


def scrape(address: str, *wanted: str) -> str:
    """/metrics once it shows every wanted text (the repair's event is written once its answer is in)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        text = httpx.get(f"http://{address}/metrics", timeout=5).text
        if all(w in text for w in wanted) or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


def test_metrics_count_a_tool_loop(metrics_proxy, fake: FakeProvider, api_key: str) -> None:
    proxy, address = metrics_proxy
    tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
    text = scrape(address, "llm_proxy_repairs_total{", "llm_proxy_diagnosed_total{", "llm_proxy_cache_misses_total")
    # A reverse proxy to the fake on loopback: no dialect serves that host, so the host is the provider.
    host = fake.url.removeprefix("http://").rsplit(":", 1)[0]
    assert f'llm_proxy_exchanges_total{{format="chat_completions",model="{MODEL}",provider="{host}"}} 3.0' in text
    assert 'llm_proxy_repairs_total{applied="true",kind="restored"}' in text
    assert 'llm_proxy_diagnosed_total{rule="reasoning_content_missing",status="400"} 1.0' in text
    assert 'llm_proxy_captures_total{stored="true"}' in text
    assert "llm_proxy_cache_hits_total 0.0" not in text and "llm_proxy_cache_misses_total 0.0" not in text
    assert 'llm_proxy_addon_seconds_count{phase="request"} 3.0' in text
    assert 'llm_proxy_addon_seconds_count{phase="response"}' in text
    assert api_key not in text


def test_a_taken_port_is_one_clear_line_at_startup(fake: FakeProvider, confdir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, output = start_failure(
            reverse_proxy(fake.url, confdir, llm_cache="memory", llm_metrics=f"127.0.0.1:{port}")
        )
    assert code == 1
    assert f"llm_metrics: cannot serve metrics on 127.0.0.1:{port}: Address already in use" in output
    assert "Traceback" not in output


def prometheus_binary() -> str:
    """Debian's prometheus, installed as scripts/test installs redis-server; the test is skipped without it."""
    binary = shutil.which("prometheus")
    if binary is None:
        sudo = [] if shutil.which("sudo") is None else ["sudo", "-n"]
        install = "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends"
        done = subprocess.run([*sudo, "sh", "-c", f"{install} prometheus"], capture_output=True, text=True)
        binary = shutil.which("prometheus")
        if binary is None:
            pytest.skip(f"prometheus is not installed and could not be: {done.stderr.strip()[-200:]}")
    return binary


def test_prometheus_scrapes_the_repairs(metrics_proxy, fake: FakeProvider, api_key: str, tmp_path: Path) -> None:
    binary = prometheus_binary()
    proxy, address = metrics_proxy
    config = tmp_path / "prometheus.yml"
    config.write_text(
        f"global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: llm-proxy\n"
        f"    static_configs:\n      - targets: ['{address}']\n"
    )
    web = f"127.0.0.1:{free_port()}"
    server = subprocess.Popen(
        [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address={web}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
        query = 'sum(llm_proxy_repairs_total{kind="restored"})'
        deadline, result = time.monotonic() + DEADLINE, []
        while not result and time.monotonic() < deadline:
            try:
                answer = httpx.get(f"http://{web}/api/v1/query", params={"query": query}, timeout=5).json()
                result = answer["data"]["result"]
            except (httpx.HTTPError, ValueError, KeyError):
                pass  # Prometheus is still starting
            if not result:
                time.sleep(0.2)
        assert result, f"no {query} in Prometheus after {DEADLINE}s"
        assert float(result[0]["value"][1]) >= 1
    finally:
        server.terminate()
        server.wait(timeout=20)
