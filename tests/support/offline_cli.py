"""The offline tools' command line, as scripts/check and scripts/export run it, for end-to-end tests."""

from __future__ import annotations

import subprocess
import sys

from .proxy import ROOT


def offline_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`python -m llm_reasoning_proxy.offline.cli ARGS` from the checkout, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
