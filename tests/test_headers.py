"""addon/headers.py reads a header as mitmproxy's `headers.get` does, without its conversions."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy.headers import header, media_type
from mitmproxy import http

FIELDS = [
    [],
    [(b"content-encoding", b"gzip")],
    [(b"Content-Encoding", b"gzip"), (b"x-other", b"1"), (b"CONTENT-ENCODING", b"br")],  # case, repeats
    [(b"content-encoding", b"")],
    [(b"content-encoding", b"\xff\xfe gzip"), (b"content-encoding", b"\xc3")],  # not UTF-8
    [(b"content-encodings", b"gzip"), (b"xcontent-encoding", b"br")],  # names that only contain it
]


@pytest.mark.parametrize("fields", FIELDS)
def test_a_header_reads_as_mitmproxy_reads_it(fields: list[tuple[bytes, bytes]]) -> None:
    headers = http.Headers(fields)
    assert header(headers, b"content-encoding") == headers.get("content-encoding")


def test_many_repeats_of_a_header_are_all_joined() -> None:
    headers = http.Headers([(b"content-encoding", b"gzip")] * 100_000)
    assert header(headers, b"content-encoding") == ", ".join(["gzip"] * 100_000)


@pytest.mark.parametrize(
    ("content_type", "expected"),
    [("Text/Event-Stream; charset=utf-8", "text/event-stream"), (None, ""), (" application/json ", "application/json")],
)
def test_the_media_type_is_the_content_type_without_parameters_or_case(content_type: str | None, expected: str) -> None:
    headers = http.Headers(content_type=content_type) if content_type is not None else http.Headers()
    assert media_type(headers) == expected
