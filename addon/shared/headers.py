"""Reading a header of a mitmproxy message where it is read for every LLM request and answer, on their way.

mitmproxy's `headers.get` goes through five layers of conversion for each lookup; a pass over the header fields as
they are stored does without them, and that time is the client's on a stream's way to its first event.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from mitmproxy.net.http import url

if TYPE_CHECKING:
    from mitmproxy import http


def header(headers: http.Headers, name: bytes) -> str | None:
    """`headers.get(name)`, for `name` in lower case: a repeated header's values joined by ", ", as mitmproxy joins
    them, decoded as mitmproxy decodes them."""
    values = [raw for key, raw in headers.fields if key.lower() == name]
    return b", ".join(values).decode("utf-8", "surrogateescape") if values else None


def header_values(headers: http.Headers, name: bytes) -> list[str]:
    """`headers.get_all(name)`, for `name` in lower case: each value apart, decoded as mitmproxy decodes them."""
    return [raw.decode("utf-8", "surrogateescape") for key, raw in headers.fields if key.lower() == name]


def listed_values(headers: http.Headers, name: bytes) -> frozenset[str]:
    """The comma-separated values of header `name` (lower case), over all its fields: `anthropic-beta: a,b`."""
    return frozenset(
        value.strip() for field in header_values(headers, name) for value in field.split(",") if value.strip()
    )


def has_header(headers: http.Headers, name: bytes) -> bool:
    """`name in headers`, for `name` in lower case."""
    return any(key.lower() == name for key, _ in headers.fields)


def media_type(headers: http.Headers) -> str:
    """A message's media type, in lower case and without its parameters ("" when it has no content type)."""
    return (header(headers, b"content-type") or "").split(";", 1)[0].strip().lower()


def pretty_host(request: http.Request) -> str:
    """`request.pretty_host.lower()`: the host the client named (Host header, or HTTP/2's authority), else the one
    the request goes to."""
    if request.is_http2 or request.is_http3:
        authority = request.authority or header(request.headers, b"host")
    else:
        authority = header(request.headers, b"host")
    if not authority:
        return request.host.lower()
    if len(authority) > _REMEMBERED_AUTHORITY_CHARS:
        return _host_of(authority)
    return _remembered_host_of(authority)


def _host_of(authority: str) -> str:
    return url.parse_authority(authority, check=False)[0].lower()


# A client names the same host request after request: what mitmproxy's parse (a regex and a validity check) makes of
# it is remembered for the last 256 authorities of up to 512 characters: under 1.5 MiB with the hosts made of them,
# even of characters past U+FFFF, which Python holds in four bytes each.
_REMEMBERED_AUTHORITY_CHARS = 512
_remembered_host_of = functools.lru_cache(maxsize=256)(_host_of)
