"""A Converse request sent in the closest form Claude accepts when the reasoning it requires cannot be put back
(llm_recover).

Bedrock hands the conversation to Claude as Anthropic messages, so Anthropic's remedy holds: thinking off for this
request ("To avoid this requirement, disable `thinking`", in the text Bedrock passes on:
https://github.com/langchain-ai/langchain-aws/issues/844), set as `{"type": "disabled"}` in
`additionalModelRequestFields` where the request turned it on (`thinking`, or `reasoning_config` as Bedrock's first
Claude 3.7 documentation spelled it). A turn runs in one thinking mode, so the reasoningContent blocks still in the
request go too (see addon/wire/anthropic/recover.py), unsigned ones included, which Claude refuses either way.
"""

from __future__ import annotations

from typing import Any

from ...dialects.anthropic import effort_too_high, thinking_off
from ...shared.records import RepairAction, Violation
from ..base import RepairContext, assistant_blocks
from .check import check_messages
from .messages import is_reasoning_block, tool_uses, use_parts
from .stream import REASONING

THINKING_OFF = "thinking turned off for this request"
_TAKEN_OUT_OFF = "reasoning block taken out: thinking is off for this request"
_TAKEN_OUT_REFUSED = "reasoning block the provider refused, taken out"
_SETTINGS = ("thinking", "reasoning_config")


def take_out_reasoning(messages: list[Any], indexes: list[int], reason: str, rule: str | None) -> list[RepairAction]:
    """Drops the reasoningContent blocks of the assistant messages at `indexes`, from the end; a block that is all its
    message holds stays."""
    actions: list[RepairAction] = []
    for index in sorted(set(indexes), reverse=True):
        content = assistant_blocks(messages[index]) if 0 <= index < len(messages) else None
        if not content:
            continue
        uses = tool_uses(content)
        call_id = use_parts(uses[0])[0] if uses else None
        for position in reversed(range(len(content))):
            if not is_reasoning_block(content[position]) or len(content) == 1:
                continue
            del content[position]
            location = f"messages[{index}].content[{position}]"
            actions.append(
                RepairAction(
                    "recovered", location, index, [REASONING], call_id, degraded=True, reason=reason, rule=rule
                )
            )
    actions.reverse()
    return actions


def _message_index(violation: Violation) -> int:
    return int(violation.location.split("]", 1)[0].split("[", 1)[1])


def turn_thinking_off(doc: dict[str, Any], messages: list[Any], violation: Violation, model: str) -> list[RepairAction]:
    """Thinking off in `additionalModelRequestFields`, the reasoning blocks taken out; none where the model refuses
    thinking off."""
    off = thinking_off(model)
    extra = doc.get("additionalModelRequestFields")
    if off is None or not isinstance(extra, dict):
        return []
    fields = []
    for key in _SETTINGS:
        if isinstance(extra.get(key), dict):
            extra[key] = {"type": "disabled"}
            fields.append(f"additionalModelRequestFields.{key}")
    config = extra.get("output_config")
    if isinstance(config, dict) and effort_too_high(config.get("effort"), off):
        config["effort"] = off.max_effort
        fields.append("additionalModelRequestFields.output_config.effort")
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
    return [turned_off, *take_out_reasoning(messages, list(range(len(messages))), _TAKEN_OUT_OFF, violation.rule)]


def recover_messages(
    doc: dict[str, Any], messages: list[Any], context: RepairContext, refused: list[int] | None
) -> list[RepairAction]:
    """Takes the reasoning of the messages at `refused` out (None: of every message), then turns thinking off if the
    check still finds reasoning missing or unsigned."""
    indexes = list(range(len(messages))) if refused is None else refused
    taken = take_out_reasoning(messages, indexes, _TAKEN_OUT_REFUSED, None) if indexes else []
    violations = check_messages(messages)
    if not violations:
        return taken
    for action in taken:
        action.rule = violations[0].rule
    return taken + turn_thinking_off(doc, messages, violations[0], context.model or "")
