"""What the proxy remembers of each conversation's last request, so that a turn costs what it adds.

A client sends its whole history on every turn: the bytes of turn N are those of turn N-1 with a few items added
at the end of the body's top-level list (`messages`, `input`, `contents`). The proxy keeps, per scope and route, the
last requests it read: their bytes, where their list's last item ends, and what it made of them (the repairs, the
body it sent on). A request that starts with the same bytes up to that point and ends with the same bytes after the
list is the remembered one plus its new items: only those are parsed, checked and repaired, and the body sent on is
the remembered one with the new items spliced in, written as a whole document would have been.

The memory is per process and bounded by count and by bytes (`MAX_HISTORIES`, `MAX_HISTORY_BYTES`): the bytes of the
bodies, and of what was parsed and found of them, counted from above as it is made (`Remembered.size`). A request it
cannot match costs what it always did, and is remembered for the next turn.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from sys import getsizeof
from typing import Any, NamedTuple

import msgspec

from ..shared import jsoncodec
from ..shared.limits import MAX_HISTORIES, MAX_HISTORIES_PER_ROUTE, MAX_HISTORY_BYTES
from ..shared.records import ActionTally, ReasoningRecord, RepairAction
from ..shared.sizes import VALUE_BYTES, held_size, parsed_size, strings_size

_TOP_LEVEL = msgspec.json.Decoder(dict[str, msgspec.Raw])
_SPACE = b" \t\r\n"


def end_of_value(body: bytes, end: int) -> int:
    """Where the JSON value that ends at or before `end` ends: white space before `end` passed over."""
    while end > 0 and body[end - 1] in _SPACE:
        end -= 1
    return end


class ListBounds(NamedTuple):
    items_end: int  # where the last item of the list ends
    close: int  # where the list's closing bracket is
    others: list[tuple[str, msgspec.Raw]]  # the body's other top-level values, unparsed

    def others_size(self) -> int:
        """The bytes the other values take once parsed, at most (`parsed_size`), with their names."""
        return sum(parsed_size(bytes(raw)) + VALUE_BYTES + 4 * len(name) for name, raw in self.others)


def list_bounds(body: bytes, key: str) -> ListBounds | None:
    """Where the top-level list `key` of a JSON object body ends, with the body's other values unparsed; None when
    the body is not such an object or its bytes after the list cannot be told apart.

    The values after the list are read as raw bytes (not parsed), and matched from the end of the body back."""
    try:
        top = _TOP_LEVEL.decode(body)
    except (msgspec.DecodeError, ValueError, RecursionError):
        return None
    names = list(top)
    if key not in names:
        return None
    end = end_of_value(body, len(body))
    if end == 0 or body[end - 1] != ord("}"):
        return None
    end -= 1
    for name in reversed(names[names.index(key) + 1 :]):
        for piece in (bytes(top[name]), b":", jsoncodec.dumps(name), b","):
            end = end_of_value(body, end)
            if not body.endswith(piece, 0, end):
                return None  # a key written with escapes, or a key given twice
            end -= len(piece)
    close = end_of_value(body, end) - 1
    if close < 0 or body[close] != ord("]"):
        return None
    return ListBounds(end_of_value(body, close), close, [(name, raw) for name, raw in top.items() if name != key])


@dataclass(slots=True)
class SentBody:
    """A repaired body as it was sent on, with where each item of its top-level list begins."""

    data: bytes
    starts: list[int]  # the offset of each item
    items_end: int  # where the last item ends (the list's closing bracket)

    @property
    def size(self) -> int:
        """The bytes it holds: each offset is an int object of 32 bytes (a body of `{}`s has one every 3 bytes)."""
        return len(self.data) + getsizeof(self.starts) + 32 * len(self.starts)


_ITEMS_HERE = "llm-items-" + secrets.token_hex(8)  # stands for the list while the rest is written


def written_items(items: list[Any]) -> list[bytes] | None:
    """Each item as `jsoncodec.dumps_request` writes it inside a document; None when one can only be written by the
    standard library (a lone surrogate), which writes the whole document differently."""
    pieces = [jsoncodec.encode_exact(item) for item in items]
    return None if None in pieces else pieces  # type: ignore[return-value]


def write_body(doc: dict[str, Any], key: str) -> SentBody | None:
    """`doc` written as `jsoncodec.dumps_request` would write it, with where its list's items are."""
    pieces = written_items(doc[key])
    skeleton = jsoncodec.encode_exact({**doc, key: _ITEMS_HERE})
    if pieces is None or skeleton is None:
        return None
    marker = b'"%s"' % _ITEMS_HERE.encode()
    at = skeleton.find(marker)
    return splice(skeleton[:at], pieces, skeleton[at + len(marker) :], [])


def splice(head: bytes | memoryview, pieces: list[bytes], tail: bytes | memoryview, starts: list[int]) -> SentBody:
    """`head` (which ends where the new items go: after the list's opening bracket or an item), the items, and
    `tail` (from the list's closing bracket on), as one body; `starts` are those of the items in `head`."""
    opening = bool(starts) or bytes(head[-1:]) == b"["
    parts: list[bytes | memoryview] = [head] if opening else [head, b"["]
    starts = list(starts)
    at = len(head) + (not opening)
    for position, piece in enumerate(pieces):
        if position or starts:
            parts.append(b",")
            at += 1
        starts.append(at)
        parts.append(piece)
        at += len(piece)
    parts.append(tail if opening else b"]" + bytes(tail))
    return SentBody(b"".join(parts), starts, at)


def continue_body(sent: SentBody, kept: int, pieces: list[bytes]) -> SentBody:
    """`sent` with its items from the `kept`-th on replaced by `pieces`."""
    data = memoryview(sent.data)
    if kept:
        cut = sent.starts[kept] - 1 if kept < len(sent.starts) else sent.items_end  # before the item's comma
    else:
        cut = sent.starts[0] if sent.starts else sent.items_end  # just after the opening bracket
    return splice(data[:cut], pieces, data[sent.items_end :], sent.starts[:kept])


@dataclass(slots=True)
class Remembered:
    """One request as the proxy read it, and what it made of it."""

    body: bytes  # as the client sent it
    items_end: int  # where the last item of its list ends in `body`
    tail: bytes  # `body` from the list's closing bracket on
    model: str | None
    others: dict[str, Any]  # the body's other top-level values, parsed
    window: list[Any]  # the last item as sent on, parsed: what a repair of the next items may look back at
    sent_count: int  # the items sent on
    sent: SentBody | None  # the body sent on, when the proxy changed it; None: sent as the client wrote it
    actions: list[RepairAction]
    tally: ActionTally  # what the flow comment says of `actions`, and their count by kind
    found: dict[str, ReasoningRecord]
    used: list[ReasoningRecord]
    mismatched: dict[str, str | None]
    pending: list[str] = field(default_factory=list)  # keys the last items found nothing under (yet)
    unique_ids: set[str] = field(default_factory=set)  # the ids sent that a request may hold once (ResumeRules)
    used_ids: set[str | None] = field(default_factory=set)  # the response ids of `used`
    # The bytes, counted from above, of what each turn of a conversation carries on to the next: `others`, `actions`
    # (and `tally`), `found`, `used`, `mismatched` and the id sets.
    carried: int = 0
    # What this turn added to them, to be counted (addon/request/resume.py makes it): `count` counts it, once.
    uncounted: Callable[[], int] | None = None
    size: int = field(init=False)  # the bytes it holds, counted from above: its bytes, and once counted the rest
    counted: bool = field(default=False, init=False)
    held: bool = field(default=False, init=False)  # in the memory (HistoryMemory counts its size while it is)

    def __post_init__(self) -> None:
        self.size = len(self.body) + len(self.tail) + (self.sent.size if self.sent is not None else 0) + self.carried

    def count(self) -> int:
        """Counts what it holds beside its bytes (once): what its turn added to what the conversation carries, its
        window and the keys it waits for; the bytes its size grew by."""
        if self.counted:
            return 0
        self.counted = True
        added = self.uncounted() if self.uncounted is not None else 0
        self.uncounted = None
        self.carried += added
        grown = added + held_size(self.window) + strings_size(self.pending)
        self.size += grown
        return grown

    def new_items(self, body: bytes) -> bytes | None:
        """The bytes of the items `body` adds to this request (b"" for none), or None when it is not this request
        with items added."""
        end = len(body) - len(self.tail)
        if end < self.items_end or not body.endswith(self.tail):
            return None
        if not body.startswith(memoryview(self.body)[: self.items_end]):
            return None
        added = body[self.items_end : end].strip(_SPACE)
        if not added or self.body[self.items_end - 1] == ord("["):  # the client's list was empty
            return added
        return added[1:] if added[:1] == b"," else None


class HistoryMemory:
    """The last requests of each (scope, route, setting) key, the most recently matched first."""

    def __init__(self, max_entries: int = MAX_HISTORIES, max_bytes: int = MAX_HISTORY_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._by_key: OrderedDict[Hashable, list[Remembered]] = OrderedDict()
        self._count = 0
        self._bytes = 0
        # Requests remembered, and requests dropped, while a request was read, counted and let go of by `release`:
        # counting what a turn parsed and found costs tens of microseconds, and freeing megabytes of a body about a
        # tenth of a millisecond, which the request being read need not wait for.
        self._uncounted: list[Remembered] = []
        self._dropped: list[Remembered] = []

    def __len__(self) -> int:
        return self._count

    @property
    def held_bytes(self) -> int:
        """What the requests remembered hold, as counted against `max_bytes`."""
        return self._bytes

    def clear(self) -> None:
        for entries in self._by_key.values():
            for entry in entries:
                entry.held = False
        self._by_key.clear()
        self._uncounted.clear()
        self._dropped.clear()
        self._count = self._bytes = 0

    def release(self) -> None:
        """Counts what the requests remembered since the last call hold beside their bytes, keeps to the bound, and
        lets go of the requests dropped: on the event loop's next turn, after mitmproxy sent the request being read
        on (or at once, without a running loop). Until then the bound counts only the bytes of their bodies."""
        if not self._uncounted and not self._dropped:
            return
        try:
            asyncio.get_running_loop().call_soon(self._settle)
        except RuntimeError:
            self._settle()

    def _settle(self) -> None:
        uncounted, self._uncounted = self._uncounted, []
        for entry in uncounted:
            if entry.held:  # one dropped meanwhile is not counted: it is never matched again
                self._bytes += entry.count()
        while self._bytes > self.max_bytes and self._by_key:
            self._drop(next(iter(self._by_key)), -1)  # the longest-idle key's oldest request
        self._dropped.clear()

    def match(self, key: Hashable, body: bytes) -> tuple[Remembered, bytes] | None:
        """The remembered request `body` continues the furthest, and the bytes of its new items; it is forgotten
        (what `body` makes of it is remembered in its place), counted (`Remembered.count`). The furthest, not the
        latest: where one conversation holds all of another (a fork, a retry from an earlier turn), each goes on
        from its own last request."""
        entries = self._by_key.get(key) or ()
        # Longest first: the first that `body` continues is the furthest (the others fail at their first byte
        # that differs, or on length alone).
        for position in sorted(range(len(entries)), key=lambda at: -entries[at].items_end):
            entry = entries[position]
            added = entry.new_items(body)
            if added is not None:
                self._drop(key, position)
                entry.count()  # counted already unless no `release` came since it was remembered
                return entry, added
        return None

    def remember(self, key: Hashable, entry: Remembered) -> None:
        entries = self._by_key.setdefault(key, [])
        self._by_key.move_to_end(key)
        entries.insert(0, entry)
        entry.held = True
        self._uncounted.append(entry)
        self._count += 1
        self._bytes += entry.size
        if len(entries) > MAX_HISTORIES_PER_ROUTE:
            self._drop(key, -1)
        while self._count > self.max_entries or self._bytes > self.max_bytes:
            self._drop(next(iter(self._by_key)), -1)  # the longest-idle key's oldest request

    def forget_scope(self, scope: str) -> None:
        """Everything remembered for a scope (keys start with it): a provider refused a request made from it, or
        the cache dropped what one was repaired from."""
        for key in [key for key in self._by_key if isinstance(key, tuple) and key[:1] == (scope,)]:
            for entry in self._by_key.pop(key):
                entry.held = False
                self._count -= 1
                self._bytes -= entry.size
                self._dropped.append(entry)
        self.release()  # asked outside a request's reading, which would let go of them only at the next request

    def _drop(self, key: Hashable, position: int) -> None:
        entries = self._by_key[key]
        entry = entries.pop(position)
        if not entries:
            del self._by_key[key]
        entry.held = False
        self._count -= 1
        self._bytes -= entry.size
        self._dropped.append(entry)
