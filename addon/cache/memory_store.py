"""A process-local cache: nothing on disk, gone when the proxy stops."""

from __future__ import annotations

import itertools
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence

from ..shared.limits import PRUNE_STEP
from ..shared.records import ReasoningRecord
from .base import CacheLimits


class MemoryStore:
    """Captured turns, oldest first, each reachable through its keys; bounded like the SQLite store."""

    description = "memory"
    prunes_in_a_thread = False

    def __init__(self, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self._limits = limits
        self._clock = clock
        self._ids = itertools.count()
        self._records: OrderedDict[int, tuple[float, ReasoningRecord, list[tuple[str, str]]]] = OrderedDict()
        self._keys: dict[tuple[str, str], int] = {}
        self._origins: OrderedDict[str, dict[str, float]] = OrderedDict()  # digest -> origin -> when, oldest first

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        oldest = self._clock() - self._limits.max_age
        found = {}
        for key in keys:
            entry = self._records.get(self._keys.get((scope, key), -1))
            if entry is not None and entry[0] >= oldest:
                found[key] = entry[1]
        return found

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None:
        if not keys:
            return
        record_id = next(self._ids)
        scoped = [(scope, key) for key in dict.fromkeys(keys)]
        self._records[record_id] = (self._clock(), record, scoped)
        for scoped_key in scoped:
            self._keys[scoped_key] = record_id
        while len(self._records) > self._limits.max_entries:
            self._drop(next(iter(self._records)))

    def delete(self, scope: str, keys: Sequence[str]) -> int:
        return sum(self._keys.pop((scope, key), None) is not None for key in dict.fromkeys(keys))

    def put_origins(self, origin: str, digests: Sequence[str]) -> None:
        now = self._clock()
        for digest in digests:
            self._origins.setdefault(digest, {})[origin] = now
            self._origins.move_to_end(digest)
        while len(self._origins) > self._limits.max_entries:
            self._origins.popitem(last=False)

    def get_origins(self, digests: Sequence[str]) -> dict[str, set[str]]:
        oldest = self._clock() - self._limits.max_age
        found = {}
        for digest in digests:
            origins = {origin for origin, at in self._origins.get(digest, {}).items() if at >= oldest}
            if origins:
                found[digest] = origins
        return found

    def prune(self, most: int = PRUNE_STEP) -> int:
        """Drops at most `most` records past the age limit (and as many origins), from the oldest on: both are kept
        oldest first, so a step reads only what it drops. The count limit holds on every put. Returns the larger of
        the records and the origins dropped."""
        oldest = self._clock() - self._limits.max_age
        origins = 0
        while origins < most and self._origins:
            digest = next(iter(self._origins))
            if max(self._origins[digest].values()) >= oldest:
                break
            del self._origins[digest]
            origins += 1
        removed = 0
        while removed < most and self._records:
            record_id, (stored_at, _, _) = next(iter(self._records.items()))
            if stored_at >= oldest:
                break
            self._drop(record_id)
            removed += 1
        return max(removed, origins)

    def _drop(self, record_id: int) -> None:
        _, _, scoped = self._records.pop(record_id)
        for scoped_key in scoped:
            if self._keys.get(scoped_key) == record_id:
                del self._keys[scoped_key]

    def size(self) -> tuple[int | None, int | None]:
        return len(self._records), None

    def close(self) -> None:
        self._records.clear()
        self._keys.clear()
        self._origins.clear()
