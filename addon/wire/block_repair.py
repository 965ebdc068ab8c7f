"""Giving cached reasoning blocks back to assistant messages made of content blocks, as Anthropic Messages and
Bedrock Converse both hold them: which messages may take them, which blocks a record gives, and where they go.

Each format says how its blocks read (`BlockForm`); the walk is the same for both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ..shared.records import ReasoningRecord, RepairAction
from .base import CacheView, CallHit, assistant_blocks


@dataclass(frozen=True, slots=True)
class BlockForm:
    """How one format's content blocks read, for giving reasoning blocks back."""

    is_reasoning: Callable[[Any], bool]  # a reasoning block (thinking, reasoningContent)
    kind: Callable[[Any], str | None]  # a block's kind as a captured layout lists it
    reasoning_kinds: Collection[str]  # the kinds of a layout that are reasoning blocks
    tool_uses: Callable[[list[Any]], list[Any]]  # the tool calls of a content list
    use_parts: Callable[[Any], tuple[str | None, str | None, Any]]  # a tool call's id, name and arguments
    named: Callable[[list[dict[str, Any]]], list[str]]  # what an insertion lists, for people
    blocks_field: str  # the record field that holds a turn's reasoning blocks, in order
    layout_field: str  # the record field that holds the kinds of all its blocks, where they interleaved


def repair_targets(messages: list[Any], form: BlockForm, first: int, last: int | None) -> list[int]:
    """The assistant messages from `first` on (the current tool loop, or every turn) and the `last` one, which the
    providers check, that hold tool calls and no reasoning block: a reasoning block the client sent is never
    touched, and finished turns may omit theirs."""
    candidates = set(range(first, len(messages)))
    if last is not None:
        candidates.add(last)
    return [
        index
        for index in sorted(candidates)
        if (content := assistant_blocks(messages[index]))
        and form.tool_uses(content)
        and not any(form.is_reasoning(block) for block in content)
    ]


def give_back(
    messages: list[Any], targets: list[int], cache: CacheView, form: BlockForm, refused: Collection[str] = ()
) -> list[RepairAction]:
    """Gives each target the reasoning blocks cached for its tool calls, without those of a kind the provider
    cannot read (`refused`)."""
    actions = []
    for index in targets:
        content = messages[index]["content"]
        hit = _first_hit(content, cache, form)
        blocks = _cached_blocks(hit.record, form, refused) if hit is not None else []
        if hit is None or not blocks:
            continue
        first = _restore(content, blocks, hit.record.fields.get(form.layout_field), form)
        actions.append(
            RepairAction(
                kind="inserted",
                location=f"messages[{index}].content[{first}]",
                index=index,
                fields=form.named(blocks),
                tool_call_id=hit.call.id,
                response_id=hit.record.response_id,
                via=hit.via,
            )
        )
    return actions


def _first_hit(content: list[Any], cache: CacheView, form: BlockForm) -> CallHit | None:
    for use in form.tool_uses(content):
        hit = cache.call(*form.use_parts(use))
        if hit is not None:
            return hit
    return None


def _cached_blocks(record: ReasoningRecord, form: BlockForm, refused: Collection[str]) -> list[dict[str, Any]]:
    blocks = record.fields.get(form.blocks_field)
    if not isinstance(blocks, list) or not blocks or not all(form.is_reasoning(block) for block in blocks):
        return []
    return copy.deepcopy([block for block in blocks if form.kind(block) not in refused] if refused else blocks)


def _restore(content: list[Any], blocks: list[dict[str, Any]], layout: Any, form: BlockForm) -> int:
    """Puts cached reasoning blocks back into `content`; returns where the client's first block now is. Interleaved
    blocks go back to their captured places when the client kept every other block of the answer in order;
    otherwise all lead."""
    reasoning = form.reasoning_kinds
    if isinstance(layout, list) and len(layout) == len(content) + len(blocks):
        if [kind for kind in layout if kind not in reasoning] == [form.kind(block) for block in content]:
            kept, cached = iter(content), iter(blocks)
            content[:] = [next(cached) if kind in reasoning else next(kept) for kind in layout]
            return next(i for i, kind in enumerate(layout) if kind not in reasoning)
    content[0:0] = blocks
    return len(blocks)
