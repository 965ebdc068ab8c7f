"""The OpenAI Responses API (`POST …/responses`, also GitHub Copilot's `/responses` and xAI's `/v1/responses`).

A response's reasoning is an output item of its own (`type: "reasoning"`, an
`rs_…` id, the `encrypted_content` and a `summary`), followed by the items the
model produced after thinking: `function_call` items (`fc_…` id, `call_id`) and
`message` items (`msg_…` id). A stateless client has to replay the reasoning
item immediately before those items in the next request's `input`; a client
that drops it gets 400 "Item 'fc_…' of type 'function_call' was provided
without its required 'reasoning' item". One record is kept per reasoning item,
its fields being the item's own keys and values as received, so repair can
put the item back verbatim.

The copies of a reasoning item differ within one stream: `output_item.added`
carries a stub `encrypted_content`, `output_item.done` the full value and
`response.completed` a re-encrypted copy. Items are therefore keyed by their
`rs_…` id, never by `encrypted_content`, and the `output_item.done` copy wins. (xAI's
`output_item.added` has no `encrypted_content` at all, and its other two copies are the
same bytes.) A reasoning item sent back without its `summary` gets it back: xAI refuses
the item without it.
"""

from __future__ import annotations

import re
from typing import Any

from ... import dialects
from ...dialects.openai import RESPONSES_REASONING_ORPHANED, deployment_model
from ...dialects.xai import REASONING_SUMMARY_MISSING
from ...shared.records import RepairAction, Violation
from ..base import (
    CacheView,
    ForeignLookup,
    RecordReader,
    RepairContext,
    ResumeRules,
    Routed,
    SentValue,
    body_model,
    call_lookup_keys,
    item_at,
)
from .foreign import remove_foreign_items
from .items import NAME, call_parts, is_input_side, is_model_output, may_follow_reasoning, reasoning_item_id, string
from .reader import ResponsesReader
from .recover import recover_items
from .repair import (
    insert_missing,
    lacks_summary,
    orphans,
    remove_orphans,
    restore_encrypted,
    restore_following_ids,
    restore_summaries,
    sent_by_id_alone,
    server_holds_history,
)
from .sent import sent_values

# Everything of a reasoning item is readable text except `encrypted_content` (and keys not known yet).
TEXT_FIELDS = frozenset({"id", "type", "summary", "content", "status"})
_REASONING_ITEM = re.compile(rb'"type"\s*:\s*"reasoning"')


def _reasoning_ids(item: Any) -> list[str]:
    reasoning_id = reasoning_item_id(item)
    return [reasoning_id] if reasoning_id is not None else []


class Responses(Routed):
    body_marker = b'"input"'
    name = NAME
    operation = "chat"  # its `gen_ai.operation.name` in OpenTelemetry's GenAI conventions
    items_key = "input"
    # A reasoning item goes before the run of model output it produced, which a tool's output or a message of the
    # client's ends.
    resume = ResumeRules(opens_turn=lambda item: not isinstance(item, dict), ends_input=is_input_side,
                         unique_ids=_reasoning_ids)  # fmt: skip
    text_fields = TEXT_FIELDS
    maskable_fields: frozenset[str] = frozenset()
    signed_fields = frozenset({"encrypted_content"})
    signed_markers = (b'"encrypted_content"',)
    opaque_keys = frozenset({"encrypted_content"})
    opaque_list_keys: frozenset[str] = frozenset()
    opaque_data_types: frozenset[str] = frozenset()

    def opaque_fragments(self, doc: Any, data_types: frozenset[str]) -> list[tuple[tuple[Any, ...], Any]]:
        return []  # a stream's encrypted_content comes whole, on output_item.done

    def remove_foreign(self, doc: Any, foreign: ForeignLookup) -> tuple[list[RepairAction], list[tuple[int, str]]]:
        items = doc.get("input") if isinstance(doc, dict) else None
        return (remove_foreign_items(items, foreign) if isinstance(items, list) else []), []

    def route(self, path: str) -> bool:
        route = path.split("?", 1)[0].rstrip("/")
        return route.endswith("/responses")

    def request_model(self, path: str, body: bytes, doc: Any | None) -> str | None:
        return deployment_model(path) or body_model(body, doc)

    def may_need_repair(self, body: bytes) -> bool:
        # A replayed call or message to find reasoning for, or a reasoning item that may be left orphaned.
        # The top-level "reasoning" parameter is common, so that word alone is not enough.
        if b'"function_call"' in body or b'"msg_' in body:
            return True
        return b'"reasoning"' in body and _REASONING_ITEM.search(body) is not None

    def reader(self) -> ResponsesReader:
        return ResponsesReader()

    def lookup_keys(self, doc: Any, model: str | None) -> list[str]:
        items = doc.get("input") if isinstance(doc, dict) else None
        if not isinstance(items, list) or server_holds_history(doc):
            return []
        keys: list[str] = []
        for index, item in enumerate(items):
            reasoning_id = reasoning_item_id(item)
            if reasoning_id is not None and (
                (index + 1 < len(items) and not may_follow_reasoning(items[index + 1])) or sent_by_id_alone(doc, item)
            ):
                # Its record holds the id its next item lost (restore_following_ids), or its encrypted_content
                # (restore_encrypted).
                keys.append(reasoning_id)
            if not is_model_output(item):
                continue
            item_id = string(item.get("id"))
            if item.get("type") == "function_call":
                keys += call_lookup_keys(model, *call_parts(item))
            if item_id is not None:
                keys.append(item_id)
        return list(dict.fromkeys(keys))

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        items = doc.get("input") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            return []
        stateless = not server_holds_history(doc)
        actions = restore_encrypted(doc, items, cache) if stateless else []
        actions += restore_following_ids(items, cache) if stateless else []
        actions += remove_orphans(items)
        if stateless:
            actions += insert_missing(items, cache)
            actions += restore_summaries(items, cache)
        return actions

    def check(self, doc: Any, context: RepairContext) -> list[Violation]:
        items = doc.get("input") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            return []
        violations = [
            Violation(
                rule=RESPONSES_REASONING_ORPHANED,
                location=f"input[{index}]",
                message=f"reasoning item {reasoning_item_id(items[index])} is not followed by an item it produced",
            )
            for index in orphans(items)
        ]
        if dialects.reasoning_summary_required(context.host, context.path, context.model or ""):
            violations += [
                Violation(
                    rule=REASONING_SUMMARY_MISSING,
                    location=f"input[{index}]",
                    message=f"reasoning item {reasoning_item_id(item)} has its encrypted_content but no summary",
                )
                for index, item in enumerate(items)
                if lacks_summary(item)
            ]
        return violations

    def recover(self, doc: Any, context: RepairContext, refused: list[int] | None) -> list[RepairAction]:
        items = doc.get("input") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            return []
        summary_required = dialects.reasoning_summary_required(context.host, context.path, context.model or "")
        return recover_items(items, refused, summary_required)

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        item = item_at(doc, self.items_key, index)
        return [call_parts(item)] if item is not None and item.get("type") == "function_call" else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        named = item_index(items, ids) if ids else None  # an item or call the error names by id
        if named is not None:
            return named
        return index if index is not None and 0 <= index < len(items) else None

    def sent_values(self, doc: Any, model: str | None, records: RecordReader) -> list[SentValue]:
        return sent_values(doc, model, records)


def item_index(items: list[Any], ids: list[str]) -> int | None:
    """The index of the first input item whose id or call_id is one of `ids`."""
    wanted = set(ids)
    for index, item in enumerate(items):
        if isinstance(item, dict) and {item.get("id"), item.get("call_id")} & wanted:
            return index
    return None


__all__ = ["NAME", "Responses", "item_index"]
