"""A Messages request sent in the closest form its provider accepts when the thinking it requires cannot be put back
(llm_recover): the proxy never saw the turn, or the provider refused what was sent.

Anthropic's own error says what it takes instead: "To avoid this requirement, disable `thinking`" (the text of a
final assistant message without its thinking block, https://github.com/mastra-ai/mastra/issues/9277). A request with
thinking off carries `{"type": "disabled"}` and nothing else there (`budget_tokens`, `display` and `block_binding`
belong to thinking that is on), and a tool loop runs in one thinking mode ("Keep one thinking configuration per
assistant turn", https://platform.claude.com/docs/build-with-claude/thinking-tool-workflows): the thinking blocks
still in the request go too: its model reads none of them, and a request with thinking off that holds them is
reported refused (https://github.com/clusterfudge/silica/blob/main/docs/developer/compaction_thinking_mode_fix.md).
Temperature, top_k and forced tool use, which thinking rules out, are all allowed with it off. Where the
provider checks only that a thinking block is there (DeepSeek's Anthropic-compatible API), an empty one keeps
thinking on instead (addon/dialects/deepseek.py).
"""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.anthropic import ANTHROPIC_SIGNATURE_MISSING, ANTHROPIC_THINKING_EXPECTED
from ...shared.records import RepairAction, Violation
from ..base import RepairContext, assistant_blocks
from ..block_repair import take_out_reasoning, turn_thinking_off, violation_index
from .check import check_messages
from .messages import is_thinking_block
from .repair import BLOCKS

EMPTY_BLOCK = "empty thinking block sent"
_TAKEN_OUT_OFF = "thinking block taken out: thinking is off for this request"
_TAKEN_OUT_REFUSED = "thinking block the provider refused, taken out"
_TAKEN_OUT_UNSIGNED = "thinking block sent without its signature, which nothing cached holds, taken out"
# The block DeepSeek takes for a tool turn it has no thinking of (see addon/dialects/deepseek.py).
_EMPTY_THINKING = {"type": "thinking", "thinking": "", "signature": ""}


def _missing_thinking(doc: Any, messages: list[Any], context: RepairContext) -> list[Violation]:
    """The places the check finds thinking missing at (the blocks a provider cannot read are the repair's)."""
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    missing = {ANTHROPIC_THINKING_EXPECTED, rules.missing_rule if rules is not None else ANTHROPIC_THINKING_EXPECTED}
    return [v for v in check_messages(doc, messages, context) if v.rule in missing]


def send_empty_blocks(messages: list[Any], violations: list[Violation]) -> list[RepairAction]:
    """An empty thinking block first in each assistant message the check finds without one."""
    actions = []
    for violation in violations:
        index = violation_index(violation)
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


def thinking_off_for(doc: dict[str, Any], messages: list[Any], violation: Violation, model: str) -> list[RepairAction]:
    """Thinking off for this request (and the effort down to what the model takes with it off), the thinking blocks
    still there taken out; none where the model refuses thinking off."""
    turned_off = turn_thinking_off(doc, ("thinking",), "", model, violation)
    if turned_off is None:
        return []
    everywhere = list(range(len(messages)))
    return [turned_off, *take_out_reasoning(messages, everywhere, BLOCKS, _TAKEN_OUT_OFF, violation.rule)]


def recover_messages(
    doc: dict[str, Any], messages: list[Any], context: RepairContext, refused: list[int] | None
) -> list[RepairAction]:
    """Takes the thinking of the messages at `refused` out (None: of every message), then sends what the provider
    takes in place of thinking the check finds missing: thinking off, or an empty block where that is what it checks."""
    indexes = list(range(len(messages))) if refused is None else refused
    taken = take_out_reasoning(messages, indexes, BLOCKS, _TAKEN_OUT_REFUSED, None) if indexes else []
    # Claude takes no thinking block without its signature (the repair put back the one it saw issued, if any): it
    # goes as a refused one would.
    unsigned = {
        violation_index(v) for v in check_messages(doc, messages, context) if v.rule == ANTHROPIC_SIGNATURE_MISSING
    }
    taken += take_out_reasoning(
        messages, sorted(unsigned - set(indexes)), BLOCKS, _TAKEN_OUT_UNSIGNED, ANTHROPIC_SIGNATURE_MISSING
    )
    violations = _missing_thinking(doc, messages, context)
    if not violations:
        return taken
    for action in taken:
        action.rule = action.rule or violations[0].rule
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    if rules is not None and rules.stand_in == "empty_block":
        return taken + send_empty_blocks(messages, violations)
    return taken + thinking_off_for(doc, messages, violations[0], context.model or "")
