"""The JSONL event log: owner-only, bounded by rotation, safe to share between processes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from llm_reasoning_proxy.events import EventLog, Skipped

ROOT = Path(__file__).resolve().parents[1]


def event(n: int, pad: int = 200) -> Skipped:
    return Skipped(flow_id=f"flow-{n}", url="https://example.test/v1/chat/completions", reason="x" * pad)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_log_rotates_at_its_size_and_keeps_the_newest_backups(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=4096, backups=2)
    for n in range(200):  # about 300 bytes each: many rotations
        log.write(event(n))
    log.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["events.jsonl", "events.jsonl.1", "events.jsonl.2"]
    assert all(p.stat().st_size < 4096 + 400 for p in tmp_path.iterdir())  # at most one line past the bound
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in tmp_path.iterdir())
    # Nothing is lost or reordered within what is kept: the newest events, in order, ending with the last.
    kept = [
        e["flow_id"] for name in ("events.jsonl.2", "events.jsonl.1", "events.jsonl") for e in lines(tmp_path / name)
    ]
    assert kept == [f"flow-{n}" for n in range(200 - len(kept), 200)]


def test_no_backups_starts_the_log_afresh(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path, max_bytes=4096, backups=0)
    for n in range(100):
        log.write(event(n))
    log.close()
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]
    assert path.stat().st_size < 4096 and lines(path)[-1]["flow_id"] == "flow-99"


WRITER = """
import sys
from pathlib import Path
from llm_reasoning_proxy.events import EventLog, Skipped
log = EventLog(Path(sys.argv[1]), max_bytes=8192, backups=3)
for n in range(300):
    log.write(Skipped(flow_id=f"{sys.argv[2]}-{n}", url="u", reason="y" * 150))
log.close()
"""


def test_processes_sharing_one_log_stay_within_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], env=env, cwd=ROOT) for name in ("a", "b")
    ]
    assert all(w.wait(timeout=60) == 0 for w in writers)
    files = sorted(tmp_path.iterdir())
    assert {p.name for p in files} <= {"events.jsonl", *(f"events.jsonl.{n}" for n in (1, 2, 3))}
    assert sum(p.stat().st_size for p in files) <= 4 * (8192 + 2 * 300)
    # Every kept line is whole JSON: appends from two processes never interleave inside a line.
    for p in files:
        assert all(e["flow_id"][0] in "ab" for e in lines(p))
    # Oldest file first, each writer's kept lines are in the order it wrote them, and the last write is current.
    oldest_first = sorted(files, key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    kept = [e["flow_id"] for p in oldest_first for e in lines(p)]
    for name in "ab":
        numbers = [int(flow.split("-")[1]) for flow in kept if flow[0] == name]
        assert numbers == sorted(numbers)
    assert lines(path)[-1]["flow_id"] in ("a-299", "b-299")
