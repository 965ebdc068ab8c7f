"""Records a process has already parsed, shared by the stores that keep records outside the process.

A stored record never changes and its id is never reused, so a record parsed once can serve every later
lookup: a client re-sends the same history every turn, and would otherwise cost one parse per call per turn.
Each is kept with the scope it was stored under and served only to a lookup in that scope: should a store ever
hand out an id again (a Redis that lost its data, a cache file made anew), the copy kept here is read afresh
rather than given to another account.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ..shared.limits import MiB
from ..shared.records import ReasoningRecord
from ..shared.redact import masked_logger
from ..shared.sizes import record_size

logger = masked_logger(__name__)

RecordId = int | str  # SQLite's row ids, Redis's random ids
MOST_REMEMBERED = 2048  # parsed records kept in memory per store (a few MB)
MOST_REMEMBERED_BYTES = 64 * MiB  # and what they hold parsed: records of up to 8 MiB make the count no bound


class RememberedRecords:
    """Parsed records by id with their storing time and scope, the oldest remembered dropped first."""

    def __init__(self, most: int = MOST_REMEMBERED, most_bytes: int = MOST_REMEMBERED_BYTES) -> None:
        self._most = most
        self._most_bytes = most_bytes
        self._bytes = 0
        self._records: OrderedDict[RecordId, tuple[float, str | None, ReasoningRecord, int]] = OrderedDict()

    def add(self, record_id: RecordId, stored_at: float, record: ReasoningRecord, scope: str | None = None) -> None:
        """Remembers a record read or written under `scope`, counted for what its parsed values hold (a record of
        nested lists holds many times its stored bytes)."""
        self.drop(record_id)
        size = record_size(record)
        self._records[record_id] = (stored_at, scope, record, size)
        self._bytes += size
        while self._records and (len(self._records) > self._most or self._bytes > self._most_bytes):
            self._bytes -= self._records.popitem(last=False)[1][3]

    def drop(self, record_id: RecordId) -> None:
        dropped = self._records.pop(record_id, None)
        if dropped is not None:
            self._bytes -= dropped[3]

    def clear(self) -> None:
        self._records.clear()
        self._bytes = 0

    def split(
        self, record_ids: Iterable[RecordId], oldest: float, scope: str | None = None
    ) -> tuple[dict[RecordId, ReasoningRecord], list[RecordId]]:
        """The remembered records of `scope` stored at `oldest` or later, and the ids the store must read: those
        not remembered, and those remembered under another scope, which the store must have handed out again."""
        records: dict[RecordId, ReasoningRecord] = {}
        unread = []
        for record_id in set(record_ids):
            remembered = self._records.get(record_id)
            if remembered is None or remembered[1] != scope:
                unread.append(record_id)
            elif remembered[0] >= oldest:
                records[record_id] = remembered[2]
        return records, unread


def by_key(ids: Mapping[str, RecordId], records: Mapping[RecordId, ReasoningRecord]) -> dict[str, ReasoningRecord]:
    """Each key's record, for the keys whose record was found and is young enough."""
    return {key: records[record_id] for key, record_id in ids.items() if record_id in records}


def warn_unreadable(ids: Mapping[str, RecordId], record_id: RecordId) -> None:
    named = ", ".join(key for key, found in ids.items() if found == record_id)
    logger.warning("llm cache: ignoring an unreadable entry for %s", named)
