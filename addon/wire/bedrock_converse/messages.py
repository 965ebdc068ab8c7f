"""A Converse request's messages as the repair, the removal of foreign values and the check read them."""

from __future__ import annotations

from typing import Any

from ...dialects.anthropic import REDACT_THINKING_BETA
from ..base import RepairContext, assistant_blocks, user_turn_start
from .stream import REASONING, TOOL_USE, block_kind


def is_reasoning_block(block: Any) -> bool:
    return isinstance(block, dict) and isinstance(block.get(REASONING), dict)


def thinking_enabled(doc: Any) -> bool:
    """Whether a request turns Claude's extended thinking on: `additionalModelRequestFields.thinking` (or, as Bedrock's
    first Claude 3.7 documentation spelled it, `reasoning_config`) of any type but "disabled"."""
    extra = doc.get("additionalModelRequestFields") if isinstance(doc, dict) else None
    if not isinstance(extra, dict):
        return False
    for key in ("thinking", "reasoning_config"):
        setting = extra.get(key)
        if isinstance(setting, dict) and isinstance(setting.get("type"), str) and setting["type"] != "disabled":
            return True
    return False


def signed_part(block: Any) -> dict[str, Any] | None:
    """A reasoning block's `reasoningText`, which holds its text and its signature (a `redactedContent` has neither)."""
    reasoning = block.get(REASONING) if isinstance(block, dict) else None
    text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
    return text if isinstance(text, dict) else None


def redacted_display(doc: Any, context: RepairContext) -> bool:
    """Whether a request asked Claude for redacted thinking (empty reasoning texts, signed): Converse passes Claude's
    betas in `additionalModelRequestFields.anthropic_beta`."""
    extra = doc.get("additionalModelRequestFields") if isinstance(doc, dict) else None
    betas = extra.get("anthropic_beta") if isinstance(extra, dict) else None
    return REDACT_THINKING_BETA in context.betas or (isinstance(betas, list) and REDACT_THINKING_BETA in betas)


def tool_uses(content: list[Any]) -> list[dict[str, Any]]:
    return [block[TOOL_USE] for block in content if isinstance(block, dict) and isinstance(block.get(TOOL_USE), dict)]


def use_parts(use: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request toolUse's id, name and input."""
    call_id = use.get("toolUseId") if isinstance(use.get("toolUseId"), str) else None
    name = use.get("name") if isinstance(use.get("name"), str) else None
    return call_id, name, use.get("input", {})


def has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(block_kind(block) == "toolResult" for block in content)


def current_turn_start(messages: list[Any]) -> int:
    """Where the current tool loop begins (a user turn holding a toolResult continues it)."""
    return user_turn_start(messages, has_tool_result)


def last_assistant(messages: list[Any]) -> int | None:
    return max((i for i, m in enumerate(messages) if assistant_blocks(m) is not None), default=None)


def members(blocks: list[dict[str, Any]]) -> list[str]:
    """What a repair inserted, for people: `reasoningContent.reasoningText` or `…redactedContent` per block."""
    return [f"{REASONING}.{block_kind(block[REASONING]) or '?'}" for block in blocks]
