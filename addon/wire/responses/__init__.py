"""The OpenAI Responses API (`/responses`: OpenAI, GitHub Copilot, xAI).

`format.py` claims, reads, repairs and checks its traffic; `transcript.py` shows it as people read it."""

from __future__ import annotations

from .format import Responses
from .transcript import TRANSCRIBER

FORMAT = Responses()

__all__ = ["FORMAT", "TRANSCRIBER"]
