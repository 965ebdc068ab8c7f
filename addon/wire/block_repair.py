"""Giving cached reasoning blocks back to assistant messages made of content blocks, as Anthropic Messages and
Bedrock Converse both hold them: which messages may take them, which blocks a record gives, and where they go;
putting back, as issued, the blocks a client sent back mangled (its text emptied, its signature dropped); and, when
nothing can be put back (llm_recover), taking reasoning blocks out and thinking off as Claude takes it.

Each format says how its blocks read (`BlockForm`); the walk is the same for both.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from ..dialects.anthropic import effort_too_high, thinking_off
from ..shared.records import ReasoningRecord, RepairAction, Violation, place_index
from .base import CacheView, CallHit, assistant_blocks

THINKING_OFF = "thinking turned off for this request"


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
    # The object of a reasoning block that holds its text and its `signature` (Anthropic's thinking block itself,
    # Converse's reasoningText); None for a block without (a redacted one).
    signed_part: Callable[[Any], dict[str, Any] | None]
    text_key: str  # the key of that object's text
    part_path: str  # where that object sits in its block, for people ("" or "reasoningContent.reasoningText.")


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


# Reasoning blocks a client sent back mangled --------------------------------------------------------------------------
#
# Two client bugs, both refused by Claude whoever serves it (Anthropic, Vertex AI, Bedrock, Copilot):
#
# - the thinking text emptied, the signature kept: "`thinking` or `redacted_thinking` blocks in the latest assistant
#   message cannot be modified. These blocks must remain as they were in the original response." The extended-thinking
#   docs (https://docs.claude.com/en/docs/build-with-claude/extended-thinking) and the preserved-thinking docs
#   (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking) ask for every block back exactly as
#   the API returned it. The signature names the block, so the one issued with it is put back. An empty text is no
#   evidence by itself: Claude 5 models return empty thinking unless the request sets `thinking.display:
#   "summarized"` (https://github.com/stdapi-ai/stdapi.ai/issues/285), and then the captured text is empty too and
#   nothing changes. A request that asked for redacted thinking (`keep_empty`) sends empty texts by design.
# - the block saved without its signature, or with an empty one, and the session resumed: "messages.369.content.0.
#   thinking.signature: Field required" (Bedrock, https://github.com/can1357/oh-my-pi/pull/10486; Anthropic after a
#   model switch, https://github.com/anomalyco/opencode/issues/25005). AWS binds the signature to the block and
#   everything before it, so only the block as issued passes
#   (https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-thinking-block-binding.html). The turn is found by its tool calls, as `give_back` finds it, and its blocks
#   are matched to the client's in order.


def unsigned(part: dict[str, Any]) -> bool:
    """Whether a reasoning block's text-and-signature object lacks a signature (absent, empty, not a string)."""
    signature = part.get("signature")
    return not isinstance(signature, str) or not signature


def emptied(part: dict[str, Any], form: BlockForm) -> bool:
    """Whether a signed reasoning block's text is empty or gone."""
    return not unsigned(part) and part.get(form.text_key) in ("", None)


def mangled(block: Any, form: BlockForm, *, keep_empty: bool, keep_unsigned: bool = False) -> bool:
    """Whether a reasoning block may have been sent back otherwise than issued: unsigned (unless the provider takes
    unsigned blocks, `keep_unsigned`), or (unless the request asked for empty texts, `keep_empty`) signed with its
    text empty. Only the capture can tell."""
    part = form.signed_part(block)
    return part is not None and ((unsigned(part) and not keep_unsigned) or (not keep_empty and emptied(part, form)))


def mangled_targets(
    messages: list[Any], form: BlockForm, *, keep_empty: bool = False, keep_unsigned: bool = False
) -> list[int]:
    """The assistant messages, of any turn, that hold tool calls (what finds their capture) and a reasoning block
    that may have been mangled."""
    return [
        index
        for index, message in enumerate(messages)
        if (content := assistant_blocks(message))
        and form.tool_uses(content)
        and any(mangled(block, form, keep_empty=keep_empty, keep_unsigned=keep_unsigned) for block in content)
    ]


def put_back_issued(
    messages: list[Any],
    targets: list[int],
    cache: CacheView,
    form: BlockForm,
    *,
    keep_empty: bool,
    keep_unsigned: bool = False,
) -> list[RepairAction]:
    """Puts back, in each target, the reasoning blocks as the capture of its tool calls holds them where the client
    sent them mangled: one with its text emptied by the block its signature names, one without a signature by the
    block issued in its place (the client's reasoning blocks matched to the issued ones in order, when they are as
    many and of the same kinds)."""
    actions = []
    for index in targets:
        content = messages[index]["content"]
        hit = _first_hit(content, cache, form)
        issued = _cached_blocks(hit.record, form, ()) if hit is not None else []
        for position, fields in _mend(content, issued, form, keep_empty, keep_unsigned):
            actions.append(
                RepairAction(
                    kind="restored",
                    location=f"messages[{index}].content[{position}]",
                    index=index,
                    fields=[form.part_path + name for name in fields],
                    tool_call_id=hit.call.id if hit is not None else None,
                    response_id=hit.record.response_id if hit is not None else None,
                    via=hit.via if hit is not None else None,
                )
            )
    return actions


def _mend(
    content: list[Any], issued: list[dict[str, Any]], form: BlockForm, keep_empty: bool, keep_unsigned: bool
) -> list[tuple[int, list[str]]]:
    """Replaces the mangled reasoning blocks of `content` with the `issued` ones they stand for; returns the position
    of each and the names of the fields that differed."""
    sent = [(position, block) for position, block in enumerate(content) if form.is_reasoning(block)]
    by_signature = {}
    for block in issued:
        part = form.signed_part(block)
        if part is not None and not unsigned(part):
            by_signature.setdefault(part["signature"], block)
    in_order = len(sent) == len(issued) and all(
        form.kind(block) == form.kind(original)
        and (form.signed_part(block) is None) == (form.signed_part(original) is None)
        for (_, block), original in zip(sent, issued)
    )
    mended = []
    for number, (position, block) in enumerate(sent):
        part = form.signed_part(block)
        if part is None:
            continue
        if unsigned(part):
            if keep_unsigned:
                continue
            original = issued[number] if in_order else None
        elif not keep_empty and emptied(part, form):
            original = by_signature.get(part["signature"])
        else:
            continue
        original_part = form.signed_part(original) if original is not None else None
        if original_part is None or unsigned(original_part):
            continue  # nothing issued stands for it (a provider that streams no signature: DeepSeek's)
        fields = [name for name in (form.text_key, "signature") if part.get(name) != original_part.get(name)]
        if not fields:
            continue  # sent as captured (Claude 5's empty thinking)
        content[position] = copy.deepcopy(original)
        mended.append((position, fields))
    return mended


def violation_index(violation: Violation) -> int:
    """The index in `messages` of the place a violation names ("messages[3].content[0]")."""
    return place_index(violation.location) or 0


def take_out_reasoning(
    messages: list[Any], indexes: list[int], form: BlockForm, reason: str, rule: str | None
) -> list[RepairAction]:
    """Drops the reasoning blocks of the assistant messages at `indexes` (llm_recover), from the end so that the
    positions before stay valid. A block that is all its message holds stays: the message cannot go empty."""
    actions: list[RepairAction] = []
    for index in sorted(set(indexes), reverse=True):
        content = assistant_blocks(messages[index]) if 0 <= index < len(messages) else None
        if not content:
            continue
        uses = form.tool_uses(content)
        call_id = form.use_parts(uses[0])[0] if uses else None
        for position in reversed(range(len(content))):
            if not form.is_reasoning(content[position]) or len(content) == 1:
                continue
            kind = form.kind(content[position]) or "reasoning"
            del content[position]
            location = f"messages[{index}].content[{position}]"
            actions.append(
                RepairAction("recovered", location, index, [kind], call_id, degraded=True, reason=reason, rule=rule)
            )
    actions.reverse()
    return actions


def turn_thinking_off(
    settings: dict[str, Any], keys: tuple[str, ...], prefix: str, model: str, violation: Violation
) -> RepairAction | None:
    """Thinking off for this request as Claude takes it, in `settings` (a Messages body, or Converse's
    additionalModelRequestFields): each of `keys` that turned it on becomes `{"type": "disabled"}` (its budget and
    the rest belong to thinking that is on), and an effort above what the model takes with thinking off comes down.
    What was changed (fields named with `prefix`); None where the model refuses thinking off."""
    off = thinking_off(model)
    if off is None:
        return None
    fields = []
    for key in keys:
        if isinstance(settings.get(key), dict):
            settings[key] = {"type": "disabled"}
            fields.append(prefix + key)
    config = settings.get("output_config")
    if isinstance(config, dict) and effort_too_high(config.get("effort"), off):
        config["effort"] = off.max_effort
        fields.append(f"{prefix}output_config.effort")
    index = violation_index(violation)
    return RepairAction(
        "recovered",
        f"messages[{index}]",
        index,
        fields,
        violation.tool_call_id,
        degraded=True,
        reason=THINKING_OFF,
        rule=violation.rule,
    )
