"""The Responses repair: a cached reasoning item put back before the run of items it produced (once per `rs_…` id),
the `summary` put back on a reasoning item sent without it, the id an item was issued put back where the client
dropped it right after its reasoning item, and a reasoning item nothing the model produced follows (with its id)
taken out (the server refuses it)."""

from __future__ import annotations

import copy
from typing import Any, Literal

from ...shared.records import ReasoningRecord, RepairAction
from ..base import CacheView
from .items import (
    call_parts,
    is_model_output,
    is_reasoning,
    may_follow_reasoning,
    reasoning_item_id,
    string,
)


def server_holds_history(doc: dict[str, Any]) -> bool:
    """With a stored chain the server already has every earlier item; re-sending one is a duplicate."""
    return doc.get("previous_response_id") not in (None, "") or doc.get("conversation") not in (None, "")


def _found(item: Any, cache: CacheView) -> tuple[ReasoningRecord, str | None, Literal["id", "fingerprint"]] | None:
    """The cached reasoning a model-output item of the request was produced with, the call id and the match."""
    if not is_model_output(item):
        return None
    item_id = string(item.get("id"))
    if item.get("type") == "function_call":
        hit = cache.call(*call_parts(item))
        if hit is None and item_id is not None:
            hit = cache.call(item_id, None, None)
        return (hit.record, hit.call.id, hit.via) if hit is not None else None
    record = cache.record(item_id) if item_id is not None else None
    return (record, None, "id") if record is not None else None


def _cached_reasoning(record: ReasoningRecord) -> str | None:
    """The rs_ id of a record that holds a whole reasoning item."""
    return reasoning_item_id(record.fields)


def _group_start(items: list[Any], index: int, reasoning_id: str, cache: CacheView) -> int | None:
    """Where the reasoning item that produced `items[index]` goes: before the run of items it produced.

    The run is `items[index]` with the model-output items before it that came from the same reasoning
    or that nothing is cached for (the answer's text sent without its msg_ id, say); an item cached for
    other reasoning, or another reasoning item, owns the unknown items after it. None when the run
    follows a reasoning item without an id: a client that replays reasoning that way (Zed does) chose
    what to keep.
    """
    first = index
    while first > 0 and is_model_output(items[first - 1]):
        found = _found(items[first - 1], cache)
        if found is not None and _cached_reasoning(found[0]) != reasoning_id:
            return index
        first -= 1
    if first > 0 and is_reasoning(items[first - 1]):
        return None if reasoning_item_id(items[first - 1]) is None else index
    return first


def orphans(items: list[Any]) -> list[int]:
    """Indexes of reasoning items that no item the model produced follows with its id (the server refuses them)."""
    return [
        index
        for index, item in enumerate(items)
        if reasoning_item_id(item) is not None
        and not may_follow_reasoning(items[index + 1] if index + 1 < len(items) else None)
    ]


def restore_following_ids(items: list[Any], cache: CacheView) -> list[RepairAction]:
    """Puts back the id of an item right after a reasoning item where the client dropped it, when the proxy saw
    the two issued together: the function_call's fc_ id (found by its call), or the assistant message's msg_ id
    (the one message the reasoning item produced)."""
    actions = []
    present = {item.get("id") for item in items if isinstance(item, dict)}
    for index in range(len(items) - 1):
        reasoning_id, following = reasoning_item_id(items[index]), items[index + 1]
        if reasoning_id is None or not is_model_output(following) or string(following.get("id")) is not None:
            continue
        issued, call_id, via, record = _issued_id(following, reasoning_id, cache)
        if issued is None or issued in present or record is None:
            continue
        following["id"] = issued
        present.add(issued)
        actions.append(
            RepairAction(
                kind="restored",
                location=f"input[{index + 1}]",
                index=index + 1,
                fields=["id"],
                tool_call_id=call_id,
                response_id=record.response_id,
                via=via,
            )
        )
    return actions


def _issued_id(
    item: dict[str, Any], reasoning_id: str, cache: CacheView
) -> tuple[str | None, str | None, Literal["id", "fingerprint"], ReasoningRecord | None]:
    """The id `item` was issued with after the reasoning item `reasoning_id`, as the capture saw it."""
    if item.get("type") == "function_call":
        hit = cache.call(*call_parts(item))
        if hit is None or _cached_reasoning(hit.record) != reasoning_id:
            return None, None, "id", None
        issued = next((alias for alias in hit.call.aliases if alias.startswith("fc_")), None)
        return issued, hit.call.id, hit.via, hit.record
    record = cache.record(reasoning_id)
    if record is None or _cached_reasoning(record) != reasoning_id:
        return None, None, "id", None
    # The record's other keys are the messages it produced: only one of them can be this one for sure.
    messages = [key for key in record.extra_keys if key.startswith("msg_")]
    return (messages[0] if len(messages) == 1 else None), None, "id", record


def remove_orphans(items: list[Any]) -> list[RepairAction]:
    """Drops reasoning items that no item the model produced follows with its id (the server refuses them)."""
    actions = []
    # From the end, so that removing one can expose the reasoning item before it.
    for index in range(len(items) - 1, -1, -1):
        reasoning_id = reasoning_item_id(items[index])
        if reasoning_id is None:
            continue
        if may_follow_reasoning(items[index + 1] if index + 1 < len(items) else None):
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        del items[index]
        why = "the item after it lost the id it was issued" if is_model_output(following) else None
        actions.append(
            RepairAction(
                kind="removed",
                location=f"input[{index}]",
                index=index,
                fields=[f"reasoning {reasoning_id}"],
                reason=why,
            )
        )
    actions.reverse()
    return actions


def insert_missing(items: list[Any], cache: CacheView) -> list[RepairAction]:
    """Puts each cached reasoning item back before the first run of items it produced, once per rs_ id."""
    present = {reasoning_id for item in items if (reasoning_id := reasoning_item_id(item)) is not None}
    actions = []
    index = 0
    while index < len(items):
        found = _found(items[index], cache)
        reasoning_id = _cached_reasoning(found[0]) if found is not None else None
        if found is None or reasoning_id is None or reasoning_id in present:
            index += 1
            continue
        record, call_id, via = found
        start = _group_start(items, index, reasoning_id, cache)
        # The item the reasoning goes before must carry the id it was issued, or the server refuses the pair: the
        # id is put back where the capture saw it, and items of the run that lost theirs for good are passed over.
        issued = None
        while start is not None and not may_follow_reasoning(items[start]):
            issued = _issued_id(items[start], reasoning_id, cache)[0]
            if issued is not None:
                items[start]["id"] = issued
                break
            start = start + 1 if start < index else None
        if start is None:
            index += 1
            continue
        items.insert(start, copy.deepcopy(record.fields))
        present.add(reasoning_id)
        actions.append(
            RepairAction(
                kind="inserted",
                location=f"input[{start + 1}]",
                index=start + 1,
                fields=[f"reasoning {reasoning_id}"],
                tool_call_id=call_id,
                response_id=record.response_id,
                via=via,
            )
        )
        index += 2
    return actions


def lacks_summary(item: Any) -> bool:
    """A reasoning item sent back with its encrypted_content but without its `summary` (xAI refuses it: "Could not
    decode the compaction blob", addon/dialects/xai.py)."""
    return (
        reasoning_item_id(item) is not None and "summary" not in item and isinstance(item.get("encrypted_content"), str)
    )


def _produced_by(
    items: list[Any], index: int, cache: CacheView
) -> tuple[ReasoningRecord, str | None, Literal["id", "fingerprint"]] | None:
    """The cached record of the reasoning item at `index`, found through the items it produced right after it."""
    reasoning_id = reasoning_item_id(items[index])
    for item in items[index + 1 :]:
        if not is_model_output(item):
            return None
        found = _found(item, cache)
        if found is not None and _cached_reasoning(found[0]) == reasoning_id:
            return found
    return None


def restore_summaries(items: list[Any], cache: CacheView) -> list[RepairAction]:
    """Puts back the `summary` of each reasoning item sent back without it, as the provider issued it."""
    actions = []
    for index, item in enumerate(items):
        found = _produced_by(items, index, cache) if lacks_summary(item) else None
        if found is None or "summary" not in found[0].fields:
            continue
        record, call_id, via = found
        item["summary"] = copy.deepcopy(record.fields["summary"])
        actions.append(
            RepairAction(
                kind="restored",
                location=f"input[{index}]",
                index=index,
                fields=["summary"],
                tool_call_id=call_id,
                response_id=record.response_id,
                via=via,
            )
        )
    return actions


def sent_by_id_alone(doc: dict[str, Any], item: Any) -> bool:
    """A reasoning item sent as its id, without its `encrypted_content`, in a request the server keeps nothing for
    (`store: false`): the server cannot look it up, and answers 404 "Item with id 'rs_…' not found. Items are not
    persisted when `store` is set to false" (https://github.com/anomalyco/opencode/issues/7724,
    https://github.com/can1357/oh-my-pi/issues/41)."""
    return doc.get("store") is False and reasoning_item_id(item) is not None and "encrypted_content" not in item


def restore_encrypted(doc: dict[str, Any], items: list[Any], cache: CacheView) -> list[RepairAction]:
    """Puts back the `encrypted_content` (and `summary`, if it went too) of each reasoning item sent by its id alone
    under `store: false`, as the capture holds it for that id."""
    actions = []
    for index, item in enumerate(items):
        if not sent_by_id_alone(doc, item):
            continue
        reasoning_id = reasoning_item_id(item)
        record = cache.record(reasoning_id) if reasoning_id is not None else None
        if record is None or _cached_reasoning(record) != reasoning_id:
            continue  # never captured
        captured = record.fields
        if not isinstance(captured.get("encrypted_content"), str):
            continue  # the client never asked for it (`include`): there is nothing to put back
        fields = [name for name in ("encrypted_content", "summary") if name not in item and name in captured]
        for name in fields:
            item[name] = copy.deepcopy(captured[name])
        actions.append(
            RepairAction(
                kind="restored",
                location=f"input[{index}]",
                index=index,
                fields=fields,
                response_id=record.response_id,
            )
        )
    return actions
