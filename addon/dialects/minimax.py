"""MiniMax on chat completions: its answers carry their reasoning as a `<think>…</think>` block at the start of
`content`, or (with `"reasoning_split": true`) as `reasoning_details` entries; either must come back as it was, and a
request that drops it is answered all the same, only worse.

Documentation: https://platform.minimax.io/docs/api-reference/text-openai-api ("the content field will contain
<think> tag content, which must be preserved completely"; with reasoning_split "the model's thinking content is
provided separately via the reasoning_details field, which must also be preserved completely"). No error for dropped
reasoning is known.
"""

from __future__ import annotations

from .base import Dialect

HOST_MARKS = ("minimax.io", "minimaxi.com")


class MiniMax(Dialect):
    name = "minimax"
    otel_name = "minimax"
    known_hosts = (
        "minimax.io",
        "minimaxi.com",
    )
    silent_drops = True
    think_in_content = True

    def serves(self, host: str, path: str, model: str) -> bool:
        return any(mark in host for mark in HOST_MARKS) or model.lower().startswith("minimax-")


DIALECT = MiniMax()
