"""The rules a Messages request breaks, as far as the request alone shows (checked before it is sent on)."""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.anthropic import ANTHROPIC_SIGNATURE_MISSING, ANTHROPIC_THINKING_EXPECTED
from ...dialects.base import MessagesThinking
from ...shared.records import Violation
from ..base import RepairContext, assistant_blocks
from ..block_repair import unsigned
from .messages import is_thinking_block, last_assistant, signed_part, thinking_on, tool_uses, use_parts


def every_turn_violations(messages: list[Any], rules: MessagesThinking) -> list[Violation]:
    """Where a provider wants every turn's thinking back: each assistant message with tool use and no thinking."""
    return [
        Violation(
            rule=rules.missing_rule,
            location=f"messages[{index}]",
            message=f"assistant message with tool use and no thinking block ({rules.who} wants every turn's back)",
            tool_call_id=use_parts(tool_uses(content)[0])[0],
        )
        for index, message in enumerate(messages)
        if (content := assistant_blocks(message))
        and tool_uses(content)
        and not any(is_thinking_block(b) for b in content)
    ]


def refused_block_violations(messages: list[Any], rules: MessagesThinking) -> list[Violation]:
    """Each block of a type the provider cannot read."""
    return [
        Violation(
            rule=rules.refused_rule,
            location=f"messages[{index}].content[{position}]",
            message=f"{block['type']} block, which {rules.who} cannot read",
        )
        for index, message in enumerate(messages)
        for position, block in enumerate(assistant_blocks(message) or ())
        if isinstance(block, dict) and block.get("type") in rules.refused_blocks
    ]


def unsigned_violations(messages: list[Any]) -> list[Violation]:
    """Each thinking block without its signature, which Claude refuses wherever it is ("messages.369.content.0.
    thinking.signature: Field required": https://github.com/can1357/oh-my-pi/pull/10486,
    https://github.com/anomalyco/opencode/issues/25005)."""
    return [
        Violation(
            rule=ANTHROPIC_SIGNATURE_MISSING,
            location=f"messages[{index}].content[{position}]",
            message="thinking block without its signature (Claude takes no unsigned thinking)",
            tool_call_id=next((use_parts(use)[0] for use in tool_uses(content)), None),
        )
        for index, message in enumerate(messages)
        if (content := assistant_blocks(message))
        for position, block in enumerate(content)
        if (part := signed_part(block)) is not None and unsigned(part)
    ]


def check_messages(doc: Any, messages: list[Any], context: RepairContext) -> list[Violation]:
    """Blocks the provider cannot read; with thinking on, Claude's thinking blocks without a signature, and the
    assistant messages whose thinking is missing: the last one when it holds tool use and does not start with
    thinking, or every one where the provider wants each back."""
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    violations = refused_block_violations(messages, rules) if rules is not None else []
    if not thinking_on(doc, rules):
        return violations
    if rules is None:  # Claude's (a provider with rules of its own, DeepSeek, streams no signature)
        violations += unsigned_violations(messages)
    if rules is not None and rules.every_turn:
        return violations + every_turn_violations(messages, rules)
    last = last_assistant(messages)
    content = assistant_blocks(messages[last]) if last is not None else None
    if not content or not tool_uses(content) or is_thinking_block(content[0]):
        return violations
    found = content[0].get("type") if isinstance(content[0], dict) else type(content[0]).__name__
    return violations + [
        Violation(
            rule=ANTHROPIC_THINKING_EXPECTED,
            location=f"messages[{last}].content[0]",
            message=f"the final assistant message must start with a thinking block, found `{found}`",
            tool_call_id=use_parts(tool_uses(content)[0])[0],
        )
    ]
