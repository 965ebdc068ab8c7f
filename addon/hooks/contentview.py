"""The addon that gives mitmproxy's console, mitmweb and mitmdump a content view named "LLM".

For a request of a known wire format it shows the conversation by role, with what the proxy restored or
removed marked; for a response, the answer (a stream assembled, not its raw events); for a 4xx or 5xx, the
diagnosis. mitmproxy picks it by itself ("auto") for LLM traffic only; anything else keeps mitmproxy's views.
"""

from __future__ import annotations

from mitmproxy import http

from ..shared import compat
from ..transcripts.flows import wire_format_of
from ..transcripts.view import Rendered, render

VIEW_NAME = "LLM"


def shows(data: bytes, flow: http.HTTPFlow, message: http.Message) -> bool:
    """Whether the view shows `message`: the request or response of a flow whose request is of a known wire
    format. mitmproxy asks for every message it shows: only a POST to an LLM route has a body looked at."""
    return (message is flow.request or message is flow.response) and wire_format_of(flow) is not None


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
