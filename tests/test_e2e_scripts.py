"""End to end: the README's scripts and advice, as a newcomer follows them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.proxy import ROOT, MitmdumpProcess, scripts_env
from tests.support.tls_upstream import ANSWER, TLSUpstream

pytestmark = pytest.mark.e2e


def test_the_demo_shows_the_repair_and_leaves_nothing_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), **scripts_env()}
    result = subprocess.run(
        [str(ROOT / "scripts" / "demo")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert result.returncode == 0, result.stdout
    assert "straight to the provider: HTTP 400" in result.stdout
    assert "through the proxy:        HTTP 200" in result.stdout
    assert "  repaired: wire_format=chat_completions, applied=True, actions=content_null,restored" in result.stdout
    assert re.search(r"\n  started: llm-reasoning-proxy \S+ on mitmproxy \S+, Python ", result.stdout)  # not empty
    # its state folder (cache, event log, mitmproxy's CA) was made where the system's temporary files go, and is gone
    (state,) = re.findall(r"its state in (\S+), removed", result.stdout)
    assert Path(state).parent == tmp_path and list(tmp_path.iterdir()) == []


def test_the_scripts_leave_a_venv_they_did_not_make_alone(tmp_path: Path) -> None:
    """LLM_PROXY_VENV may name a venv made another way (uv makes them without pip): never removed, only named."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (venv / "IMPORTANT.txt").write_text("mine")
    env = {**os.environ, "LLM_PROXY_VENV": str(venv)}
    result = subprocess.run(
        [str(ROOT / "scripts" / "run"), "--version"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert result.returncode == 1
    assert f"{venv} has no working Python with pip (made by uv?)" in result.stdout
    assert (venv / "IMPORTANT.txt").read_text() == "mine"


@pytest.mark.slow
def test_behind_a_tls_intercepting_proxy_the_corporate_ca_is_what_upstream_https_needs(
    confdir: Path, tmp_path: Path
) -> None:
    """The README's advice: an upstream whose certificate a corporate CA issued gets 502 from mitmproxy, until
    `ssl_verify_upstream_trusted_ca` names that CA."""
    with TLSUpstream(tmp_path) as upstream:
        body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        options = ("--mode", f"reverse:{upstream.url}", "--set", "llm_cache=memory", "--set", "llm_log=")
        with MitmdumpProcess(*options, confdir=confdir) as proxy:
            refused = httpx.post(f"{proxy.url}/v1/chat/completions", content=body, timeout=30)
            assert refused.status_code == 502 and "Certificate verify failed" in refused.text
        trusting = (*options, "--set", f"ssl_verify_upstream_trusted_ca={upstream.ca_file}")
        with MitmdumpProcess(*trusting, confdir=confdir) as proxy:
            answered = httpx.post(f"{proxy.url}/v1/chat/completions", content=body, timeout=30)
            assert answered.status_code == 200 and answered.content == ANSWER
