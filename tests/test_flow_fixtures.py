"""Every fixture exported into flows/ replays through the addon to the repairs it was exported with."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.fixtures import fixture_to_flow, read_fixture_dir

FLOWS = Path(__file__).resolve().parent.parent / "flows"
FIXTURE_DIRS = sorted(path.parent for path in FLOWS.glob("*/meta.json"))


def test_flows_holds_the_sample_conversation() -> None:
    assert FLOWS / "opencode-deepseek-multistep" in FIXTURE_DIRS


@pytest.mark.parametrize("folder", FIXTURE_DIRS, ids=lambda p: p.name)
def test_fixture_replays_to_its_expected_repairs(folder: Path) -> None:
    fixtures = read_fixture_dir(folder)
    assert fixtures, f"{folder} holds no exchange"
    checks = check_flows([fixture_to_flow(f) for f in fixtures])
    for fixture, check in zip(fixtures, checks, strict=True):
        assert fixture.expect is not None, f"{folder}: exchange {check.number} has no expectation"
        assert [a.describe() for a in check.actions] == fixture.expect.repairs, f"{folder} #{check.number}"
        assert [v.describe() for v in check.remaining] == fixture.expect.fails_after_repair, f"{folder} #{check.number}"
