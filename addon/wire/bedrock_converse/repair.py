"""A Converse request put right from the cache: reasoning blocks the client dropped put back, where they were, into
the assistant messages of the current tool loop."""

from __future__ import annotations

import copy
from typing import Any

from ...shared.records import ReasoningRecord, RepairAction
from ..base import CacheView, CallHit, assistant_blocks
from .messages import current_turn_start, is_reasoning_block, last_assistant, members, tool_uses, use_parts
from .reader import BLOCKS_FIELD, LAYOUT_FIELD
from .stream import REASONING, block_kind


def repair_targets(messages: list[Any]) -> list[int]:
    """The assistant messages of the current tool loop (and the last one) holding toolUse blocks and no reasoning
    block: a reasoning block the client sent is never touched, and finished turns may omit theirs."""
    last = last_assistant(messages)
    candidates = set(range(current_turn_start(messages), len(messages)))
    if last is not None:
        candidates.add(last)
    return [
        index
        for index in sorted(candidates)
        if (content := assistant_blocks(messages[index]))
        and tool_uses(content)
        and not any(is_reasoning_block(block) for block in content)
    ]


def _find(content: list[Any], cache: CacheView) -> CallHit | None:
    for use in tool_uses(content):
        hit = cache.call(*use_parts(use))
        if hit is not None:
            return hit
    return None


def _cached_blocks(record: ReasoningRecord) -> list[dict[str, Any]]:
    blocks = record.fields.get(BLOCKS_FIELD)
    if not isinstance(blocks, list) or not blocks or not all(is_reasoning_block(b) for b in blocks):
        return []
    return copy.deepcopy(blocks)


def restore_blocks(content: list[Any], blocks: list[dict[str, Any]], layout: Any) -> int:
    """Puts cached reasoning blocks back into `content`; returns where the client's first block now is. Interleaved
    blocks go back to their captured places when the client kept every other block of the answer in order."""
    if isinstance(layout, list) and len(layout) == len(content) + len(blocks):
        if [kind for kind in layout if kind != REASONING] == [block_kind(block) for block in content]:
            kept, cached = iter(content), iter(blocks)
            content[:] = [next(cached) if kind == REASONING else next(kept) for kind in layout]
            return next(i for i, kind in enumerate(layout) if kind != REASONING)
    content[0:0] = blocks
    return len(blocks)


def repair_messages(messages: list[Any], cache: CacheView) -> list[RepairAction]:
    """Gives each repair target the reasoning blocks cached for its tool calls (thinking is on)."""
    actions = []
    for index in repair_targets(messages):
        content = messages[index]["content"]
        hit = _find(content, cache)
        blocks = _cached_blocks(hit.record) if hit is not None else []
        if hit is None or not blocks:
            continue
        first = restore_blocks(content, blocks, hit.record.fields.get(LAYOUT_FIELD))
        actions.append(
            RepairAction(
                kind="inserted",
                location=f"messages[{index}].content[{first}]",
                index=index,
                fields=members(blocks),
                tool_call_id=hit.call.id,
                response_id=hit.record.response_id,
                via=hit.via,
            )
        )
    return actions
