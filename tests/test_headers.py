"""addon/shared/headers.py reads a header as mitmproxy's `headers.get` does, without its conversions."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy.shared.headers import has_header, header, header_values, media_type, pretty_host
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
    assert header_values(headers, b"content-encoding") == headers.get_all("content-encoding")
    assert has_header(headers, b"content-encoding") is ("content-encoding" in headers)


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


HOSTS = [
    ("HTTP/1.1", b"", [(b"Host", b"API.OpenAI.com")]),
    ("HTTP/1.1", b"", [(b"host", b"api.deepseek.com:8443")]),
    ("HTTP/1.1", b"", [(b"host", b"[::1]:8080")]),
    ("HTTP/1.1", b"", [(b"host", b"a.example"), (b"Host", b"b.example")]),  # repeated: joined, as mitmproxy joins
    ("HTTP/1.1", b"", [(b"host", b"")]),  # empty: the host the request goes to
    ("HTTP/1.1", b"", []),
    ("HTTP/1.1", b"", [(b"host", b"\xff\xfe.example")]),  # not UTF-8
    ("HTTP/1.1", b"", [(b"host", b"h" * 600 + b".example")]),  # past what is remembered
    ("HTTP/2.0", b"Generativelanguage.googleapis.com", []),
    ("HTTP/2.0", b"", [(b"host", b"api.anthropic.com")]),
    ("HTTP/2.0", b"a.example:443", [(b"host", b"b.example")]),  # the authority first
    ("HTTP/3", b"", []),
]


@pytest.mark.parametrize(("version", "authority", "fields"), HOSTS)
def test_the_named_host_reads_as_mitmproxy_reads_it(version: str, authority: bytes, fields: list) -> None:
    request = http.Request.make("POST", "https://Upstream.Example:8443/v1/chat/completions", b"{}")
    request.http_version, request.data.authority, request.headers = version, authority, http.Headers(fields)
    for _ in range(2):  # read, then remembered
        assert pretty_host(request) == request.pretty_host.lower()
