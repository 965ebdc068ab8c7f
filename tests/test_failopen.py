"""What a hook leaves for later runs after the message went on, and an error there is said, not raised."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from llm_reasoning_proxy.shared.events import EventLog
from llm_reasoning_proxy.shared.failopen import after_sending


def test_work_left_for_later_runs_on_the_loops_next_turn_and_fails_open(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl")
    done: list[str] = []

    def broken() -> None:
        raise RuntimeError("no such thing")

    async def hook() -> list[str]:
        after_sending("flow-1", "repair log", log, lambda: done.append("said"))
        after_sending("flow-1", "repair log", log, broken)
        seen = list(done)  # what ran before the hook returned
        await asyncio.sleep(0)
        return seen

    assert asyncio.run(hook()) == [] and done == ["said"]
    log.close()
    failures = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(f["kind"], f["flow_id"], f["stage"]) for f in failures] == [("failure", "flow-1", "repair log")]
    assert "no such thing" in failures[0]["error"]


def test_without_a_running_loop_the_work_runs_at_once(tmp_path: Path) -> None:
    done: list[str] = []
    after_sending("flow-1", "repair log", None, lambda: done.append("said"))
    assert done == ["said"]
