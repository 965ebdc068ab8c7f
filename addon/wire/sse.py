"""An incremental Server-Sent Events parser that owns its own buffering.

Transport chunks are not event boundaries: an event can be split across many
chunks and one chunk can hold many events. The parser follows the WHATWG
event-stream rules (LF, CRLF or CR line endings, `:` comment lines, multi-line
`data:`), so it gives the same events for any chunking of the same bytes.

The offline tools, which keep a stream as text, split it into lines the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..shared.headers import media_type

if TYPE_CHECKING:
    from mitmproxy import http

MEDIA_TYPE = "text/event-stream"
_LINE_BREAKS = (b"\n", b"\r")
_EVENT_ENDS = (b"\n\n", b"\r\n\r\n", b"\r\r")
_LINE_BREAK = re.compile(r"(\r\n|\r|\n)")


def is_event_stream(headers: http.Headers) -> bool:
    """Whether a message's headers say its body is an event stream (media type parameters and case aside)."""
    return media_type(headers) == MEDIA_TYPE


def looks_like_event_stream(body: bytes | bytearray) -> bool:
    """Whether a body starts as an event stream does (a `data:`, `event:` or comment line), whatever its
    content type says: some providers send one as application/json or with no type at all."""
    return body.lstrip().startswith((b"data:", b"event:", b":"))


class SSEOverflow(ValueError):
    """One line, or one event's data, grew past the parser's limit; the stream is not sensible SSE."""


@dataclass(slots=True)
class SSEEvent:
    data: bytes
    event: str | None = None
    id: str | None = None


def marked_events(chunk: bytes, markers: tuple[bytes, ...], last_id: str | None = None) -> list[SSEEvent] | None:
    """The events of a chunk of whole one-line `data:` events that hold any of `markers`, found with byte
    searches alone, in order; None when the chunk holds anything else, for the parser to handle.

    Most of a stream is answer text the reader does not keep: those events are never touched.
    """
    events_in_chunk = chunk.count(b"\n\n")
    if (
        not chunk.startswith(b"data: ")
        or not chunk.endswith(b"\n\n")
        or b"\r" in chunk
        or chunk.count(b"\n") != 2 * events_in_chunk
        or chunk.count(b"\n\ndata: ") != events_in_chunk - 1
    ):
        return None
    starts = set()
    for marker in markers:
        at = chunk.find(marker)
        while at >= 0:
            start = chunk.rfind(b"\n\n", 0, at) + 2 if at else 0
            starts.add(start if start > 1 else 0)
            end = chunk.find(b"\n\n", at)
            at = chunk.find(marker, end)
    events = []
    for start in sorted(starts):
        events.append(SSEEvent(chunk[start + 6 : chunk.find(b"\n\n", start)], None, last_id))
    return events


def _simple_events(chunk: bytes, last_id: str | None) -> list[SSEEvent] | None:
    """The events of a chunk made only of whole one-line `data: …` events (what most providers send),
    cut out directly; None when anything else is in it, for the line-by-line parser to handle."""
    if not chunk.endswith(b"\n\n") or b"\r" in chunk:
        return None
    if chunk.find(b"\n") == len(chunk) - 2:  # one event, as most chunks are
        return [SSEEvent(chunk[6:-2], None, last_id)] if chunk.startswith(b"data: ") else None
    events = []
    for block in chunk[:-2].split(b"\n\n"):
        if not block.startswith(b"data: ") or b"\n" in block:
            return None
        events.append(SSEEvent(block[6:], None, last_id))
    return events


@dataclass(slots=True)
class SSEParser:
    max_line: int = 16 * 1024 * 1024
    _pending: bytearray = field(default_factory=bytearray)
    _data: list[bytes] = field(default_factory=list)
    _data_bytes: int = 0  # held in _data: an event that never ends must not grow without bound, line by line
    _event: str | None = None
    _id: str | None = None

    def feed(
        self,
        chunk: bytes,
        skip: Callable[[bytes], bool] | None = None,
        markers: tuple[bytes, ...] | None = None,
    ) -> list[SSEEvent]:
        """The events completed by `chunk`.

        When the chunk starts and ends at event boundaries, `skip` may pass over it unread (it says
        whether nothing in it matters), and `markers` may narrow it to the events holding one of them.
        """
        if not chunk:
            return []
        if not self._pending and not self._data and self._event is None and chunk.endswith(_EVENT_ENDS):
            if skip is not None and skip(chunk):
                return []
            if markers is not None:
                marked = marked_events(chunk, markers, self._id)
                if marked is not None:
                    return marked
            events = _simple_events(chunk, self._id)
            if events is not None:
                return events
        if b"\n" not in chunk and b"\r" not in chunk and not self._pending.endswith(b"\r"):
            self._pending += chunk
            self._check_line_length()
            return []
        if self._pending:
            self._pending += chunk
            text = bytes(self._pending)
        else:
            text = chunk
        lines = text.splitlines(keepends=True)
        last = lines[-1]
        # A trailing CR may be the first half of a CRLF split across chunks.
        if not last.endswith(_LINE_BREAKS) or last.endswith(b"\r"):
            self._pending = bytearray(lines.pop())
        else:
            self._pending = bytearray()
        self._check_line_length()
        events: list[SSEEvent] = []
        for line in lines:
            self._line(line.rstrip(b"\r\n"), events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: dispatch what is pending, even without a final blank line."""
        events: list[SSEEvent] = []
        for line in bytes(self._pending).splitlines():
            self._line(line, events)
        self._pending = bytearray()
        self._line(b"", events)
        return events

    def _check_line_length(self) -> None:
        if len(self._pending) > self.max_line:
            raise SSEOverflow(f"an SSE line exceeds {self.max_line} bytes")

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append(SSEEvent(b"\n".join(self._data), self._event, self._id))
            self._data = []
            self._data_bytes = 0
            self._event = None
            return
        if line[0] == 0x3A:  # ":" starts a comment
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data_bytes += len(value) + 1
            if self._data_bytes > self.max_line:
                raise SSEOverflow(f"an SSE event's data exceeds {self.max_line} bytes")
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id":
            self._id = value.decode("utf-8", "replace")


def text_lines(text: str) -> list[tuple[str, str]]:
    """Lines with their own line break ("\\r\\n", "\\n", "\\r" or "" at the end), as SSE splits them."""
    pieces = _LINE_BREAK.split(text)
    return list(zip(pieces[0::2], [*pieces[1::2], ""]))


def data_line(line: str) -> tuple[str, str] | None:
    """A `data:` line's prefix (with the one space SSE strips) and its payload; None for other lines."""
    if not line.startswith("data:"):
        return None
    cut = 6 if line[5:6] == " " else 5
    return line[:cut], line[cut:]
