"""An incremental parser of AWS event-stream framing (`application/vnd.amazon.eventstream`), and its encoder.

Amazon Bedrock streams InvokeModelWithResponseStream and ConverseStream answers as binary frames
(https://docs.aws.amazon.com/lexv2/latest/dg/event-stream-encoding.html, "Event stream encoding"):

    total length (4, big-endian) | headers length (4) | prelude CRC32 (4) | headers | payload | message CRC32 (4)

Both CRCs are the zlib CRC-32: the prelude's over the first 8 bytes, the message's over everything before it. A
header is a 1-byte name length, the name, a 1-byte value type and the value. Transport chunks are not frame
boundaries: a frame may come in many chunks and a chunk may hold many frames, so the parser keeps what it has of an
unfinished frame, and gives the same frames for any chunking of the same bytes.

It holds at most one frame, and refuses a frame whose prelude says it is larger than the AWS SDKs accept (botocore's
`eventstream.py`: 128 KiB of headers, 16 MiB of payload) before reading it. A frame that does not check out (a CRC
that does not match, lengths that cannot be, a header it cannot read) raises `CorruptFrame`: the framing cannot be
trusted past it, so the reader of a copy stops there, and the stream itself goes on untouched.
"""

from __future__ import annotations

import base64
import binascii
import struct
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..shared import jsoncodec
from ..shared.headers import media_type
from ..shared.limits import MAX_KNOWN_HEADER_BLOCK_BYTES, MAX_KNOWN_HEADER_BLOCKS
from .sse import SSEEvent

if TYPE_CHECKING:
    from mitmproxy import http

MEDIA_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = struct.Struct(">II")
_CRC = struct.Struct(">I")
_PRELUDE_WITH_CRC = struct.Struct(">III")
PRELUDE_BYTES = 12  # both lengths and the prelude's CRC
CRC_BYTES = 4
MAX_HEADERS_BYTES = 128 * 1024
MAX_PAYLOAD_BYTES = 16 * 1024 * 1024
MAX_FRAME_BYTES = PRELUDE_BYTES + MAX_HEADERS_BYTES + MAX_PAYLOAD_BYTES + CRC_BYTES

HeaderValue = bool | int | bytes | str | uuid.UUID


class CorruptFrame(ValueError):
    """Bytes that are not a well-formed event-stream frame: nothing after them can be read as frames."""


@dataclass(frozen=True, slots=True)
class Frame:
    headers: dict[str, HeaderValue]
    payload: bytes

    def header(self, name: str) -> str | None:
        value = self.headers.get(name)
        return value if isinstance(value, str) else None

    @property
    def message_type(self) -> str | None:
        """`event`, `exception` or `error`."""
        return self.header(":message-type")

    @property
    def event_type(self) -> str | None:
        return self.header(":event-type")

    @property
    def exception_type(self) -> str | None:
        return self.header(":exception-type") or self.header(":error-code")


def is_aws_event_stream(headers: http.Headers) -> bool:
    """Whether a message's headers say its body is AWS event-stream framing."""
    return media_type(headers) == MEDIA_TYPE


# Header value types and, for the fixed-width ones, their struct formats.
_BOOL_TRUE, _BOOL_FALSE, _BYTE, _SHORT, _INT, _LONG, _BYTES, _STRING, _TIMESTAMP, _UUID = range(10)
_FIXED = {
    _BYTE: struct.Struct(">b"),
    _SHORT: struct.Struct(">h"),
    _INT: struct.Struct(">i"),
    _LONG: struct.Struct(">q"),
}
_LENGTH = struct.Struct(">H")
_TIME = struct.Struct(">q")


def _value(data: bytes, at: int, kind: int) -> tuple[HeaderValue, int]:
    """One header value at `at`, and where the next header starts."""
    if kind in (_BOOL_TRUE, _BOOL_FALSE):
        return kind == _BOOL_TRUE, at
    if kind in _FIXED:
        fixed = _FIXED[kind]
        return fixed.unpack_from(data, at)[0], at + fixed.size
    if kind == _TIMESTAMP:
        return _TIME.unpack_from(data, at)[0], at + _TIME.size
    if kind == _UUID:
        if at + 16 > len(data):
            raise CorruptFrame("a UUID header runs past the headers")
        return uuid.UUID(bytes=data[at : at + 16]), at + 16
    if kind in (_BYTES, _STRING):
        (size,) = _LENGTH.unpack_from(data, at)
        end = at + _LENGTH.size + size
        if end > len(data):
            raise CorruptFrame("a header value runs past the headers")
        raw = data[at + _LENGTH.size : end]
        return (raw.decode("utf-8", "replace") if kind == _STRING else raw), end
    raise CorruptFrame(f"unknown header value type {kind}")


def parse_headers(data: bytes) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    at = 0
    try:
        while at < len(data):
            size = data[at]
            name = data[at + 1 : at + 1 + size]
            if size == 0 or len(name) != size or at + 1 + size >= len(data):
                raise CorruptFrame("a header name runs past the headers")
            headers[name.decode("utf-8", "replace")], at = _value(data, at + 2 + size, data[at + 1 + size])
    except struct.error:
        raise CorruptFrame("a header value runs past the headers") from None
    return headers


def _check_prelude(total: int, headers_size: int) -> None:
    if total < PRELUDE_BYTES + CRC_BYTES + headers_size:
        raise CorruptFrame(f"frame length {total} cannot hold its {headers_size} bytes of headers")
    if headers_size > MAX_HEADERS_BYTES or total > MAX_FRAME_BYTES:
        raise CorruptFrame(f"frame of {total} bytes ({headers_size} of headers) is over the event-stream limits")


def read_frame(
    data: bytes | bytearray, at: int = 0, known: dict[bytes, dict[str, HeaderValue]] | None = None
) -> tuple[Frame, int] | None:
    """The frame that starts at `at`, and where it ends; None when `data` does not hold all of it yet. `known` holds
    headers already read, by their bytes: a stream's frames repeat a few sets of headers (not to be changed)."""
    size = len(data)
    if size - at < PRELUDE_BYTES:
        return None
    total, headers_size, prelude_crc = _PRELUDE_WITH_CRC.unpack_from(data, at)
    # A view, released on return: the buffer it looks at (the parser's) grows again afterwards.
    with memoryview(data) as view:
        if zlib.crc32(view[at : at + 8]) != prelude_crc:
            raise CorruptFrame("prelude CRC does not match")
        _check_prelude(total, headers_size)
        end = at + total
        if size < end:
            return None
        (message_crc,) = _CRC.unpack_from(data, end - CRC_BYTES)
        if zlib.crc32(view[at : end - CRC_BYTES]) != message_crc:
            raise CorruptFrame("message CRC does not match")
        start = at + PRELUDE_BYTES
        raw_headers = bytes(view[start : start + headers_size])
        # Only small blocks are remembered: parsed, headers take ten to twenty times their bytes, and one block may
        # be 128 KiB (16,000 headers, 1.6 MB parsed).
        if known is None or headers_size > MAX_KNOWN_HEADER_BLOCK_BYTES:
            headers = parse_headers(raw_headers)
        elif (headers := known.get(raw_headers)) is None:
            headers = parse_headers(raw_headers)
            if len(known) < MAX_KNOWN_HEADER_BLOCKS:
                known[raw_headers] = headers
        return Frame(headers, bytes(view[start + headers_size : end - CRC_BYTES])), end


class EventStreamParser:
    """Frames out of chunks of an event stream, as they complete. Holds at most one unfinished frame."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._known: dict[bytes, dict[str, HeaderValue]] = {}

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held: at the end of a stream, what was cut short."""
        return len(self._pending)

    def forget(self) -> None:
        """Lets go of the headers remembered: the stream ended (whoever holds the parser may hold it a while)."""
        self._known = {}

    def feed(self, chunk: bytes) -> list[Frame]:
        if not chunk:
            return []
        if self._pending:
            self._pending += chunk
            data: bytes | bytearray = self._pending
        else:
            data = chunk
        frames = []
        at = 0
        # read_frame checks a frame's prelude as soon as it is there: one too big is refused before it is held.
        while (found := read_frame(data, at, self._known)) is not None:
            frame, at = found
            frames.append(frame)
        if data is not self._pending or at:  # an unfinished frame fed in small pieces is not copied each time
            self._pending = bytearray(data[at:])
        return frames


def _header_bytes(name: str, value: HeaderValue) -> bytes:
    encoded = name.encode()
    head = bytes([len(encoded)]) + encoded
    if isinstance(value, bool):
        return head + bytes([_BOOL_TRUE if value else _BOOL_FALSE])
    if isinstance(value, int):
        return head + bytes([_INT]) + _FIXED[_INT].pack(value)
    if isinstance(value, uuid.UUID):
        return head + bytes([_UUID]) + value.bytes
    kind, raw = (_STRING, value.encode()) if isinstance(value, str) else (_BYTES, bytes(value))
    return head + bytes([kind]) + _LENGTH.pack(len(raw)) + raw


def encode_frame(headers: Mapping[str, HeaderValue], payload: bytes) -> bytes:
    """One frame, with both CRCs (the offline tools turn a fixture's frames into a body again)."""
    head = b"".join(_header_bytes(name, value) for name, value in headers.items())
    total = PRELUDE_BYTES + len(head) + len(payload) + CRC_BYTES
    prelude = _PRELUDE.pack(total, len(head))
    prelude += _CRC.pack(zlib.crc32(prelude))
    body = prelude + head + payload
    return body + _CRC.pack(zlib.crc32(body))


def event_frame(event_type: str, payload: bytes, content_type: str = "application/json") -> bytes:
    """An `event` frame as Bedrock sends them: event type, content type and message type headers."""
    headers = {":event-type": event_type, ":content-type": content_type, ":message-type": "event"}
    return encode_frame(headers, payload)


# InvokeModelWithResponseStream's `chunk` event carries the model's own event base64-encoded in `bytes` (a
# PayloadPart: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_PayloadPart.html).
CHUNK_EVENT = "chunk"
_BYTES_MARKER = b'"bytes"'


def frame_event(frame: Frame) -> SSEEvent | None:
    """What one frame carries, as the event a wire format's reader takes: its payload under its event type, or for
    a `chunk` the model's own event inside it. None for an exception or error frame, and a chunk that is not one."""
    headers = frame.headers
    if headers.get(":message-type") != "event":
        return None
    event_type = headers.get(":event-type")
    event_type = event_type if isinstance(event_type, str) else None
    if event_type != CHUNK_EVENT:
        return SSEEvent(frame.payload, event_type)
    if _BYTES_MARKER not in frame.payload:
        return None
    try:
        part = jsoncodec.loads(frame.payload)
        inner = part.get("bytes") if isinstance(part, dict) else None
        return SSEEvent(base64.b64decode(inner, validate=True), event_type) if isinstance(inner, str) else None
    except (ValueError, binascii.Error):
        return None


class FrameEvents:
    """The events of an AWS event stream's chunks, for a response tap: frames parsed as they complete, each turned
    into what its reader takes (`frame_event`). Exception frames are counted and named, never read as events."""

    def __init__(self) -> None:
        self._parser = EventStreamParser()
        self.unreadable = 0  # event frames with nothing a reader can take (a `chunk` without its bytes)
        self.exceptions: list[str] = []  # the :exception-type of each exception frame, as the upstream sent it

    def feed(
        self, chunk: bytes, skip: Callable[[bytes], bool] | None = None, markers: tuple[bytes, ...] | None = None
    ) -> list[SSEEvent]:
        """The events `chunk` completes; `skip` drops those whose data cannot matter (`markers` are SSE's)."""
        events = []
        for frame in self._parser.feed(chunk):
            event = frame_event(frame)
            if event is None:
                if frame.message_type == "event":
                    self.unreadable += 1
                elif len(self.exceptions) < 8:
                    self.exceptions.append(frame.exception_type or frame.message_type or "unknown")
                continue
            if skip is None or not skip(event.data):
                events.append(event)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream. A frame cut short holds nothing to read: `cut_short` says how much of one there was."""
        self._parser.forget()
        return []

    @property
    def cut_short(self) -> int:
        return self._parser.pending
