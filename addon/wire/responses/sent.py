"""The reasoning items a Responses request sends back, held against what the proxy captured for them: what an error
that refuses an item's `encrypted_content` (or, under `store: false`, an item sent by its id alone) is judged by.

A reasoning item is found in the cache by its `rs_…` id, or through the items it produced right after it (a record
captured before the id was a key of its own, or an item sent without its id). Its `encrypted_content` comes back only to a request that asks for it (`include:
["reasoning.encrypted_content"]`, https://platform.openai.com/docs/guides/reasoning): without it, a reasoning item
sent by its id alone under `store: false` is one no one could have sent whole."""

from __future__ import annotations

from typing import Any

from ...shared.records import ReasoningRecord
from ..base import CacheView, RecordReader, SentValue, call_lookup_keys
from .items import call_parts, is_model_output, is_reasoning, reasoning_item_id, string

INCLUDE_ENCRYPTED = "reasoning.encrypted_content"


def asks_for_encrypted(doc: dict[str, Any]) -> bool:
    """Whether the request asks for its reasoning items' encrypted_content in the answer."""
    include = doc.get("include")
    return isinstance(include, list) and INCLUDE_ENCRYPTED in include


def _produced(items: list[Any], index: int) -> list[dict[str, Any]]:
    """The run of items the model produced right after the reasoning item at `index`."""
    run = []
    for item in items[index + 1 :]:
        if not is_model_output(item):
            break
        run.append(item)
    return run


def _keys(items: list[Any], model: str | None) -> list[str]:
    keys: list[str] = []
    for index, item in enumerate(items):
        if not is_reasoning(item):
            continue
        reasoning_id = reasoning_item_id(item)
        if reasoning_id is not None:
            keys.append(reasoning_id)
        for produced in _produced(items, index):
            if produced.get("type") == "function_call":
                keys += call_lookup_keys(model, *call_parts(produced))
            if (item_id := string(produced.get("id"))) is not None:
                keys.append(item_id)
    return list(dict.fromkeys(keys))


def _record(items: list[Any], index: int, cache: CacheView) -> ReasoningRecord | None:
    """The captured record of the reasoning item at `index`: by its id, else through the first item after it the
    capture saw it produce (the record of that very item, where it has an id)."""
    reasoning_id = reasoning_item_id(items[index])
    record = cache.record(reasoning_id) if reasoning_id is not None else None
    if record is not None and reasoning_item_id(record.fields) == reasoning_id:
        return record
    for produced in _produced(items, index):
        hit = cache.call(*call_parts(produced)) if produced.get("type") == "function_call" else None
        item_id = string(produced.get("id"))
        record = hit.record if hit is not None else cache.record(item_id) if item_id is not None else None
        captured_id = reasoning_item_id(record.fields) if record is not None else None
        if captured_id is not None and reasoning_id in (None, captured_id):
            return record
    return None


def _sent_value(items: list[Any], index: int, cache: CacheView, asked: bool) -> SentValue | None:
    item = items[index]
    reasoning_id = reasoning_item_id(item)
    value = item.get("encrypted_content") if isinstance(item.get("encrypted_content"), str) else None
    if value is None and reasoning_id is None:
        return None
    record = _record(items, index, cache)
    captured = record.fields.get("encrypted_content") if record is not None else None
    call = next((c for c in _produced(items, index) if c.get("type") == "function_call"), None)
    call_id, function, _ = call_parts(call) if call is not None else (None, None, None)
    return SentValue(
        index=index,
        location=f"input[{index}]",
        label=f"reasoning item {reasoning_id}" if reasoning_id else "reasoning item without an id",
        value=value,
        captured=captured if isinstance(captured, str) else None,
        item_ids=(reasoning_id,) if reasoning_id else (),
        call_id=call_id,
        function=function,
        asked=asked,
    )


def sent_values(doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
    """Each reasoning item the request sends back with its encrypted_content or by its id, with the value the proxy
    captured for it."""
    items = doc.get("input") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not any(is_reasoning(item) for item in items):
        return []
    keys = _keys(items, model)
    cache = CacheView(records(keys) if keys else {}, model)
    asked = asks_for_encrypted(doc)
    found = (_sent_value(items, index, cache, asked) for index, item in enumerate(items) if is_reasoning(item))
    return [value for value in found if value is not None]
