"""A Messages request's messages as the repair, the removal of foreign values and the check read them."""

from __future__ import annotations

from typing import Any

from ...dialects.anthropic import REDACT_THINKING_BETA
from ...dialects.base import MessagesThinking
from ..base import RepairContext, assistant_blocks, user_turn_start
from .stream import THINKING_TYPES


def thinking_enabled(doc: Any) -> bool:
    """Whether a request turns thinking on: any `thinking.type` but "disabled"."""
    thinking = doc.get("thinking") if isinstance(doc, dict) else None
    if not isinstance(thinking, dict):
        return False
    kind = thinking.get("type")
    return isinstance(kind, str) and kind != "disabled"


def thinking_on(doc: Any, rules: MessagesThinking | None) -> bool:
    """Whether a request thinks: as its `thinking` field says, or, where it has none, as its provider does by
    default (DeepSeek's Anthropic-compatible API thinks unless told not to; Anthropic only when asked)."""
    if isinstance(doc, dict) and doc.get("thinking") is None:
        return rules is not None and rules.by_default
    return thinking_enabled(doc)


def is_thinking_block(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") in THINKING_TYPES


def signed_part(block: Any) -> dict[str, Any] | None:
    """A thinking block, which holds its text and its signature (a redacted_thinking block has neither)."""
    return block if isinstance(block, dict) and block.get("type") == "thinking" else None


def redacted_display(doc: Any, context: RepairContext) -> bool:
    """Whether a request asked for Anthropic's redacted thinking, under which a thinking block comes back with an
    empty text and its signature: the `anthropic-beta` header, or on Bedrock's InvokeModel the body's
    `anthropic_beta` list, names the beta."""
    if REDACT_THINKING_BETA in context.betas:
        return True
    betas = doc.get("anthropic_beta") if isinstance(doc, dict) else None
    return isinstance(betas, list) and REDACT_THINKING_BETA in betas


def tool_uses(content: list[Any]) -> list[dict[str, Any]]:
    return [block for block in content if isinstance(block, dict) and block.get("type") == "tool_use"]


def use_parts(block: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request tool_use block's id, name and input."""
    call_id = block.get("id") if isinstance(block.get("id"), str) else None
    name = block.get("name") if isinstance(block.get("name"), str) else None
    return call_id, name, block.get("input", {})


def has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_result" for block in content
    )


def current_turn_start(messages: list[Any]) -> int:
    """Where the current tool loop begins (a user turn holding a `tool_result` continues it)."""
    return user_turn_start(messages, has_tool_result)


def last_assistant(messages: list[Any]) -> int | None:
    """The index of the last assistant message with a content list: the one the API checks."""
    return max((i for i, m in enumerate(messages) if assistant_blocks(m) is not None), default=None)
