"""Amazon Bedrock's Converse API (`/model/{modelId}/converse`, `/converse-stream`).

`format.py` claims, reads, repairs and checks its traffic, each job in a module of its own; `transcript.py` shows it
as people read it. Both read an answer through `stream.py`, which assembles its content blocks."""

from __future__ import annotations

from .format import BedrockConverse
from .transcript import TRANSCRIBER

FORMAT = BedrockConverse()

__all__ = ["FORMAT", "TRANSCRIBER"]
