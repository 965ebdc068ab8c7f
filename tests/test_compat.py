"""addon/shared/compat.py: what the addon does the same way on mitmproxy 11.0.2 and 12.x."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import brotli
import pytest
import zstandard
from llm_reasoning_proxy import make_addons
from llm_reasoning_proxy.shared import compat
from mitmproxy import http
from mitmproxy.test import tutils

from tests.support.addon_context import addon_context

BODY = b'{"model": "m", "messages": [' + b'{"role": "user", "content": "hello there"}, ' * 2000 + b"{}]}"


@pytest.mark.parametrize(
    "encoding, fastest",
    [
        ("gzip", lambda data: gzip.compress(data, compresslevel=1, mtime=0)),
        ("deflate", lambda data: zlib.compress(data, 1)),
        ("br", lambda data: brotli.compress(data, quality=0)),
        ("zstd", lambda data: zstandard.ZstdCompressor(level=1).compress(data)),
    ],
)
def test_a_repaired_body_is_encoded_at_the_fastest_level(encoding: str, fastest) -> None:
    """mitmproxy 12.2.2 encodes at each algorithm's fastest level; before it, brotli's default took seconds on a
    megabyte. Either way the body goes out as the fastest level makes it, and decodes to what was set."""
    request = tutils.treq(content=b"", headers=http.Headers(content_encoding=encoding))
    compat.set_content(request, BODY)
    assert request.raw_content == fastest(BODY)
    assert request.content == BODY
    assert request.headers["content-length"] == str(len(request.raw_content))


def test_a_body_without_encoding_or_with_chunking_is_set_as_mitmproxy_sets_it() -> None:
    plain = tutils.treq(content=b"")
    compat.set_content(plain, BODY)
    assert plain.raw_content == BODY and plain.headers["content-length"] == str(len(BODY))
    chunked = tutils.treq(content=b"", headers=http.Headers(content_encoding="gzip", transfer_encoding="chunked"))
    assert "content-length" not in chunked.headers
    compat.set_content(chunked, BODY)
    assert chunked.content == BODY and "content-length" not in chunked.headers


class StoresStreamedBodies:
    """The option as mitmproxy 12 declares it (11.0.2 has none): mitmproxy keeps streamed bodies itself."""

    def load(self, loader) -> None:
        loader.add_option("store_streamed_bodies", bool, False, "as mitmproxy 12's proxyserver declares it")


def test_streamed_bodies_are_reattached_only_where_mitmproxy_does_not_keep_them(tmp_path: Path) -> None:
    config = make_addons()[0]
    with addon_context(config, StoresStreamedBodies()) as tctx:
        tctx.configure(config, llm_cache="memory", llm_log="", llm_keep_bodies="true")
        assert config.keep_bodies() and config.reattach_streamed_bodies()
        tctx.options.update(store_streamed_bodies=True)
        assert config.keep_bodies() and not config.reattach_streamed_bodies()  # one copy of each answer, not two


def test_the_runtime_names_mitmproxy_and_python() -> None:
    import platform

    from mitmproxy.version import VERSION

    assert compat.runtime() == f"mitmproxy {VERSION}, Python {platform.python_version()}"
    assert compat.MITMPROXY_VERSION[:2] in {(11, 0), (12, 0), (12, 1), (12, 2), (12, 3)}
    assert compat.version_tuple("12.0.0.dev0") == (12, 0, 0) and compat.version_tuple("13") == (13, 0, 0)


@pytest.mark.parametrize(
    "fields",
    [
        [],
        [(b"Content-Length", b"3")],  # its name as the client wrote it
        [(b"content-length", b"3"), (b"x-a", b"1"), (b"CONTENT-LENGTH", b"4")],  # repeated: one left, in place
        [(b"transfer-encoding", b"chunked"), (b"content-length", b"3")],  # chunked: left as it is
        [(b"Transfer-Encoding", b"chunked")],
        [(b"content-encoding", b"")],  # names an encoding: mitmproxy's own path
        [(b"content-encoding", b"identity"), (b"content-length", b"3")],
        [(b"content-encoding", b"gzip")],
    ],
)
def test_a_body_is_set_as_mitmproxy_sets_it(fields: list[tuple[bytes, bytes]]) -> None:
    ours, theirs = (tutils.treq(content=b"abc", headers=http.Headers(fields)) for _ in range(2))
    compat.set_content(ours, BODY)
    theirs.set_content(BODY)
    assert ours.headers.fields == theirs.headers.fields
    assert ours.get_content(strict=False) == theirs.get_content(strict=False) == BODY
