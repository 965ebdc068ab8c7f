"""The addon that gives mitmproxy's console, mitmweb and mitmdump a content view named "LLM".

For a request of a known wire format it shows the conversation by role, with what the proxy restored or
removed marked; for a response, the answer (a stream assembled, not its raw events); for a 4xx or 5xx, the
diagnosis. mitmproxy picks it by itself ("auto") for LLM traffic only; anything else keeps mitmproxy's views.
"""

from __future__ import annotations

from mitmproxy import http

from .. import compat, formats
from ..decoding import Undecodable, message_body
from ..limits import MAX_DECODED_BYTES
from ..transcripts.view import Rendered, render
from .annotate import flow_meta

VIEW_NAME = "LLM"
_FORMAT_NAMES = frozenset(f.name for f in formats.FORMATS)


def shows(data: bytes, flow: http.HTTPFlow, message: http.Message) -> bool:
    """Whether the view shows `message`: the request or response of a flow whose request is of a known wire
    format. mitmproxy asks for every message it shows: only a POST to an LLM route has a body looked at."""
    request = flow.request
    if message is not request and message is not flow.response:
        return False
    meta = flow_meta(flow)
    if meta is not None and meta.get("format") in _FORMAT_NAMES:  # the proxy saw it pass
        return True
    if not formats.routed(request.method, request.path):
        return False
    try:
        body = data if message is request else message_body(request, MAX_DECODED_BYTES)
    except Undecodable:
        return False
    return formats.claim(request.method, request.path, body) is not None


def show(data: bytes, flow: http.HTTPFlow, message: http.Message) -> Rendered | None:
    return render(flow, message)


class LlmContentView:
    """Registers the view while the addon is loaded; `done` takes it out again, so that a reload adds it anew."""

    def __init__(self) -> None:
        self._handle: object = None

    def load(self, loader: object) -> None:
        compat.remove_contentview(self._handle)
        self._handle = compat.add_contentview(VIEW_NAME, show, shows)

    def done(self) -> None:
        compat.remove_contentview(self._handle)
        self._handle = None
