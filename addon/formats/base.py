"""The interface every wire format implements for the proxy hooks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..records import ReasoningRecord, RepairAction
from ..sse_parser import SSEEvent


class ResponseReader(Protocol):
    """Collects the reasoning of one response, from SSE events or from a whole body."""

    def feed_event(self, event: SSEEvent) -> None: ...

    def feed_document(self, doc: Any) -> None: ...

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        """The turns read so far; `complete` is False when the stream was cut short."""
        ...


class WireFormat(Protocol):
    name: str
    # Fields whose values are human-readable text (logged in full); all other
    # captured fields are opaque and logged as length plus hash.
    text_fields: frozenset[str]

    def claims(self, method: str, path: str, body: bytes) -> bool:
        """Whether a request is this format's traffic, judged without parsing the body."""
        ...

    def may_need_repair(self, body: bytes) -> bool:
        """False when no repair is possible, judged without parsing the body."""
        ...

    def reader(self) -> ResponseReader: ...

    def cache_keys(self, doc: Any) -> list[str]:
        """The cache keys (tool call ids) a parsed request could be repaired from."""
        ...

    def repair(self, doc: Any, cached: Mapping[str, ReasoningRecord]) -> list[RepairAction]:
        """Repairs `doc` in place and says what changed; must be idempotent."""
        ...
