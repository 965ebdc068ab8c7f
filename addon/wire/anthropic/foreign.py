"""Thinking blocks another model, host or account signed, taken out of a Messages request's finished turns."""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...shared.records import RepairAction
from ..base import ForeignLookup, SignedBlocks, assistant_blocks, remove_foreign_blocks
from .messages import current_turn_start, is_thinking_block, last_assistant, thinking_on, tool_uses, use_parts


def _signed_value(block: Any) -> str | None:
    """The value the API verifies in a thinking block: its signature, or a redacted block's data."""
    if not is_thinking_block(block):
        return None
    value = block.get("signature" if block["type"] == "thinking" else "data")
    return value if isinstance(value, str) and value else None


def required_thinking(doc: Any, messages: list[Any]) -> dict[int, str]:
    """The assistant messages whose thinking blocks cannot go, each with why: with thinking on, the last assistant
    message when it holds `tool_use` blocks of the current tool loop (the API wants it to start with a thinking
    block), or every one with `tool_use` blocks where the provider wants every turn's thinking back."""
    model = doc.get("model") if isinstance(doc, dict) else None
    rules = dialects.messages_thinking(model if isinstance(model, str) else "")
    if not thinking_on(doc, rules):
        return {}
    if rules is not None and rules.every_turn:
        why = f"{rules.who} wants every tool turn's thinking back (go on with the model that issued it)"
        return {index: why for index, message in enumerate(messages) if tool_uses(assistant_blocks(message) or [])}
    last = last_assistant(messages)
    if last is None or last < current_turn_start(messages) or not tool_uses(assistant_blocks(messages[last]) or []):
        return {}
    return {
        last: "the current tool loop's last assistant message must start with its thinking (finish the loop on "
        "that model)"
    }


_THINKING_BLOCKS = SignedBlocks(
    content=assistant_blocks,
    signed_value=_signed_value,
    label=lambda block: block["type"],
    fields=lambda block: [block["type"]],
    first_call_id=lambda content: use_parts(uses[0])[0] if (uses := tool_uses(content)) else None,
)


def remove_foreign_thinking(doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
    """Drops the thinking blocks another model, host or account signed; earlier turns may lose their thinking
    (the API strips it anyway), the message the current tool loop ends with may not, so foreign blocks there stay."""
    messages = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(messages, list):
        return [], []
    return remove_foreign_blocks(messages, foreign, _THINKING_BLOCKS, lambda: required_thinking(doc, messages))
