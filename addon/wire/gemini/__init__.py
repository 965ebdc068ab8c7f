"""Gemini's native `generateContent` and `streamGenerateContent` (Gemini API, Vertex AI).

`format.py` claims, reads, repairs and checks its traffic; `transcript.py` shows it as people read it."""

from __future__ import annotations

from .format import GeminiNative
from .transcript import TRANSCRIBER

FORMAT = GeminiNative()

__all__ = ["FORMAT", "TRANSCRIBER"]
