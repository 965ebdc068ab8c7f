"""End to end: the README's scripts, as a newcomer runs them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.proxy import ROOT

pytestmark = pytest.mark.e2e


def test_the_demo_shows_the_repair_and_leaves_nothing_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path), "LLM_PROXY_VENV": str(Path(sys.executable).parent.parent)}
    result = subprocess.run(
        [str(ROOT / "scripts" / "demo")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert result.returncode == 0, result.stdout
    assert "straight to the provider: HTTP 400" in result.stdout
    assert "through the proxy:        HTTP 200" in result.stdout
    assert "  repaired: wire_format=chat_completions, applied=True" in result.stdout
    assert list(tmp_path.iterdir()) == []  # its state folder (cache, event log, mitmproxy's CA) is gone
