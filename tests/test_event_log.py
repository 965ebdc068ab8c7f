"""The JSONL event log: owner-only, bounded by rotation, safe to share between processes."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared import events
from llm_reasoning_proxy.shared.events import EventLog, Skipped

from tests.support.planted import planted

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
from llm_reasoning_proxy.shared.events import EventLog, Skipped
log = EventLog(Path(sys.argv[1]), max_bytes=8192, backups=3)
for n in range(300):
    log.write(Skipped(flow_id=f"{sys.argv[2]}-{n}", url="u", reason="y" * 150))
log.close()
"""


@pytest.mark.slow
def test_processes_sharing_one_log_stay_within_its_bound(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), name], env=env, cwd=ROOT) for name in ("a", "b")
    ]
    assert all(w.wait(timeout=60) == 0 for w in writers)
    files = sorted(tmp_path.iterdir())
    assert {p.name for p in files} <= {"events.jsonl", *(f"events.jsonl.{n}" for n in (1, 2, 3))}
    # Each file holds at most its bound, the line that crossed it, and one more of each writer: a writer appends one
    # before it finds its file full, and one into a file the other writer has just rotated.
    longest = max(len(line) + 1 for p in files for line in p.read_bytes().splitlines())
    assert sum(p.stat().st_size for p in files) <= 4 * (8192 + 3 * longest)
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


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_rotation_that_fails_is_reported_once_and_the_log_goes_on(tmp_path: Path, caplog) -> None:
    path = tmp_path / "events.jsonl"
    (tmp_path / "events.jsonl.1").mkdir()  # something sits where the backup goes: the rename fails
    (tmp_path / "events.jsonl.1" / "x").write_text("x")
    clock = FakeClock()
    log = EventLog(path, max_bytes=4096, backups=1, clock=clock)
    with caplog.at_level("WARNING"):
        for n in range(100):
            log.write(event(n))
    warnings = [r.getMessage() for r in caplog.records if "cannot rotate" in r.getMessage()]
    assert len(warnings) == 1 and "tried again every 60s" in warnings[0]
    assert lines(path)[-1]["flow_id"] == "flow-99"  # nothing was dropped: it wrote on past its size
    # Once the obstruction is gone and the pause is over, it rotates again and says so.
    (tmp_path / "events.jsonl.1" / "x").unlink()
    (tmp_path / "events.jsonl.1").rmdir()
    clock.now += 61
    with caplog.at_level("WARNING"):
        log.write(event(100))
        log.write(event(101))
    log.close()
    assert any("writing and rotating again" in r.getMessage() for r in caplog.records)
    assert lines(tmp_path / "events.jsonl.1")[-1]["flow_id"] == "flow-100"
    assert [e["flow_id"] for e in lines(path)] == ["flow-101"]


def test_a_log_that_cannot_be_reopened_after_rotation_comes_back(tmp_path: Path, caplog, monkeypatch) -> None:
    path = tmp_path / "events.jsonl"
    clock = FakeClock()
    log = EventLog(path, max_bytes=4096, backups=1, clock=clock)
    real_open = events.open_private

    def refused(*args, **kwargs):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(events, "open_private", refused)
    with caplog.at_level("WARNING"):
        for n in range(40):  # rotates after about 13 events; the new file cannot be opened
            log.write(event(n))
    assert sum("cannot reopen" in r.getMessage() for r in caplog.records) == 1
    monkeypatch.setattr(events, "open_private", real_open)
    log.write(event(40))  # within the pause: still dropped
    clock.now += 61
    log.write(event(41))
    log.close()
    assert [e["flow_id"] for e in lines(path)] == ["flow-41"]
    assert lines(tmp_path / "events.jsonl.1")[-1]["flow_id"] == "flow-12"
    assert any("writing and rotating again" in r.getMessage() for r in caplog.records)


def test_the_log_is_never_written_through_a_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("someone else's file\n")
    (tmp_path / "events.jsonl").symlink_to(target)
    with pytest.raises(OSError, match="symbolic link"):
        EventLog(tmp_path / "events.jsonl")
    assert target.read_text() == "someone else's file\n"


def test_a_log_that_was_there_with_another_mode_becomes_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"kind":"started"}\n')
    path.chmod(0o644)
    EventLog(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and lines(path) == [{"kind": "started"}]


def test_a_line_too_long_for_the_log_is_cut_to_fit(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.write(Skipped(flow_id="f", url="u", reason="é" * 200_000))
    log.close()
    raw = path.read_bytes()
    assert len(raw) <= 64 * 1024
    (written,) = lines(path)
    assert written["cut"]["bytes"] > 400_000 and "[cut: 200000 chars, sha256 " in written["reason"]


def test_a_line_that_masking_lengthens_still_fits(tmp_path: Path) -> None:
    # 4-character values after "api_key=" become "[REDACTED]": masked, the line would pass its bound.
    reason = "api_key=abcd " * 5000  # 65,000 characters, just under 64 KiB with the rest of the event
    path = tmp_path / "events.jsonl"
    log = EventLog(path)
    log.write(Skipped(flow_id="f", url="u", reason=reason[: 64 * 1024 - 200]))
    log.close()
    raw = path.read_bytes()
    assert len(raw) <= 64 * 1024 + 1 and b"abcd" not in raw


def test_a_secret_quoted_as_json_inside_a_text_is_masked() -> None:
    """The line escapes the quotes of a text that quotes JSON; the redactor must see the text as it is."""
    secret = "hunter2hunter2hunter2"
    reason = 'provider said: {"api_key": "' + secret + '", "password": "swordfish1"}'
    line = events.fit_line(Skipped(url="https://example.test/v1/chat/completions", reason=reason))
    assert secret not in line and "swordfish1" not in line
    assert json.loads(line)["reason"].startswith("provider said: {")


def test_a_key_where_a_text_is_cut_is_masked_before_the_cut() -> None:
    key = planted("sk-proj-", "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6")
    text = "x" * (events.MAX_LOGGED_TEXT_CHARS - 11) + " " + key + " and more"
    (summary,) = events.summarize_fields({"reasoning_text": text}, frozenset({"reasoning_text"}), False).values()
    assert summary.text is not None and "A1b2" not in summary.text and "sk-proj-A" not in summary.text
    assert summary.length == len(text)
