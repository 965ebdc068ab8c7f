"""OpenAI-style `/chat/completions`, as its many providers speak it.

`format.py` claims its traffic and ties together what reads, repairs and checks it: `stream.py` assembles an answer
(the capture's `reader.py` keeps its reasoning, `transcript.py` shows it as people read it), `repair.py`, `foreign.py`
and `check.py` work on a request's messages (`messages.py`); `fields.py` knows the reasoning fields themselves."""

from __future__ import annotations

from .format import ChatCompletions
from .transcript import TRANSCRIBER

FORMAT = ChatCompletions()

__all__ = ["FORMAT", "TRANSCRIBER"]
