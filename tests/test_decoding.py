"""Unit tests for addon/decoding.py: incremental Content-Encoding decoders."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest
import zstandard
from llm_reasoning_proxy.decoding import UnsupportedEncoding, stream_decoder


def _payload() -> bytes:
    lines = []
    i = 0
    while sum(map(len, lines)) < 50_000:
        lines.append(
            (
                f'data: {{"id":"chatcmpl-{i}","object":"chat.completion.chunk","choices":[{{"index":0,'
                f'"delta":{{"reasoning_content":"step {i}: thinking about caf\u00e9 and \u65e5\u672c"}}}}]}}\n\n'
            ).encode()
        )
        if i % 10 == 0:
            lines.append(b": OPENROUTER PROCESSING\n\n")
        i += 1
    lines.append(b"data: [DONE]\n\n")
    return b"".join(lines)


PAYLOAD = _payload()


def raw_deflate(data: bytes) -> bytes:
    obj = zlib.compressobj(wbits=-15)
    return obj.compress(data) + obj.flush()


ENCODERS = {
    "gzip": gzip.compress,
    "x-gzip": gzip.compress,
    "deflate-zlib": zlib.compress,
    "deflate-raw": raw_deflate,
    "br": brotli.compress,
    "zstd": lambda data: zstandard.ZstdCompressor().compress(data),
    "gzip, br": lambda data: brotli.compress(gzip.compress(data)),
    "br, gzip": lambda data: gzip.compress(brotli.compress(data)),
}
HEADER = {"deflate-zlib": "deflate", "deflate-raw": "deflate"}


def decode_in_pieces(header: str | None, body: bytes, size: int | None) -> bytes:
    decoder = stream_decoder(header)
    if size is None:
        out = decoder.decode(body)
    else:
        out = b"".join(decoder.decode(body[i : i + size]) for i in range(0, len(body), size))
    return out + decoder.flush()


def test_payload_is_about_50kb_of_sse():
    assert 50_000 <= len(PAYLOAD) < 52_000
    assert PAYLOAD.startswith(b'data: {"id":"chatcmpl-0"')
    assert PAYLOAD.endswith(b"data: [DONE]\n\n")


@pytest.mark.parametrize("size", [None, 1, 7, 4096], ids=["whole", "1-byte", "7-byte", "4k"])
@pytest.mark.parametrize("name", list(ENCODERS))
def test_round_trip_in_pieces(name, size):
    body = ENCODERS[name](PAYLOAD)
    assert body != PAYLOAD
    assert decode_in_pieces(HEADER.get(name, name), body, size) == PAYLOAD


@pytest.mark.parametrize("size", [None, 7], ids=["whole", "7-byte"])
@pytest.mark.parametrize(
    ("header", "encoder"),
    [
        ("deflate, zstd", lambda data: zstandard.ZstdCompressor().compress(zlib.compress(data))),
        ("zstd, gzip", lambda data: gzip.compress(zstandard.ZstdCompressor().compress(data))),
    ],
    ids=["deflate,zstd", "zstd,gzip"],
)
def test_chain_with_zstd(header, encoder, size):
    # zstd outermost or innermost: after its frame ends, the chain still calls decode on it
    assert decode_in_pieces(header, encoder(PAYLOAD), size) == PAYLOAD


def test_raw_and_zlib_deflate_bodies_really_differ():
    # the two deflate variants above must exercise both branches of the sniffing
    assert zlib.compress(PAYLOAD)[:1] == b"\x78"
    assert raw_deflate(PAYLOAD)[:2] != zlib.compress(PAYLOAD)[:2]


@pytest.mark.parametrize("size", [1, 7])
def test_decode_yields_output_before_the_end(size):
    # A stream copy is only useful if plain bytes come out while compressed bytes go in.
    body = gzip.compress(PAYLOAD)
    decoder = stream_decoder("gzip")
    half = len(body) // 2
    early = b"".join(decoder.decode(body[i : i + size]) for i in range(0, half, size))
    assert len(early) > 10_000
    assert PAYLOAD.startswith(early)


@pytest.mark.parametrize("header", [None, "", "identity", "IDENTITY", " identity ", "identity, identity"])
@pytest.mark.parametrize("size", [None, 1, 7])
def test_identity(header, size):
    assert decode_in_pieces(header, PAYLOAD, size) == PAYLOAD
    assert stream_decoder(header).flush() == b""


@pytest.mark.parametrize(
    ("header", "encoder"),
    [
        ("GZIP ", gzip.compress),
        (" br", brotli.compress),
        ("Br", brotli.compress),
        ("  Deflate\t", zlib.compress),
        ("ZSTD", lambda d: zstandard.ZstdCompressor().compress(d)),
        ("gzip,br", lambda d: brotli.compress(gzip.compress(d))),
        (" GZIP ,  BR ", lambda d: brotli.compress(gzip.compress(d))),
        ("identity, gzip", gzip.compress),
        ("gzip, identity", gzip.compress),
        ("gzip,,", gzip.compress),
    ],
)
def test_header_case_and_whitespace(header, encoder):
    assert decode_in_pieces(header, encoder(PAYLOAD), 7) == PAYLOAD


@pytest.mark.parametrize("header", ["compress", "foo", "gzip, foo", "foo, br", "x-compress", "gzip;q=1"])
def test_unknown_encoding_raises(header):
    with pytest.raises(UnsupportedEncoding) as info:
        stream_decoder(header)
    assert repr(header) in str(info.value)


def test_unsupported_encoding_is_a_value_error():
    assert issubclass(UnsupportedEncoding, ValueError)


@pytest.mark.parametrize("header", ["gzip", "deflate", "br", "zstd", "gzip, br"])
def test_flush_without_input(header):
    assert stream_decoder(header).flush() == b""


def test_deflate_single_byte_body_then_flush():
    # fewer than two bytes cannot be sniffed; flush() must still decode them as raw deflate
    body = raw_deflate(b"")
    decoder = stream_decoder("deflate")
    out = b"".join(decoder.decode(body[i : i + 1]) for i in range(len(body)))
    assert out + decoder.flush() == b""


@pytest.mark.parametrize("name", ["gzip", "deflate-zlib", "deflate-raw", "br", "zstd", "gzip, br"])
def test_small_payload_in_1_byte_pieces(name):
    body = ENCODERS[name](b"data: x\n\n")
    assert decode_in_pieces(HEADER.get(name, name), body, 1) == b"data: x\n\n"


def test_each_call_returns_an_independent_decoder():
    body = gzip.compress(PAYLOAD)
    first, second = stream_decoder("gzip"), stream_decoder("gzip")
    a = first.decode(body[:1000])
    b = second.decode(body[:1000])
    assert a == b
    assert a + first.decode(body[1000:]) + first.flush() == PAYLOAD
    assert b + second.decode(body[1000:]) + second.flush() == PAYLOAD


# --------------------------------------------------------------------------------------
# bodies made of several compressed units, which the formats allow


@pytest.mark.parametrize("size", [None, 7], ids=["whole", "7-byte"])
def test_gzip_with_two_members(size):
    # RFC 1952 2.2: a gzip file is a series of members; all of them are the content.
    half = len(PAYLOAD) // 2
    body = gzip.compress(PAYLOAD[:half]) + gzip.compress(PAYLOAD[half:])
    assert gzip.decompress(body) == PAYLOAD
    assert decode_in_pieces("gzip", body, size) == PAYLOAD


@pytest.mark.parametrize("size", [None, 7], ids=["whole", "7-byte"])
def test_zstd_with_two_frames(size):
    # RFC 8878 3: compressed data is one or more frames, as a streaming server emits them.
    half = len(PAYLOAD) // 2
    compressor = zstandard.ZstdCompressor()
    body = compressor.compress(PAYLOAD[:half]) + compressor.compress(PAYLOAD[half:])
    assert decode_in_pieces("zstd", body, size) == PAYLOAD
