"""The OpenAI Responses API (`/responses`: OpenAI, GitHub Copilot, xAI).

`format.py` claims and checks its traffic and ties the rest: `items.py` tells what an item is; `stream.py` assembles an
answer into its output items, with or without their text, for `reader.py` (the capture's reasoning records) and
`transcript.py` (the answer as people read it, and the request too); `repair.py` puts reasoning items back and takes
out orphans, `foreign.py` takes out those another origin issued."""

from __future__ import annotations

from .format import Responses
from .transcript import TRANSCRIBER

FORMAT = Responses()

__all__ = ["FORMAT", "TRANSCRIBER"]
