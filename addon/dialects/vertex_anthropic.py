"""Claude on Google Vertex AI: the Anthropic Messages API behind Vertex's `rawPredict` and `streamRawPredict`.

A request goes to `…/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict` (or
`:streamRawPredict` for a stream, which keeps `"stream": true` in the body); its body is a Messages body without
`model`, which the path names, and with `"anthropic_version": "vertex-2023-10-16"` (the Anthropic SDK's Vertex
client, https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/lib/vertex/_client.py, and
https://docs.anthropic.com/en/api/claude-on-vertex-ai). Answers and errors are Anthropic's, error ids `req_vrtx_…`
(https://github.com/anthropics/claude-code/issues/52811), so Anthropic's rules read them; a gateway in front of Vertex
may pass them on inside Google's envelope, `{"error": {"code": 400, "message": "<Anthropic's error as JSON>",
"status": "INVALID_ARGUMENT"}}` (https://github.com/lbjlaq/Antigravity-Manager/issues/777), which the diagnosis opens.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from .base import Dialect

# Token counting (`…/models/count-tokens:rawPredict`) names no model and answers no message: it is not claimed.
_RAW_PREDICT = re.compile(r"/publishers/anthropic/models/(?P<model>[^/:?]+):(?:streamRawPredict|rawPredict)$")


def raw_predict_model(path: str) -> str | None:
    """The model a Vertex AI `rawPredict` or `streamRawPredict` path for Claude names (None for any other path)."""
    match = _RAW_PREDICT.search(path.split("?", 1)[0])
    model = unquote(match.group("model")) if match else None
    return model if model and model != "count-tokens" else None


class VertexAnthropic(Dialect):
    """Claude on Vertex AI: Anthropic's thinking rules and error texts (the anthropic dialect's), on Google's hosts
    and routes."""

    name = "vertex_anthropic"
    otel_name = "gcp.vertex_ai"
    known_hosts = ("aiplatform.googleapis.com",)
    host = "aiplatform.googleapis.com"

    def serves(self, host: str, path: str, model: str) -> bool:
        return raw_predict_model(path) is not None


DIALECT = VertexAnthropic()
