"""The small interface every reasoning cache backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..records import ReasoningRecord


class StoreError(Exception):
    """The cache cannot be opened or used; the message says why, for a person."""


class StoreUnavailable(StoreError):
    """The cache cannot be reached for now (a Redis outage): traffic goes on without it."""


@dataclass(frozen=True, slots=True)
class CacheLimits:
    max_age: float  # seconds an entry stays usable
    max_entries: int


class ReasoningStore(Protocol):
    """Reasoning records keyed by tool call id, within a scope.

    A scope names one upstream host and one credential (by hash); a record is
    only ever returned for the scope it was stored under.
    """

    description: str

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]: ...

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None: ...

    def delete(self, scope: str, keys: Sequence[str]) -> int: ...

    def prune(self) -> int:
        """Drops entries past the age and count limits; returns how many."""
        ...

    def close(self) -> None: ...
