"""Incremental, bounded decoders for HTTP content-encodings.

mitmproxy hands a stream callable the bytes as they came off the wire, still
compressed; these decoders turn each piece into plain bytes as it passes, so a
copy of a compressed stream can be parsed without waiting for its end.

A few compressed bytes can stand for gigabytes (a 1,681-byte brotli body makes
1 GiB), so no decoder ever produces more than `PIECE` bytes at a time, and
`BoundedDecoder` stops with `DecodedTooLarge` once the output passes its limit:
what a body decodes to costs the proxy at most that much, whatever it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import brotlicffi
import zstandard

from ..shared.headers import header

# The most any decoder produces in one piece.
PIECE = 64 * 1024
# zstd input is fed in slices of this size: a run-length block turns 4 bytes into 128 KiB, so a slice can make
# at most about 2 MiB before its output is handed on.
_ZSTD_SLICE = 64
# zlib and brotli input is fed in slices of this size: both copy what they leave unconsumed on every call, so a
# whole chunk at once would be copied again for every piece (and for every member of a gzip body).
_SLICE = 4096
# Encodings one body may name: real ones name one, rarely two; each stage's output is work and memory too.
MOST_ENCODINGS = 3


class Undecodable(ValueError):
    """A body the addon does not read: what each kind below says."""


class UnsupportedEncoding(Undecodable):
    pass


class DecodedTooLarge(Undecodable):
    """The body decodes to more than the limit: it is not read any further."""


class NotDecodable(Undecodable):
    """The bytes are not what their content-encoding says (a broken or false compressed body)."""


class StreamDecoder(Protocol):
    # What the decoder may still produce before its owner gives up: a decoder that cannot stop within a
    # piece (zstd) stops here instead.
    room: int

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        """The plain bytes of `chunk`, in pieces of at most PIECE bytes."""
        ...

    def flush(self) -> Iterator[bytes]: ...


class _Identity:
    room = 0

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        if chunk:
            yield chunk

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Zlib:
    room = 0

    def __init__(self, wbits: int, *, members: bool = False) -> None:
        self._wbits = wbits
        self._members = members  # gzip bodies may be several members back to back
        self._obj = zlib.decompressobj(wbits=wbits)
        self._fed = False

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        self._fed = self._fed or bool(chunk)
        for start in range(0, len(chunk), _SLICE):
            yield from self._decode(chunk[start : start + _SLICE])

    def _decode(self, data: bytes) -> Iterator[bytes]:
        while True:
            out = self._obj.decompress(data, PIECE)
            if out:
                yield out
            data = self._obj.unconsumed_tail
            if self._members and self._obj.eof and self._obj.unused_data:
                data = self._obj.unused_data + data
                self._obj = zlib.decompressobj(wbits=self._wbits)
                continue
            if not data and len(out) < PIECE:
                return

    def flush(self) -> Iterator[bytes]:
        out = self._obj.flush()
        if out:
            yield out
        if self._fed and not self._obj.eof:
            raise NotDecodable("compressed data cut short")


class _Deflate:
    """HTTP "deflate" is meant to be zlib-wrapped, but servers also send raw deflate."""

    room = 0

    def __init__(self) -> None:
        self._head = b""
        self._obj: _Zlib | None = None

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        if self._obj is None:
            self._head += chunk
            if len(self._head) < 2:
                return
            zlib_wrapped = (self._head[0] & 0x0F) == 8 and int.from_bytes(self._head[:2], "big") % 31 == 0
            self._obj = _Zlib(15 if zlib_wrapped else -15)
            chunk, self._head = self._head, b""
        yield from self._obj.decode(chunk)

    def flush(self) -> Iterator[bytes]:
        if self._obj is None:
            if self._head:
                yield from _Zlib(-15).decode(self._head)
            return
        yield from self._obj.flush()


class _Brotli:
    """brotlicffi, not the brotli module mitmproxy pins: only it can stop decoding at an output limit."""

    room = 0

    def __init__(self) -> None:
        self._obj = brotlicffi.Decompressor()
        self._fed = False

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        self._fed = self._fed or bool(chunk)
        for start in range(0, len(chunk), _SLICE):
            out = self._obj.process(chunk[start : start + _SLICE], output_buffer_limit=PIECE)
            if out:
                yield out
            while not self._obj.can_accept_more_data():
                out = self._obj.process(b"", output_buffer_limit=PIECE)
                if out:
                    yield out

    def flush(self) -> Iterator[bytes]:
        if self._fed and not self._obj.is_finished():
            raise NotDecodable("compressed data cut short")
        return iter(())


class _Collect:
    """Where zstd writes its output: kept until read, and refused past the decoder's room."""

    def __init__(self, owner: _Zstd) -> None:
        self._owner = owner
        self.pieces: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size > self._owner.room:
            raise DecodedTooLarge("zstd output past the limit")
        self.pieces.append(data)
        return len(data)


class _Zstd:
    room = 1 << 62

    def __init__(self) -> None:
        self._out = _Collect(self)
        # A stream writer reads on past the end of each frame, as a zstd body may hold several.
        self._obj = zstandard.ZstdDecompressor().stream_writer(self._out, write_size=PIECE)

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        for start in range(0, len(chunk), _ZSTD_SLICE):
            try:
                self._obj.write(chunk[start : start + _ZSTD_SLICE])
            except DecodedTooLarge:
                yield from self._take()  # what fitted, for those who want the start of it
                raise
            yield from self._take()

    def _take(self) -> list[bytes]:
        pieces, self._out.pieces = self._out.pieces, []
        self.room -= sum(map(len, pieces))
        self._out.size = 0
        return pieces

    def flush(self) -> Iterator[bytes]:
        return iter(())


class _Chain:
    """Encodings listed as "gzip, br" were applied left to right, so undo right to left."""

    def __init__(self, decoders: list[StreamDecoder]) -> None:
        self._decoders = decoders
        self._room = 1 << 62
        self._made = [0] * len(decoders)  # what each stage made: the inner ones cost work too, however little is left

    @property
    def room(self) -> int:
        return self._room

    @room.setter
    def room(self, value: int) -> None:
        self._room = value
        for position, decoder in enumerate(self._decoders):
            decoder.room = value - self._made[position]

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        return self._through(0, chunk)

    def _through(self, position: int, chunk: bytes) -> Iterator[bytes]:
        if position == len(self._decoders):
            yield chunk
            return
        for piece in self._decoders[position].decode(chunk):
            self._count(position, piece)
            yield from self._through(position + 1, piece)

    def _count(self, position: int, piece: bytes) -> None:
        if position < len(self._decoders) - 1:  # the last stage's output is counted by its owner
            self._made[position] += len(piece)
            if self._made[position] > self._room:
                raise DecodedTooLarge("an inner content-encoding made more than the limit")

    def flush(self) -> Iterator[bytes]:
        for position, decoder in enumerate(self._decoders):
            for piece in decoder.flush():
                self._count(position, piece)
                yield from self._through(position + 1, piece)


_FACTORIES: dict[str, Callable[[], StreamDecoder]] = {
    "identity": _Identity,
    "gzip": lambda: _Zlib(31, members=True),
    "x-gzip": lambda: _Zlib(31, members=True),
    "deflate": _Deflate,
    "br": _Brotli,
    "zstd": _Zstd,
}
_ERRORS = (zlib.error, brotlicffi.error, zstandard.ZstdError)


def stream_decoder(content_encoding: str | None) -> StreamDecoder:
    """A decoder for a Content-Encoding header value; raises UnsupportedEncoding."""
    names = [n.strip().lower() for n in (content_encoding or "").split(",") if n.strip()]
    names = [n for n in names if n != "identity"]
    if not names:
        return _Identity()
    if len(names) > MOST_ENCODINGS:
        raise UnsupportedEncoding(f"more than {MOST_ENCODINGS} content-encodings ({len(names)})")
    try:
        decoders = [_FACTORIES[n]() for n in reversed(names)]
    except KeyError as e:
        raise UnsupportedEncoding(f"unsupported content-encoding {content_encoding!r}") from e
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)


class BoundedDecoder:
    """Decodes a body as it arrives and gives up, with DecodedTooLarge, once it has made more than `limit` bytes;
    a body that is not what its encoding says raises NotDecodable."""

    def __init__(self, content_encoding: str | None, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self._decoder = stream_decoder(content_encoding)
        self.plain = isinstance(self._decoder, _Identity)

    def decode(self, chunk: bytes) -> Iterator[bytes]:
        return self._bounded(lambda: self._decoder.decode(chunk))

    def flush(self) -> Iterator[bytes]:
        return self._bounded(self._decoder.flush)

    def _bounded(self, pieces: Callable[[], Iterator[bytes]]) -> Iterator[bytes]:
        if self.plain:  # nothing is decoded, so nothing is made: a plain body is what it is, however long
            yield from pieces()
            return
        self._decoder.room = self.limit - self.size
        try:
            for piece in pieces():
                self.size += len(piece)
                if self.size > self.limit:
                    raise DecodedTooLarge(f"decodes to more than {self.limit // (1024 * 1024)} MiB")
                yield piece
        except _ERRORS as e:
            raise NotDecodable(f"not valid {type(e).__module__.split('.')[0]} data: {e}") from e
        except DecodedTooLarge:
            raise DecodedTooLarge(f"decodes to more than {self.limit // (1024 * 1024)} MiB") from None


def decode_body(raw: bytes | bytearray, content_encoding: str | None, limit: int) -> bytes | bytearray:
    """A whole body, decoded; raises DecodedTooLarge past `limit`, NotDecodable, UnsupportedEncoding."""
    if content_encoding is None:  # most bodies: nothing to make a decoder for
        return raw
    decoder = BoundedDecoder(content_encoding, limit)
    if decoder.plain or not raw:
        return raw
    raw = bytes(raw)  # brotlicffi takes bytes only; a compressed body is the small one
    out = bytearray()
    for piece in decoder.decode(raw):
        out += piece
    for piece in decoder.flush():
        out += piece
    return bytes(out)


def decode_prefix(raw: bytes, content_encoding: str | None, limit: int) -> bytes:
    """At most the first `limit` bytes of what a body decodes to (an error answer, to be explained). A body cut
    short gives what was decoded of it; one that decodes to nothing readable raises NotDecodable."""
    # Room for one more piece: the piece that crosses the bound is refused whole, yet its start is wanted.
    decoder = BoundedDecoder(content_encoding, limit + PIECE)
    if decoder.plain:
        return raw[:limit]
    out = bytearray()
    try:
        for piece in decoder.decode(raw):
            out += piece
        for piece in decoder.flush():
            out += piece
    except DecodedTooLarge:
        pass
    except NotDecodable:
        if not out:
            raise
    return bytes(out[:limit])


class Message(Protocol):
    """What decoding needs of an HTTP request or response (mitmproxy's)."""

    raw_content: bytes | None
    headers: Any


def message_body(message: Message, limit: int) -> bytes:
    """A request's or response's body, decoded within `limit` (an Undecodable otherwise): the only way the addon reads a body, never mitmproxy's unbounded decoding."""
    return decode_body(message.raw_content or b"", header(message.headers, b"content-encoding"), limit)


def message_prefix(message: Message, limit: int) -> bytes:
    """At most the first `limit` bytes of a body, decoded; what cannot be decoded is taken as it is."""
    try:
        return decode_prefix(message.raw_content or b"", header(message.headers, b"content-encoding"), limit)
    except (NotDecodable, UnsupportedEncoding):
        return (message.raw_content or b"")[:limit]
