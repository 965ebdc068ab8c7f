"""Anthropic Messages (`/v1/messages`; Claude on Vertex AI's rawPredict and Bedrock's InvokeModel).

`format.py` claims, reads, repairs and checks its traffic, each job in a module of its own; `transcript.py` shows it
as people read it. Both read an answer through `stream.py`, which assembles its content blocks."""

from __future__ import annotations

from .format import AnthropicMessages
from .transcript import TRANSCRIBER

FORMAT = AnthropicMessages()

__all__ = ["FORMAT", "TRANSCRIBER"]
