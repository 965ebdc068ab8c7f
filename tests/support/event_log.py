"""Reading a proxy's JSONL event log from a test, and waiting for what the proxy promises to write."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Generous: on a busy CI machine the proxy may be slow, but what is waited for always comes.
WAIT_SECONDS = 60.0


class LogTail:
    """The part of a proxy's JSONL event log written after this object was made (or all of it, `whole`)."""

    def __init__(self, path: Path, *, whole: bool = False) -> None:
        self.path = path
        self.start = 0 if whole or not path.exists() else path.stat().st_size

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.start)
            data = handle.read()
        found = []
        for line in data.splitlines():
            try:
                event = json.loads(line)
            except ValueError:  # the last line of a process killed while writing it
                continue
            if kind is None or event["kind"] == kind:
                found.append(event)
        return found

    def wait(
        self, done: Callable[[list[dict[str, Any]]], Any], timeout: float = WAIT_SECONDS, what: str = "the events"
    ) -> list[dict[str, Any]]:
        """Every event so far, once `done` holds for them; the time running out fails the test (a wait that came
        back short would leave a later assertion to fail with a misleading message, or pass)."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if done(events):
                return events
            assert time.monotonic() <= deadline, f"{what} never came: {timeout:g} s in {self.path}"
            time.sleep(0.02)

    def wait_for(
        self,
        kind: str,
        count: int = 1,
        timeout: float = WAIT_SECONDS,
        *,
        where: Callable[[dict[str, Any]], Any] | None = None,
    ) -> list[dict[str, Any]]:
        """The events of one kind (and for which `where` holds, if given), once there are at least `count` of them."""

        def matching(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [e for e in of_kind(events, kind) if where is None or where(e)]

        return matching(self.wait(lambda e: len(matching(e)) >= count, timeout, f"{count} {kind!r} event(s)"))


def of_kind(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["kind"] == kind]
