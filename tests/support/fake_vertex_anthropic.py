"""Fake Claude on Vertex AI: `…/publishers/anthropic/models/{model}:rawPredict` and `:streamRawPredict`.

The Anthropic fake's rules and answers (tests/support/fake_anthropic.py), behind Vertex's routes
(https://docs.anthropic.com/en/api/claude-on-vertex-ai): the model is the one the path names, the body carries
`"anthropic_version": "vertex-2023-10-16"` and no `model`, a stream is asked for on `:streamRawPredict` (with
`"stream": true` still in the body), and error ids are Vertex's `req_vrtx_…`
(https://github.com/anthropics/claude-code/issues/52811). Its thinking signatures are its own: a block another
fake issued is not one it issued.
"""

from __future__ import annotations

import re

from .fake_anthropic import AnthropicDialect, error
from .fake_provider import Options, Recorded, Reply

VERSION = "vertex-2023-10-16"
_RAW_PREDICT = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:?]+):(?P<method>streamRawPredict|rawPredict)$")


class VertexAnthropicFake(AnthropicDialect):
    name = "vertex_anthropic"

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict] = []  # the bodies as they arrived, for tests to see what reached Vertex

    def matches(self, path: str) -> bool:
        return _RAW_PREDICT.search(path.split("?")[0]) is not None

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        self.bodies.append(doc)
        route = _RAW_PREDICT.search(recorded.path.split("?")[0])
        assert route is not None
        # What the Anthropic SDK's Vertex client sends (src/anthropic/lib/vertex/_client.py): checked, since a proxy
        # that changed it would be caught nowhere else. (Vertex's own texts for these are not known.)
        if doc.get("anthropic_version") != VERSION or "model" in doc:
            return error(f"fake Vertex: anthropic_version must be {VERSION} and the body must name no model")
        if bool(doc.get("stream")) != (route["method"] == "streamRawPredict"):
            return error(f"fake Vertex: stream {doc.get('stream')!r} on {route['method']}")
        reply = super().handle({**doc, "model": route["model"]}, recorded, options)
        if reply.status != 200 and isinstance(reply.doc, dict):
            reply.doc["request_id"] = reply.doc["request_id"].replace("req_", "req_vrtx_", 1)
        return reply
