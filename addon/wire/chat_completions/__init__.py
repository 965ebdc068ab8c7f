"""OpenAI-style `/chat/completions`, as its many providers speak it.

`format.py` claims, reads, repairs and checks its traffic; `transcript.py` shows it as people read it."""

from __future__ import annotations

from .format import ChatCompletions
from .transcript import TRANSCRIBER

FORMAT = ChatCompletions()

__all__ = ["FORMAT", "TRANSCRIBER"]
