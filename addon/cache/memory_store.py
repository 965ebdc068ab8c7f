"""A process-local cache: nothing on disk, gone when the proxy stops."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from ..records import ReasoningRecord
from .base import CacheLimits


class MemoryStore:
    description = "memory"

    def __init__(self, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self._limits = limits
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, ReasoningRecord]] = OrderedDict()

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        oldest = self._clock() - self._limits.max_age
        found = {}
        for key in keys:
            entry = self._entries.get((scope, key))
            if entry is not None and entry[0] >= oldest:
                found[key] = entry[1]
        return found

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None:
        now = self._clock()
        for key in keys:
            self._entries.pop((scope, key), None)
            self._entries[(scope, key)] = (now, record)
        while len(self._entries) > self._limits.max_entries:
            self._entries.popitem(last=False)

    def delete(self, scope: str, keys: Sequence[str]) -> int:
        return sum(self._entries.pop((scope, key), None) is not None for key in keys)

    def prune(self) -> int:
        oldest = self._clock() - self._limits.max_age
        stale = [k for k, (stored_at, _) in self._entries.items() if stored_at < oldest]
        for key in stale:
            del self._entries[key]
        return len(stale)

    def close(self) -> None:
        self._entries.clear()
