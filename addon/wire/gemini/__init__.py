"""Gemini's native `generateContent` and `streamGenerateContent` (Gemini API, Vertex AI).

`format.py` claims and checks its traffic and ties the rest: `parts.py` names what a part holds; `stream.py`
assembles an answer into its candidates' parts, with or without their text, for `reader.py` (the capture's reasoning
records) and `transcript.py` (the answer as people read it, and the request too); `repair.py` puts signatures back,
`foreign.py` takes off those another origin issued."""

from __future__ import annotations

from .format import GeminiNative
from .transcript import TRANSCRIBER

FORMAT = GeminiNative()

__all__ = ["FORMAT", "TRANSCRIBER"]
