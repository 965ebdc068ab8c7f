"""The small interface every reasoning cache backend implements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..shared.records import ReasoningRecord


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
    # Whether prune() may run in a thread of its own while the other methods are called on the event loop.
    prunes_in_a_thread: bool

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]: ...

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None: ...

    def delete(self, scope: str, keys: Sequence[str]) -> int: ...

    def put_origins(self, origin: str, digests: Sequence[str]) -> None:
        """Remembers that `origin` issued the values with these digests (see addon/answer/provenance.py).

        Origins are not scoped: their point is to recognise a value that came from another scope. They age and
        are bounded in count like records."""
        ...

    def get_origins(self, digests: Sequence[str]) -> dict[str, set[str]]:
        """The origins each digest was issued by, for the digests known."""
        ...

    def prune(self, most: int = ...) -> int:
        """One step of upkeep (addon/hooks/upkeep.py): drops at most `most` records past the age and count limits,
        oldest first, and as many origins, reading only what it drops; returns the records dropped."""
        ...

    def size(self) -> tuple[int | None, int | None]:
        """The records held and the bytes they take (None where the store cannot tell cheaply), for the metrics;
        called on the event loop every few seconds, so it reads a count, never the records."""
        ...

    def close(self) -> None: ...
