"""A Messages request put right from the cache: thinking blocks the client dropped put back, where they were, into
the assistant messages of the current tool loop; thinking blocks it sent back mangled (text emptied, signature
dropped) put back as issued, in any turn; blocks of a type the provider cannot read taken out."""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.base import MessagesThinking
from ...shared.records import RepairAction
from .. import block_repair
from ..base import CacheView, RepairContext, assistant_blocks
from ..block_repair import BlockForm
from .messages import (
    current_turn_start,
    is_thinking_block,
    last_assistant,
    redacted_display,
    signed_part,
    thinking_on,
    tool_uses,
    use_parts,
)
from .reader import BLOCKS_FIELD, LAYOUT_FIELD
from .stream import THINKING_TYPES

# How Anthropic's content blocks read, for giving thinking blocks back (addon/wire/block_repair.py).
BLOCKS = BlockForm(
    is_reasoning=is_thinking_block,
    kind=lambda block: block.get("type") if isinstance(block, dict) else None,
    reasoning_kinds=THINKING_TYPES,
    tool_uses=tool_uses,
    use_parts=use_parts,
    named=lambda blocks: [block["type"] for block in blocks],
    blocks_field=BLOCKS_FIELD,
    layout_field=LAYOUT_FIELD,
    signed_part=signed_part,
    text_key="thinking",
    part_path="",
)


def repair_targets(messages: list[Any], *, every_turn: bool = False) -> list[int]:
    """The assistant messages a repair may give thinking blocks back to: those of the current tool loop, or of every
    turn where the provider wants every turn's back (`every_turn`), and the last one, which the API checks."""
    return block_repair.repair_targets(
        messages, BLOCKS, 0 if every_turn else current_turn_start(messages), last_assistant(messages)
    )


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
    targets = repair_targets(messages, every_turn=rules is not None and rules.every_turn)
    actions += block_repair.give_back(messages, targets, cache, BLOCKS, refused)
    keep_empty = redacted_display(doc, context)
    # Only Claude refuses an unsigned thinking block (as the check says): a provider with rules of its own takes one
    # (Kimi's `signature: ""`, opencode PR #44713; DeepSeek streams none), so one sent unsigned is its client's to send.
    keep_unsigned = rules is not None
    mangled = block_repair.mangled_targets(messages, BLOCKS, keep_empty=keep_empty, keep_unsigned=keep_unsigned)
    return actions + block_repair.put_back_issued(
        messages, mangled, cache, BLOCKS, keep_empty=keep_empty, keep_unsigned=keep_unsigned
    )
