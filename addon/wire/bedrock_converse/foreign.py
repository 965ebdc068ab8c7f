"""Reasoning blocks another model, host or account signed, taken out of a Converse request's finished turns."""

from __future__ import annotations

from typing import Any

from ...shared.records import RepairAction
from ..base import ForeignLookup, SignedBlocks, assistant_blocks, remove_foreign_blocks
from .messages import current_turn_start, last_assistant, members, thinking_enabled, tool_uses, use_parts
from .stream import REASONING


def _signed_value(block: Any) -> str | None:
    """The value Claude verifies in a reasoning block: its signature, or the redacted blob."""
    reasoning = block.get(REASONING) if isinstance(block, dict) else None
    if not isinstance(reasoning, dict):
        return None
    text = reasoning.get("reasoningText")
    value = text.get("signature") if isinstance(text, dict) else reasoning.get("redactedContent")
    return value if isinstance(value, str) and value else None


def required_reasoning_at(doc: Any, messages: list[Any]) -> int | None:
    """The assistant message whose reasoning cannot go: with thinking on, the last assistant message when it holds
    toolUse blocks of the current tool loop."""
    if not thinking_enabled(doc):
        return None
    last = last_assistant(messages)
    if last is None or last < current_turn_start(messages) or not tool_uses(assistant_blocks(messages[last]) or []):
        return None
    return last


_REASONING_BLOCKS = SignedBlocks(
    content=assistant_blocks,
    signed_value=_signed_value,
    label=lambda block: "reasoningContent",
    fields=lambda block: members([block]),
    first_call_id=lambda content: use_parts(uses[0])[0] if (uses := tool_uses(content)) else None,
)


_LOOP_END_KEEPS = (
    "the current tool loop's last assistant message must start with its reasoning (finish the loop on that model)"
)


def remove_foreign_reasoning(doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Drops the reasoning blocks another model, host or account signed; as for Anthropic, the last assistant
    message of the current tool loop keeps its own, and a block that is all its message holds stays."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return [], []

    def required() -> dict[int, str]:
        index = required_reasoning_at(doc, messages)
        return {} if index is None else {index: _LOOP_END_KEEPS}

    return remove_foreign_blocks(messages, foreign, _REASONING_BLOCKS, required)
