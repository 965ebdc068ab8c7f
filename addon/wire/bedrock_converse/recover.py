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

from ...shared.records import RepairAction
from ..base import RepairContext
from ..block_repair import take_out_reasoning, turn_thinking_off
from .check import check_messages
from .repair import BLOCKS

_TAKEN_OUT_OFF = "reasoning block taken out: thinking is off for this request"
_TAKEN_OUT_REFUSED = "reasoning block the provider refused, taken out"
_SETTINGS = ("thinking", "reasoning_config")
_PREFIX = "additionalModelRequestFields."


def recover_messages(
    doc: dict[str, Any], messages: list[Any], context: RepairContext, refused: list[int] | None
) -> list[RepairAction]:
    """Takes the reasoning of the messages at `refused` out (None: of every message), then turns thinking off if the
    check still finds reasoning missing or unsigned."""
    indexes = list(range(len(messages))) if refused is None else refused
    taken = take_out_reasoning(messages, indexes, BLOCKS, _TAKEN_OUT_REFUSED, None) if indexes else []
    violations = check_messages(messages)
    if not violations:
        return taken
    violation = violations[0]
    for action in taken:
        action.rule = action.rule or violation.rule
    extra = doc.get("additionalModelRequestFields")
    turned_off = (
        turn_thinking_off(extra, _SETTINGS, _PREFIX, context.model or "", violation)
        if isinstance(extra, dict)
        else None
    )
    if turned_off is None:
        return taken
    everywhere = list(range(len(messages)))
    return [*taken, turned_off, *take_out_reasoning(messages, everywhere, BLOCKS, _TAKEN_OUT_OFF, violation.rule)]
