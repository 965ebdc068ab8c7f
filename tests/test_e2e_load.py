"""Load: 200 concurrent agent conversations of 5 tool-call turns through one proxy (scripts/load.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.load import render, run_load

pytestmark = pytest.mark.e2e

CONVERSATIONS, TURNS, WAVES = 200, 5, 3


@pytest.mark.slow
def test_every_turn_of_200_concurrent_conversations_is_repaired_and_memory_stays_flat(tmp_path: Path) -> None:
    report = run_load(CONVERSATIONS, TURNS, WAVES, tmp_path)
    print(render(report))
    for wave in report.waves:
        # Every turn answered 200: the fake refuses a turn the proxy did not repair with Copilot's real 400.
        assert wave.statuses == {"200": CONVERSATIONS * (TURNS + 1)}, wave.statuses
        assert wave.answers == CONVERSATIONS
    assert report.repaired_events == CONVERSATIONS * TURNS * WAVES
    assert report.failure_events == 0 and report.proxy_errors == []
    # The warm-up waves fill the proxy's bounded caches (parsed records, remembered keys); then memory is flat.
    assert report.growth_after_warmup_mb < 8, render(report)
