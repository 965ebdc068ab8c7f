"""Reading a header of a mitmproxy message where it is read for every LLM request and answer, on their way.

mitmproxy's `headers.get` goes through five layers of conversion for each lookup; a pass over the header fields as
they are stored does without them, and that time is the client's on a stream's way to its first event.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mitmproxy import http


def header(headers: http.Headers, name: bytes) -> str | None:
    """`headers.get(name)`, for `name` in lower case: a repeated header's values joined by ", ", as mitmproxy joins
    them, decoded as mitmproxy decodes them."""
    values = [raw for key, raw in headers.fields if key.lower() == name]
    return b", ".join(values).decode("utf-8", "surrogateescape") if values else None


def media_type(headers: http.Headers) -> str:
    """A message's media type, in lower case and without its parameters ("" when it has no content type)."""
    return (header(headers, b"content-type") or "").split(";", 1)[0].strip().lower()
