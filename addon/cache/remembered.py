"""Records a process has already parsed, shared by the stores that keep records outside the process.

A stored record never changes and its id is never reused, so a record parsed once can serve every later
lookup: a client re-sends the same history every turn, and would otherwise cost one parse per call per turn.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ..limits import MiB
from ..records import ReasoningRecord
from ..redact import masked_logger

logger = masked_logger(__name__)

MOST_REMEMBERED = 2048  # parsed records kept in memory per store (a few MB)
MOST_REMEMBERED_BYTES = 64 * MiB  # and their stored size at most: records of up to 8 MiB make the count no bound


class RememberedRecords:
    """Parsed records by id with their storing time, the oldest remembered dropped first."""

    def __init__(self, most: int = MOST_REMEMBERED, most_bytes: int = MOST_REMEMBERED_BYTES) -> None:
        self._most = most
        self._most_bytes = most_bytes
        self._bytes = 0
        self._records: OrderedDict[int, tuple[float, ReasoningRecord, int]] = OrderedDict()

    def add(self, record_id: int, stored_at: float, record: ReasoningRecord, size: int) -> None:
        """Remembers a record read or written; `size` is its stored size in bytes."""
        self.drop(record_id)
        self._records[record_id] = (stored_at, record, size)
        self._bytes += size
        while self._records and (len(self._records) > self._most or self._bytes > self._most_bytes):
            self._bytes -= self._records.popitem(last=False)[1][2]

    def drop(self, record_id: int) -> None:
        dropped = self._records.pop(record_id, None)
        if dropped is not None:
            self._bytes -= dropped[2]

    def clear(self) -> None:
        self._records.clear()
        self._bytes = 0

    def split(self, record_ids: Iterable[int], oldest: float) -> tuple[dict[int, ReasoningRecord], list[int]]:
        """The remembered records stored at `oldest` or later, and the ids the store must read."""
        records: dict[int, ReasoningRecord] = {}
        unread = []
        for record_id in set(record_ids):
            remembered = self._records.get(record_id)
            if remembered is None:
                unread.append(record_id)
            elif remembered[0] >= oldest:
                records[record_id] = remembered[1]
        return records, unread


def by_key(ids: Mapping[str, int], records: Mapping[int, ReasoningRecord]) -> dict[str, ReasoningRecord]:
    """Each key's record, for the keys whose record was found and is young enough."""
    return {key: records[record_id] for key, record_id in ids.items() if record_id in records}


def warn_unreadable(ids: Mapping[str, int], record_id: int) -> None:
    named = ", ".join(key for key, found in ids.items() if found == record_id)
    logger.warning("llm cache: ignoring an unreadable entry for %s", named)
