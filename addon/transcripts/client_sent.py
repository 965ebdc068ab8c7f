"""The request body as the client sent it, on a recorded flow whose request a proxy repaired live.

A proxy whose flows are kept (a flow file, a HAR file, a UI; `llm_keep_bodies`) copies the client's body into
the flow's metadata (`original_request`) before it repairs it: the offline check and the fixture export read that
copy, since the flow's own request is the repaired one.
"""

from __future__ import annotations

from mitmproxy import http

from ..shared.flow_meta import flow_meta
from ..shared.limits import MAX_DECODED_BYTES
from ..wire import content_encoding as decoding


def _kept_copy(flow: http.HTTPFlow) -> bytes | None:
    meta = flow_meta(flow)
    original = meta.get("original_request") if meta is not None else None
    if isinstance(original, str):
        return original.encode("utf-8", "surrogateescape")
    return original if isinstance(original, bytes) else None


def repaired_live(flow: http.HTTPFlow) -> bool:
    """Whether a proxy repaired the flow's request live and kept what the client sent."""
    return _kept_copy(flow) is not None


def client_sent_body(flow: http.HTTPFlow) -> bytes | None:
    """The copy of the client's request body the proxy kept, decoded; None when it kept none (the flow's request
    is then what the client sent, to be read as any other).

    The proxy keeps the copy decoded; one that is not JSON under a request with a content-encoding is decoded
    here, and taken as it is when it does not decode. Raises decoding.DecodedTooLarge past MAX_DECODED_BYTES.
    """
    original = _kept_copy(flow)
    if original is None:
        return None
    content_encoding = flow.request.headers.get("content-encoding", "").strip()
    if not content_encoding or original.lstrip()[:1] in (b"{", b"["):
        return original
    try:
        return decoding.decode_body(original, content_encoding, MAX_DECODED_BYTES)
    except (decoding.NotDecodable, decoding.UnsupportedEncoding):
        return original  # kept already decoded
