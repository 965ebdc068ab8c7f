"""A Messages request sent in the closest form its provider accepts when the thinking it requires cannot be put back
(llm_recover): the proxy never saw the turn, or the provider refused what was sent.

Anthropic's own error says what it takes instead: "To avoid this requirement, disable `thinking`" (the text of a
final assistant message without its thinking block, https://github.com/mastra-ai/mastra/issues/9277). A request with
thinking off carries `{"type": "disabled"}` and nothing else there (`budget_tokens`, `display` and `block_binding`
belong to thinking that is on), and a tool loop runs in one thinking mode ("Keep one thinking configuration per
assistant turn", https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows): the thinking blocks
still in the request go too: its model reads none of them, and a request with thinking off that holds them is
reported refused (https://github.com/clusterfudge/silica/blob/main/docs/developer/compaction_thinking_mode_fix.md). Temperature, top_k and forced tool use, which thinking rules out, are all allowed with it off. Where the
provider checks only that a thinking block is there (DeepSeek's Anthropic-compatible API), an empty one keeps
thinking on instead (addon/dialects/deepseek.py).
"""

from __future__ import annotations

import re
from typing import Any

from ... import dialects
from ...dialects.anthropic import (
    ANTHROPIC_SIGNATURE_MISSING,
    ANTHROPIC_THINKING_EXPECTED,
    effort_too_high,
    thinking_off,
)
from ...shared.records import RepairAction, Violation
from ..base import RepairContext, assistant_blocks
from .check import check_messages
from .messages import is_thinking_block, tool_uses, use_parts

THINKING_OFF = "thinking turned off for this request"
EMPTY_BLOCK = "empty thinking block sent"
_TAKEN_OUT_OFF = "thinking block taken out: thinking is off for this request"
_TAKEN_OUT_REFUSED = "thinking block the provider refused, taken out"
_TAKEN_OUT_UNSIGNED = "thinking block sent without its signature, which nothing cached holds, taken out"
# The block DeepSeek takes for a tool turn it has no thinking of (see addon/dialects/deepseek.py).
_EMPTY_THINKING = {"type": "thinking", "thinking": "", "signature": ""}
_MESSAGE_AT = re.compile(r"^messages\[(\d+)\]")


def _call_id(content: list[Any]) -> str | None:
    uses = tool_uses(content)
    return use_parts(uses[0])[0] if uses else None


def take_out_thinking(messages: list[Any], indexes: list[int], reason: str, rule: str | None) -> list[RepairAction]:
    """Drops the thinking and redacted_thinking blocks of the assistant messages at `indexes`, from the end so that
    positions before stay valid. A block that is all its message holds stays: the message cannot go empty."""
    actions: list[RepairAction] = []
    for index in sorted(set(indexes), reverse=True):
        content = assistant_blocks(messages[index]) if 0 <= index < len(messages) else None
        if not content:
            continue
        call_id = _call_id(content)
        for position in reversed(range(len(content))):
            if not is_thinking_block(content[position]) or len(content) == 1:
                continue
            kind = content[position]["type"]
            del content[position]
            location = f"messages[{index}].content[{position}]"
            actions.append(
                RepairAction("recovered", location, index, [kind], call_id, degraded=True, reason=reason, rule=rule)
            )
    actions.reverse()
    return actions


def _missing_thinking(doc: Any, messages: list[Any], context: RepairContext) -> list[Violation]:
    """The places the check finds thinking missing at (the blocks a provider cannot read are the repair's)."""
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    missing = {ANTHROPIC_THINKING_EXPECTED, rules.missing_rule if rules is not None else ANTHROPIC_THINKING_EXPECTED}
    return [v for v in check_messages(doc, messages, context) if v.rule in missing]


def _message_index(violation: Violation) -> int:
    at = _MESSAGE_AT.match(violation.location)
    return int(at.group(1)) if at else 0


def send_empty_blocks(messages: list[Any], violations: list[Violation]) -> list[RepairAction]:
    """An empty thinking block first in each assistant message the check finds without one."""
    actions = []
    for violation in violations:
        index = _message_index(violation)
        content = assistant_blocks(messages[index]) if index < len(messages) else None
        if content is None or (content and is_thinking_block(content[0])):
            continue
        content.insert(0, dict(_EMPTY_THINKING))
        actions.append(
            RepairAction(
                "recovered",
                f"messages[{index}].content[0]",
                index,
                ["thinking"],
                violation.tool_call_id,
                degraded=True,
                reason=EMPTY_BLOCK,
                rule=violation.rule,
            )
        )
    return actions


def turn_thinking_off(doc: dict[str, Any], messages: list[Any], violation: Violation, model: str) -> list[RepairAction]:
    """Thinking off for this request (and the effort down to what the model takes with it off), the thinking blocks
    still there taken out; none where the model refuses thinking off."""
    off = thinking_off(model)
    if off is None:
        return []
    doc["thinking"] = {"type": "disabled"}
    fields = ["thinking"]
    config = doc.get("output_config")
    if isinstance(config, dict) and effort_too_high(config.get("effort"), off):
        config["effort"] = off.max_effort
        fields.append("output_config.effort")
    index = _message_index(violation)
    turned_off = RepairAction(
        "recovered",
        f"messages[{index}]",
        index,
        fields,
        violation.tool_call_id,
        degraded=True,
        reason=THINKING_OFF,
        rule=violation.rule,
    )
    return [turned_off, *take_out_thinking(messages, list(range(len(messages))), _TAKEN_OUT_OFF, violation.rule)]


def recover_messages(
    doc: dict[str, Any], messages: list[Any], context: RepairContext, refused: list[int] | None
) -> list[RepairAction]:
    """Takes the thinking of the messages at `refused` out (None: of every message), then sends what the provider
    takes in place of thinking the check finds missing: thinking off, or an empty block where that is what it checks."""
    indexes = list(range(len(messages))) if refused is None else refused
    taken = take_out_thinking(messages, indexes, _TAKEN_OUT_REFUSED, None) if indexes else []
    # Claude takes no thinking block without its signature (the repair put back the one it saw issued, if any): it
    # goes as a refused one would.
    unsigned = {
        _message_index(v) for v in check_messages(doc, messages, context) if v.rule == ANTHROPIC_SIGNATURE_MISSING
    }
    taken += take_out_thinking(
        messages, sorted(unsigned - set(indexes)), _TAKEN_OUT_UNSIGNED, ANTHROPIC_SIGNATURE_MISSING
    )
    violations = _missing_thinking(doc, messages, context)
    if not violations:
        return taken
    for action in taken:
        action.rule = action.rule or violations[0].rule
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    if rules is not None and rules.stand_in == "empty_block":
        return taken + send_empty_blocks(messages, violations)
    return taken + turn_thinking_off(doc, messages, violations[0], context.model or "")
