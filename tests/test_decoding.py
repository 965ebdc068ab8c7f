"""Unit tests for addon/wire/content_encoding.py: incremental Content-Encoding decoders."""

from __future__ import annotations

import gzip
import resource
import time
import zlib
from collections.abc import Iterator

import brotli
import pytest
import zstandard
from llm_reasoning_proxy.wire.content_encoding import (
    PIECE,
    BoundedDecoder,
    DecodedTooLarge,
    NotDecodable,
    UnsupportedEncoding,
    decode_body,
    decode_prefix,
    stream_decoder,
)

from tests.support.hostile_answers import bomb


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


def decoded(pieces: Iterator[bytes]) -> bytes:
    pieces = list(pieces)
    assert all(len(piece) <= PIECE for piece in pieces)
    return b"".join(pieces)


def decode_in_pieces(header: str | None, body: bytes, size: int | None) -> bytes:
    decoder = stream_decoder(header)
    if size is None:
        out = decoded(decoder.decode(body))
    else:
        out = b"".join(decoded(decoder.decode(body[i : i + size])) for i in range(0, len(body), size))
    return out + decoded(decoder.flush())


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
    early = b"".join(decoded(decoder.decode(body[i : i + size])) for i in range(0, half, size))
    assert len(early) > 10_000
    assert PAYLOAD.startswith(early)


@pytest.mark.parametrize("header", [None, "", "identity", "IDENTITY", " identity ", "identity, identity"])
@pytest.mark.parametrize("size", [None, 1, 7])
def test_identity(header, size):
    assert decode_in_pieces(header, PAYLOAD, size) == PAYLOAD
    assert decoded(stream_decoder(header).flush()) == b""


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
    assert decoded(stream_decoder(header).flush()) == b""


def test_deflate_single_byte_body_then_flush():
    # fewer than two bytes cannot be sniffed; flush() must still decode them as raw deflate
    body = raw_deflate(b"")
    decoder = stream_decoder("deflate")
    out = b"".join(decoded(decoder.decode(body[i : i + 1])) for i in range(len(body)))
    assert out + decoded(decoder.flush()) == b""


@pytest.mark.parametrize("name", ["gzip", "deflate-zlib", "deflate-raw", "br", "zstd", "gzip, br"])
def test_small_payload_in_1_byte_pieces(name):
    body = ENCODERS[name](b"data: x\n\n")
    assert decode_in_pieces(HEADER.get(name, name), body, 1) == b"data: x\n\n"


def test_each_call_returns_an_independent_decoder():
    body = gzip.compress(PAYLOAD)
    first, second = stream_decoder("gzip"), stream_decoder("gzip")
    a = decoded(first.decode(body[:1000]))
    b = decoded(second.decode(body[:1000]))
    assert a == b
    assert a + decoded(first.decode(body[1000:])) + decoded(first.flush()) == PAYLOAD
    assert b + decoded(second.decode(body[1000:])) + decoded(second.flush()) == PAYLOAD


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


# --------------------------------------------------------------------------------------
# compression bombs: a few bytes that stand for a gigabyte

GIB = 1 << 30
MIB = 1 << 20


@pytest.mark.slow
@pytest.mark.parametrize("name", ["br", "gzip", "deflate", "zstd"])
def test_a_bomb_is_decoded_no_further_than_the_limit(name: str) -> None:
    body = bomb(name)
    assert len(body) < 2 * MIB
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with pytest.raises(DecodedTooLarge, match="decodes to more than 32 MiB"):
        decode_body(body, name, 32 * MIB)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - before
    assert grown < 100  # the 32 MiB kept, and a piece: never the gigabyte
    assert decode_prefix(body, name, MIB) == b"\0" * MIB


def test_a_bomb_under_several_encodings_is_bounded_too() -> None:
    body = gzip.compress(bomb("br"))  # "br, gzip": br applied first
    with pytest.raises(DecodedTooLarge):
        decode_body(body, "br, gzip", 8 * MIB)


@pytest.mark.parametrize("name", ["br", "gzip", "deflate", "zstd"])
def test_bytes_that_are_not_what_their_encoding_says_are_not_decodable(name: str) -> None:
    with pytest.raises(NotDecodable):
        decode_body(b"this is plain text, not compressed at all" * 10, name, MIB)


def test_a_body_within_the_limit_decodes_whole() -> None:
    assert decode_body(zstandard.ZstdCompressor().compress(PAYLOAD), "zstd", MIB) == PAYLOAD
    assert decode_body(PAYLOAD, None, 10) == PAYLOAD  # identity is never "decoded": it is what it is


def test_a_plain_body_is_never_bounded_only_what_is_decoded() -> None:
    decoder = BoundedDecoder(None, 10)
    assert b"".join(decoder.decode(b"x" * 1000)) == b"x" * 1000
    with pytest.raises(DecodedTooLarge):
        b"".join(BoundedDecoder("gzip", 10).decode(gzip.compress(b"x" * 1000)))


# --------------------------------------------------------------------------------------
# what an attacker's review found


def test_an_inner_encoding_that_makes_too_much_is_bounded_too() -> None:
    # Empty deflate blocks, 10 MB of them, wrapped in brotli: the outer stage makes it all, the inner one nothing
    # at all, so only counting every stage's output stops it.
    inner = zlib.compressobj(0, wbits=15)
    head = inner.flush(zlib.Z_FULL_FLUSH)  # the zlib header, then one empty stored block
    stored = head + head[2:] * 2_000_000 + inner.flush()
    assert len(stored) > 8 * MIB and zlib.decompress(stored) == b""
    body = brotli.compress(stored, quality=5)
    with pytest.raises(DecodedTooLarge, match="decodes to more than 8 MiB"):
        decode_body(body, "deflate, br", 8 * MIB)


def test_more_than_three_encodings_are_not_decoded() -> None:
    body = gzip.compress(gzip.compress(gzip.compress(gzip.compress(b"x"))))
    with pytest.raises(UnsupportedEncoding, match="more than 3 content-encodings"):
        decode_body(body, "gzip, gzip, gzip, gzip", MIB)
    with pytest.raises(UnsupportedEncoding):
        decode_prefix(b"x", ", ".join(["gzip"] * 995), MIB)  # no RecursionError whatever the header says


def test_many_empty_gzip_members_cost_time_linear_in_their_number() -> None:
    member = gzip.compress(b"")

    def cpu(count: int) -> float:
        started = time.process_time()
        assert decode_body(member * count, "gzip", MIB) == b""
        return time.process_time() - started

    small, large = min(cpu(4_000) for _ in range(3)), min(cpu(40_000) for _ in range(3))
    assert large < 30 * max(small, 0.002), f"{small:.4f}s for 4,000 members, {large:.4f}s for 40,000"


@pytest.mark.parametrize("name", ["gzip", "deflate", "br"])
def test_compressed_data_cut_short_is_not_decodable(name: str) -> None:
    whole = {"gzip": gzip.compress, "deflate": zlib.compress, "br": brotli.compress}[name](PAYLOAD)
    with pytest.raises(NotDecodable, match="cut short"):
        decode_body(whole[: len(whole) // 2], name, MIB)
    assert decode_body(b"", name, MIB) == b""  # an empty body is no cut one


def test_an_error_body_cut_short_gives_what_was_decoded_of_it() -> None:
    import gzip as gzip_module

    from llm_reasoning_proxy.wire.content_encoding import decode_prefix

    text = b'{"error":{"message":"Corrupted thought signature."}}' * 50
    compressed = gzip_module.compress(text)
    assert decode_prefix(compressed[:-8], "gzip", 1024 * 1024) == text  # the trailer is gone, the text is whole


def test_an_error_body_prefix_is_as_long_as_asked() -> None:
    import gzip as gzip_module

    from llm_reasoning_proxy.wire.content_encoding import decode_prefix

    text = bytes(range(256)) * 4096  # 1 MiB
    assert decode_prefix(gzip_module.compress(text), "gzip", 100 * 1024) == text[: 100 * 1024]
