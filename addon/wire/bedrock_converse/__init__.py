"""Amazon Bedrock's Converse API (`/model/{modelId}/converse`, `/converse-stream`).

`format.py` claims, reads, repairs and checks its traffic; `transcript.py` shows it as people read it."""

from __future__ import annotations

from .format import BedrockConverse
from .transcript import TRANSCRIBER

FORMAT = BedrockConverse()

__all__ = ["FORMAT", "TRANSCRIBER"]
