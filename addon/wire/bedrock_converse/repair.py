"""A Converse request put right from the cache: reasoning blocks the client dropped put back, where they were, into
the assistant messages of the current tool loop; reasoning blocks it sent back mangled (text emptied, signature
dropped) put back as issued, in any turn."""

from __future__ import annotations

from typing import Any

from ...shared.records import RepairAction
from .. import block_repair
from ..base import CacheView, RepairContext
from ..block_repair import BlockForm
from .messages import (
    current_turn_start,
    is_reasoning_block,
    last_assistant,
    members,
    redacted_display,
    signed_part,
    tool_uses,
    use_parts,
)
from .reader import BLOCKS_FIELD, LAYOUT_FIELD
from .stream import REASONING, block_kind

# How Converse's content blocks read, for giving reasoning blocks back (addon/wire/block_repair.py).
BLOCKS = BlockForm(
    is_reasoning=is_reasoning_block,
    kind=block_kind,
    reasoning_kinds=(REASONING,),
    tool_uses=tool_uses,
    use_parts=use_parts,
    named=members,
    blocks_field=BLOCKS_FIELD,
    layout_field=LAYOUT_FIELD,
    signed_part=signed_part,
    text_key="text",
    part_path=f"{REASONING}.reasoningText.",
)


def repair_targets(messages: list[Any]) -> list[int]:
    """The assistant messages of the current tool loop (and the last one) a repair may give reasoning blocks to."""
    return block_repair.repair_targets(messages, BLOCKS, current_turn_start(messages), last_assistant(messages))


def repair_messages(doc: Any, messages: list[Any], cache: CacheView, context: RepairContext) -> list[RepairAction]:
    """Gives each repair target the reasoning blocks cached for its tool calls, and puts back as issued the ones
    sent mangled (thinking is on)."""
    actions = block_repair.give_back(messages, repair_targets(messages), cache, BLOCKS)
    keep_empty = redacted_display(doc, context)
    mangled = block_repair.mangled_targets(messages, BLOCKS, keep_empty=keep_empty)
    return actions + block_repair.put_back_issued(messages, mangled, cache, BLOCKS, keep_empty=keep_empty)
