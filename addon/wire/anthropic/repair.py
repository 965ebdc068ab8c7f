"""A Messages request put right from the cache: thinking blocks the client dropped put back, where they were, into
the assistant messages of the current tool loop; blocks of a type the provider cannot read taken out."""

from __future__ import annotations

import copy
from typing import Any

from ... import dialects
from ...dialects.base import MessagesThinking
from ...shared.records import ReasoningRecord, RepairAction
from ..base import CacheView, CallHit, RepairContext, assistant_blocks
from .messages import current_turn_start, is_thinking_block, last_assistant, thinking_on, tool_uses, use_parts
from .reader import BLOCKS_FIELD, LAYOUT_FIELD
from .stream import THINKING_TYPES


def repair_targets(messages: list[Any], *, every_turn: bool = False) -> list[int]:
    """The assistant messages a repair may give thinking blocks back to.

    Those of the current tool loop plus the last assistant message, which is
    the one the API checks; earlier, finished turns may omit their thinking
    and are left as the client sent them, unless the provider wants every
    turn's back (`every_turn`). Only messages holding `tool_use` blocks and
    no thinking block at all qualify: a thinking block the client sent is
    never touched.
    """
    last = last_assistant(messages)
    candidates = set(range(0 if every_turn else current_turn_start(messages), len(messages)))
    if last is not None:
        candidates.add(last)
    targets = []
    for index in sorted(candidates):
        content = assistant_blocks(messages[index])
        if content and tool_uses(content) and not any(is_thinking_block(block) for block in content):
            targets.append(index)
    return targets


def _find(content: list[Any], cache: CacheView) -> CallHit | None:
    for block in tool_uses(content):
        hit = cache.call(*use_parts(block))
        if hit is not None:
            return hit
    return None


def _cached_blocks(record: ReasoningRecord, refused: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """The thinking blocks a record gives back, without those of a type the target cannot read."""
    blocks = record.fields.get(BLOCKS_FIELD)
    if not isinstance(blocks, list) or not blocks or not all(is_thinking_block(b) for b in blocks):
        return []
    return copy.deepcopy([block for block in blocks if block["type"] not in refused])


def restore_blocks(content: list[Any], blocks: list[dict[str, Any]], layout: Any) -> int:
    """Puts cached thinking blocks back into `content`; returns where the client's first block now is.

    Interleaved blocks go back to their captured places when the client kept
    every other block of the response in order; otherwise all lead.
    """
    if isinstance(layout, list) and len(layout) == len(content) + len(blocks):
        others = [kind for kind in layout if kind not in THINKING_TYPES]
        sent = [block.get("type") if isinstance(block, dict) else None for block in content]
        if others == sent:
            kept, cached = iter(content), iter(blocks)
            content[:] = [next(cached) if kind in THINKING_TYPES else next(kept) for kind in layout]
            return next(i for i, kind in enumerate(layout) if kind not in THINKING_TYPES)
    content[0:0] = blocks
    return len(blocks)


def remove_refused_blocks(messages: list[Any], rules: MessagesThinking) -> list[RepairAction]:
    """Takes out of the assistant messages the blocks of a type the provider cannot read, which it refuses the
    whole request for (a redacted_thinking block from Anthropic, sent to DeepSeek after a switch of model). A block
    that is all its message holds stays: the message cannot go empty."""
    actions: list[RepairAction] = []
    for index, message in enumerate(messages):
        content = assistant_blocks(message)
        if not content or not any(isinstance(b, dict) and b.get("type") in rules.refused_blocks for b in content):
            continue
        uses = tool_uses(content)
        call_id = use_parts(uses[0])[0] if uses else None
        removed = []
        for position in reversed(range(len(content))):  # from the end, so that positions before stay valid
            kind = content[position].get("type") if isinstance(content[position], dict) else None
            if kind not in rules.refused_blocks or len(content) == 1:
                continue
            del content[position]
            removed.append(
                RepairAction(
                    kind="foreign_removed",
                    location=f"messages[{index}].content[{position}]",
                    index=index,
                    fields=[kind],
                    tool_call_id=call_id,
                    reason=f"{rules.who} has no {kind} block",
                )
            )
        actions += reversed(removed)
    return actions


def repair_messages(doc: Any, messages: list[Any], cache: CacheView, context: RepairContext) -> list[RepairAction]:
    """Takes out the blocks the provider cannot read, then, with thinking on, gives each repair target the thinking
    blocks cached for its tool calls."""
    rules = dialects.messages_thinking(context.model or "", context.host, context.path)
    actions = remove_refused_blocks(messages, rules) if rules is not None else []
    if not thinking_on(doc, rules):
        return actions
    refused = rules.refused_blocks if rules is not None else frozenset()
    for index in repair_targets(messages, every_turn=rules is not None and rules.every_turn):
        content = messages[index]["content"]
        hit = _find(content, cache)
        blocks = _cached_blocks(hit.record, refused) if hit is not None else []
        if hit is None or not blocks:
            continue
        first = restore_blocks(content, blocks, hit.record.fields.get(LAYOUT_FIELD))
        actions.append(
            RepairAction(
                kind="inserted",
                location=f"messages[{index}].content[{first}]",
                index=index,
                fields=[block["type"] for block in blocks],
                tool_call_id=hit.call.id,
                response_id=hit.record.response_id,
                via=hit.via,
            )
        )
    return actions
