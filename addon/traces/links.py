"""Which trace a turn belongs to: the turn whose answer made a tool call (or said a text) that a later request's
history holds is the same conversation, so both go in one trace, and a backend shows an agent session as one tree.

The memory is bounded by what it holds: the links of the newest answers, up to MAX_BYTES of them, the oldest
forgotten first. A conversation whose links were forgotten starts a new trace at its next turn."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass

from ..wire.conversation import Link

# The links kept: the key's characters plus what Python spends on an entry of this map, its tuple and its ids.
MAX_BYTES = 8 * 1024 * 1024
ENTRY_BYTES = 240
MAX_KEY_CHARS = 512  # a longer link (its caller's scope and a tool call id) is not kept


@dataclass(frozen=True, slots=True)
class TurnPlace:
    """Where a turn's span is: its trace, the conversation's first span (every later turn's parent), and its own."""

    trace_id: int
    root_span_id: int
    span_id: int


class ConversationLinks:
    """Link (a tool call id, an answer's text) -> the span of the turn that made it."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._places: OrderedDict[Link, TurnPlace] = OrderedDict()

    def __len__(self) -> int:
        return len(self._places)

    def find(self, links: Iterable[Link]) -> TurnPlace | None:
        """The span of the newest turn that made one of `links` (a request's history, oldest message first)."""
        newest: TurnPlace | None = None
        for link in links:
            place = self._places.get(link)
            if place is not None:
                newest = place
        return newest

    def remember(self, links: Iterable[Link], place: TurnPlace) -> None:
        for link in links:
            if len(link[1]) > MAX_KEY_CHARS:
                continue
            if link in self._places:
                self._places.move_to_end(link)
            else:
                self.bytes += ENTRY_BYTES + len(link[0]) + len(link[1])
            self._places[link] = place
        while self.bytes > self.max_bytes and self._places:
            (kind, key), _ = self._places.popitem(last=False)
            self.bytes -= ENTRY_BYTES + len(kind) + len(key)
