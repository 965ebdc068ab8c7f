"""A chat request put right from the cache: a turn the client split in two merged again, `content: []` made null,
and the reasoning state the client dropped put back on its messages and tool calls."""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.base import Dialect
from ...shared.records import RepairAction
from ..base import CacheView, CallHit, RepairContext
from .fields import THINK_FIELD, call_field, litellm_short_id, message_lacks, put_back, put_back_think, set_call_field
from .messages import call_parts, current_turn, has_reasoning, has_tool_calls, is_assistant, tool_calls

_EMPTY_CONTENT = (None, "", [])


def repair_messages(doc: Any, messages: list[Any], cache: CacheView, context: RepairContext) -> list[RepairAction]:
    """Repairs a request's `messages` in place (`doc`: the whole request) and says what changed."""
    dialect = dialects.serving(context.host, context.path, context.model or "")
    actions: list[RepairAction] = []
    index = 0
    while index + 1 < len(messages):
        second = messages[index + 1]
        # Only a pair ending in an assistant message can be a split turn; most pairs are not.
        if type(second) is dict and second.get("role") == "assistant":
            if _is_split_pair(messages[index], second, cache):
                messages[index : index + 2] = [_merge(messages[index], second)]
                actions.append(RepairAction(kind="merged", location=f"messages[{index}]", index=index))
        index += 1
    read_back = _turns_read_back(dialect, context, doc, messages)
    think = dialect is not None and dialect.think_in_content
    for index, message in enumerate(messages):
        if type(message) is not dict or message.get("role") != "assistant":
            continue
        calls = message.get("tool_calls")
        if type(calls) is not list or not calls:
            continue
        location = f"messages[{index}]"
        if message.get("content") == []:
            message["content"] = None
            actions.append(RepairAction("content_null", location, index))
        hits = [(call, cache.call(*call_parts(call))) for call in calls if type(call) is dict]
        # Where the provider discards a turn's reasoning, nothing is put back on it.
        if read_back is None or index in read_back:
            if restored := _restore_message(index, location, message, hits, think=think):
                actions.append(restored)
        if any(hit is not None and (hit.call.fields or hit.call.aliases) for _, hit in hits):
            actions.extend(_restore_calls(index, messages, hits))
    return actions


def _first_hit(message: dict[str, Any], cache: CacheView) -> tuple[str | None, CallHit] | None:
    """The first of a message's tool calls found in the cache: its id as sent, and the hit."""
    for call in tool_calls(message):
        parts = call_parts(call)
        hit = cache.call(*parts)
        if hit is not None:
            return parts[0], hit
    return None


def _is_split_pair(first: Any, second: Any, cache: CacheView) -> bool:
    """A turn the client sent as two assistant messages: text/reasoning, then tool calls."""
    if not (is_assistant(first) and is_assistant(second)):
        return False
    if has_tool_calls(first) or not has_tool_calls(second):
        return False
    if second.get("content") not in _EMPTY_CONTENT or has_reasoning(second):
        return False
    return has_reasoning(first) or _first_hit(second, cache) is not None


def _merge(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    merged = dict(first)
    for key, value in second.items():
        if key != "content" and merged.get(key) in _EMPTY_CONTENT:
            merged[key] = value
    return merged


def _turns_read_back(dialect: Dialect | None, context: RepairContext, doc: Any, messages: list[Any]) -> set[int] | None:
    """The indexes of the messages whose reasoning the provider reads, when it reads only some (None: all)."""
    if dialect is None or dialect.reads_back(context.path, doc) == "all":
        return None
    return set(current_turn(messages))


def _restore_message(
    index: int,
    location: str,
    message: dict[str, Any],
    hits: list[tuple[dict[str, Any], CallHit | None]],
    *,
    think: bool = False,
) -> RepairAction | None:
    """The turn's state back on the message, from the first of its calls found in the cache; with `think`, its
    `<think>` block back at the start of its content."""
    for call, hit in hits:
        if hit is not None:
            break
    else:
        return None
    fields = hit.record.fields
    restored = [name for name in fields if name != THINK_FIELD and message_lacks(message, name)]
    for name in restored:
        put_back(message, name, fields[name])
    block = fields.get(THINK_FIELD) if think else None
    if isinstance(block, str) and put_back_think(message, block):
        restored.append(THINK_FIELD)
    if not restored:
        return None
    sent_id = call.get("id")
    return RepairAction(
        "restored",
        location,
        index,
        restored,
        tool_call_id=(sent_id if isinstance(sent_id, str) else None) or hit.call.id or None,
        response_id=hit.record.response_id,
        via=hit.via,
    )


def _restore_calls(
    index: int, messages: list[Any], hits: list[tuple[dict[str, Any], CallHit | None]]
) -> list[RepairAction]:
    """State carried on each call back on that call, and LiteLLM ids made whole again."""
    actions = []
    for position, (call, hit) in enumerate(hits):
        if hit is None or not (hit.call.fields or hit.call.aliases):
            continue
        location = f"messages[{index}].tool_calls[{position}]"
        restored = [name for name, value in hit.call.fields.items() if call_field(call, name) is None]
        for name in restored:
            set_call_field(call, name, hit.call.fields[name])
        common = {"location": location, "index": index, "response_id": hit.record.response_id, "via": hit.via}
        if restored:
            sent = call.get("id") or hit.call.id or None
            actions.append(RepairAction(kind="restored", fields=restored, tool_call_id=sent, **common))
        sent_id = call.get("id")
        if isinstance(sent_id, str) and _stripped_litellm_id(sent_id, hit.call.id):
            call["id"] = hit.call.id
            _rename_tool_results(messages, index, sent_id, hit.call.id)
            actions.append(RepairAction(kind="id_restored", fields=[sent_id], tool_call_id=hit.call.id, **common))
    return actions


def _stripped_litellm_id(sent: str, captured: str) -> bool:
    """Whether the client sent a LiteLLM id without (or with a cut-off) signature suffix."""
    short = litellm_short_id(captured)
    return short is not None and sent != captured and sent.startswith(short) and captured.startswith(sent)


def _rename_tool_results(messages: list[Any], after: int, old: str, new: str) -> None:
    for message in messages[after + 1 :]:
        if isinstance(message, dict) and message.get("role") == "tool" and message.get("tool_call_id") == old:
            message["tool_call_id"] = new
