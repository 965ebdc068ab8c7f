"""Incremental decoders for HTTP content-encodings.

mitmproxy hands a stream callable the bytes as they came off the wire, still
compressed. These decoders turn each piece into plain bytes as it passes, so a
copy of a compressed stream can be parsed without waiting for its end.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Protocol

import brotli
import zstandard


class UnsupportedEncoding(ValueError):
    pass


class StreamDecoder(Protocol):
    def decode(self, chunk: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class _Identity:
    def decode(self, chunk: bytes) -> bytes:
        return chunk

    def flush(self) -> bytes:
        return b""


class _Zlib:
    def __init__(self, wbits: int, *, members: bool = False) -> None:
        self._wbits = wbits
        self._members = members  # gzip bodies may be several members back to back
        self._obj = zlib.decompressobj(wbits=wbits)

    def decode(self, chunk: bytes) -> bytes:
        out = self._obj.decompress(chunk)
        while self._members and self._obj.eof and self._obj.unused_data:
            rest = self._obj.unused_data
            self._obj = zlib.decompressobj(wbits=self._wbits)
            out += self._obj.decompress(rest)
        return out

    def flush(self) -> bytes:
        return self._obj.flush()


class _Deflate:
    """HTTP "deflate" is meant to be zlib-wrapped, but servers also send raw deflate."""

    def __init__(self) -> None:
        self._head = b""
        self._obj: _Zlib | None = None

    def decode(self, chunk: bytes) -> bytes:
        if self._obj is None:
            self._head += chunk
            if len(self._head) < 2:
                return b""
            zlib_wrapped = (self._head[0] & 0x0F) == 8 and int.from_bytes(self._head[:2], "big") % 31 == 0
            self._obj = _Zlib(15 if zlib_wrapped else -15)
            chunk, self._head = self._head, b""
        return self._obj.decode(chunk)

    def flush(self) -> bytes:
        if self._obj is None:
            return _Zlib(-15).decode(self._head) if self._head else b""
        return self._obj.flush()


class _Brotli:
    def __init__(self) -> None:
        self._obj = brotli.Decompressor()

    def decode(self, chunk: bytes) -> bytes:
        return self._obj.process(chunk)

    def flush(self) -> bytes:
        return b""


class _Zstd:
    def __init__(self) -> None:
        # A zstd body may hold several frames; read on past the end of each.
        self._obj = zstandard.ZstdDecompressor().decompressobj(read_across_frames=True)

    def decode(self, chunk: bytes) -> bytes:
        return self._obj.decompress(chunk)

    def flush(self) -> bytes:
        return b""


class _Chain:
    """Encodings listed as "gzip, br" were applied left to right, so undo right to left."""

    def __init__(self, decoders: list[StreamDecoder]) -> None:
        self._decoders = decoders

    def decode(self, chunk: bytes) -> bytes:
        for decoder in self._decoders:
            if not chunk:
                return b""
            chunk = decoder.decode(chunk)
        return chunk

    def flush(self) -> bytes:
        out = b""
        for decoder in self._decoders:
            out = (decoder.decode(out) if out else b"") + decoder.flush()
        return out


_FACTORIES: dict[str, Callable[[], StreamDecoder]] = {
    "identity": _Identity,
    "gzip": lambda: _Zlib(31, members=True),
    "x-gzip": lambda: _Zlib(31, members=True),
    "deflate": _Deflate,
    "br": _Brotli,
    "zstd": _Zstd,
}


def stream_decoder(content_encoding: str | None) -> StreamDecoder:
    """A decoder for a Content-Encoding header value; raises UnsupportedEncoding."""
    names = [n.strip().lower() for n in (content_encoding or "").split(",") if n.strip()]
    names = [n for n in names if n != "identity"]
    if not names:
        return _Identity()
    try:
        decoders = [_FACTORIES[n]() for n in reversed(names)]
    except KeyError as e:
        raise UnsupportedEncoding(f"unsupported content-encoding {content_encoding!r}") from e
    return decoders[0] if len(decoders) == 1 else _Chain(decoders)
