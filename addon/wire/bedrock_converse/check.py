"""The rules a Converse request breaks, as far as the request alone shows (checked before it is sent on)."""

from __future__ import annotations

from typing import Any

from ...dialects.anthropic import ANTHROPIC_SIGNATURE_MISSING, ANTHROPIC_THINKING_EXPECTED
from ...shared.records import Violation
from ..base import assistant_blocks
from .messages import is_reasoning_block, last_assistant, tool_uses, use_parts
from .stream import REASONING, block_kind


def check_messages(messages: list[Any]) -> list[Violation]:
    """With thinking on: each reasoningText without its signature, and the last assistant message when it holds tool
    use and does not start with its reasoning."""
    found = []
    for index, message in enumerate(messages):
        for position, block in enumerate(assistant_blocks(message) or ()):
            reasoning = block.get(REASONING) if isinstance(block, dict) else None
            text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
            if isinstance(text, dict) and not text.get("signature"):
                found.append(
                    Violation(
                        rule=ANTHROPIC_SIGNATURE_MISSING,
                        location=f"messages[{index}].content[{position}]",
                        message="reasoningText without its signature (Claude takes no unsigned thinking)",
                    )
                )
    last = last_assistant(messages)
    content = assistant_blocks(messages[last]) if last is not None else None
    if content and tool_uses(content) and not is_reasoning_block(content[0]):
        kind = block_kind(content[0]) or type(content[0]).__name__
        found.append(
            Violation(
                rule=ANTHROPIC_THINKING_EXPECTED,
                location=f"messages[{last}].content[0]",
                message=f"the final assistant message must start with a reasoningContent block, found `{kind}`",
                tool_call_id=use_parts(tool_uses(content)[0])[0],
            )
        )
    return found
