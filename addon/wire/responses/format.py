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

import copy
import re
from collections.abc import Iterator
from typing import Any, Literal

from ... import dialects
from ...dialects.openai import RESPONSES_REASONING_ORPHANED, deployment_model
from ...dialects.xai import REASONING_SUMMARY_MISSING
from ...shared import jsoncodec
from ...shared.limits import Budget
from ...shared.records import (
    ReasoningRecord,
    RepairAction,
    ToolCallRef,
    Violation,
    arguments_digest,
    canonical_arguments,
)
from ..base import CacheView, ForeignLookup, RepairContext, ResumeRules, Routed, body_model, call_lookup_keys, item_at
from ..sse import SSEEvent

NAME = "openai_responses"
# Everything of a reasoning item is readable text except `encrypted_content` (and keys not known yet).
TEXT_FIELDS = frozenset({"id", "type", "summary", "content", "status"})

_ITEM_DONE = "response.output_item.done"
_STARTED = ("response.created", "response.in_progress")
# Terminal events that carry the whole `response` with its `output`.
_FINISHED = ("response.completed", "response.incomplete")
_WANTED = (_ITEM_DONE, *_STARTED, *_FINISHED)
_WANTED_MARKERS = tuple((kind, f'{kind}"'.encode()) for kind in _WANTED)
_REASONING_ID = re.compile(rb'"(rs_[0-9A-Za-z_-]+)"')
_REASONING_ITEM = re.compile(rb'"type"\s*:\s*"reasoning"')

# Output item types besides `function_call` and `message` that the model produces
# (hosted tools, MCP); anything ending in "_call" is one as well.
_OTHER_OUTPUT_TYPES = frozenset({"mcp_list_tools", "mcp_approval_request"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})


def _kind_of(data: bytes) -> str | None:
    """Which wanted event an unnamed event's payload is, judged by substring (a hint: the parse decides)."""
    for kind, marker in _WANTED_MARKERS:
        if marker in data:
            return kind
    return None


def _is_reasoning(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "reasoning"


def _reasoning_id(item: Any) -> str | None:
    if not _is_reasoning(item):
        return None
    item_id = item.get("id")
    return item_id if isinstance(item_id, str) and item_id else None


def _is_message(item: dict[str, Any]) -> bool:
    kind = item.get("type")
    return kind == "message" or (kind is None and "role" in item)


def is_model_output(item: Any) -> bool:
    """An item the model produced (other than reasoning): what a reasoning item must be followed by."""
    if not isinstance(item, dict):
        return False
    if _is_message(item):
        return item.get("role") == "assistant"
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_call") or kind in _OTHER_OUTPUT_TYPES)


def is_input_side(item: Any) -> bool:
    """An item only the client writes: a user/system/developer message or a tool's output."""
    if not isinstance(item, dict):
        return False
    if _is_message(item):
        return item.get("role") in _INPUT_ROLES
    kind = item.get("type")
    return isinstance(kind, str) and (kind.endswith("_output") or kind == "mcp_approval_response")


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _call_parts(item: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request function_call item's call_id, name and arguments."""
    return _string(item.get("call_id")), _string(item.get("name")), item.get("arguments", "")


def _tool_call_ref(item: dict[str, Any]) -> ToolCallRef | None:
    call_id, name, _ = _call_parts(item)
    if call_id is None:
        return None
    fc_id = _string(item.get("id"))
    return ToolCallRef(
        id=call_id,
        name=name or "",
        arguments_sha256=item[_DIGEST],
        aliases=[fc_id] if fc_id and fc_id != call_id else [],
    )


_DIGEST = "arguments_sha256"


def _kept(item: dict[str, Any]) -> dict[str, Any]:
    """What a record needs of an output item: a reasoning item whole; of a function call its ids, name and a
    digest of its arguments; of anything else its type, role and id (an answer's text is not needed)."""
    if _is_reasoning(item):
        return item
    kept = {key: item[key] for key in ("type", "role", "id", "call_id", "name") if key in item}
    if item.get("type") == "function_call":
        arguments = item.get("arguments", "")
        kept[_DIGEST] = arguments_digest(arguments if isinstance(arguments, str) else canonical_arguments(arguments))
    return kept


def _payload_lines(data: bytes) -> Iterator[bytes]:
    """One payload per line when a stream written without blank lines folded several events into one."""
    yield from (line for line in data.split(b"\n") if line.strip())


class ResponsesReader:
    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this reader keeps

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._items: dict[int, dict[str, Any]] = {}  # output_index -> the item, whole
        self._next_index = 0  # where an item that came without an output_index goes: after every other
        self._done_reasoning: set[str] = set()  # rs_ ids that came in an output_item.done event
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if self.budget.over is not None:  # nothing more is kept of an answer over a bound
            return
        if b"\n" in data:
            try:
                doc = jsoncodec.loads(data)
            except ValueError:
                for line in _payload_lines(data):
                    self._feed_payload(None, line)
                return
            self._feed(doc)
            return
        self._feed_payload(event.event, data)

    def skippable(self, data: bytes) -> bool:
        return self.response_id is not None and not any(marker in data for _, marker in _WANTED_MARKERS)

    def _feed_payload(self, name: str | None, data: bytes) -> None:
        # Nearly every event is a text or arguments delta; only a handful are parsed.
        kind = name if name is not None else _kind_of(data)
        if kind is None or not self._wants(kind, data):
            return
        try:
            doc = jsoncodec.loads(data)
        except ValueError:
            self.unreadable += 1
            return
        self._feed(doc)

    def _wants(self, kind: str, data: bytes) -> bool:
        if kind == _ITEM_DONE:
            return True
        if kind in _STARTED:
            return self.response_id is None
        if kind in _FINISHED:
            # The final event repeats every item and can be large: read it only when it can add something,
            # i.e. when no item came whole before it or it names a reasoning item not seen yet.
            if self.response_id is None or not self._items:
                return True
            return any(m.decode() not in self._done_reasoning for m in _REASONING_ID.findall(data))
        return False

    def _feed(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        kind = doc.get("type")
        if kind == _ITEM_DONE:
            self._take_done(doc)
        elif kind in _STARTED or kind in _FINISHED:
            response = doc.get("response")
            if isinstance(response, dict):
                self._note_response(response)
                if kind in _FINISHED:
                    self._take_output(response.get("output"))

    def feed_document(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        self._note_response(doc)
        self._take_output(doc.get("output"))

    def _note_response(self, response: dict[str, Any]) -> None:
        if self.response_id is None:
            self.response_id = _string(response.get("id"))
        if self.response_model is None:
            self.response_model = _string(response.get("model"))

    def _take_done(self, doc: dict[str, Any]) -> None:
        item = doc.get("item")
        if not isinstance(item, dict):
            return
        index = doc.get("output_index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = self._next_index
        if not self._keep(index, item):
            return
        self._next_index = max(self._next_index, index + 1)
        reasoning_id = _reasoning_id(item)
        if reasoning_id is not None:
            self._done_reasoning.add(reasoning_id)

    def _take_output(self, output: Any) -> None:
        """Items of a whole response; in a stream, only those that never came in an output_item.done."""
        if not isinstance(output, list):
            return
        for index, item in enumerate(output):
            if not isinstance(item, dict) or index in self._items or _reasoning_id(item) in self._done_reasoning:
                continue
            if not self._keep(index, item):
                return

    def _keep(self, index: int, item: dict[str, Any]) -> bool:
        """Keeps what a record needs of an item, within the answer's budget; False once that is spent."""
        if item.get("type") == "function_call" and not self.budget.take_call():
            return False
        kept = _kept(item)
        if kept is item and not self.budget.take("reasoning item", len(jsoncodec.dumps(item))):
            return False
        self._items[index] = kept
        return True

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        groups: list[tuple[dict[str, Any], list[ToolCallRef], list[str]]] = []
        for index in sorted(self._items):
            item = self._items[index]
            if _reasoning_id(item) is not None:
                groups.append((item, [], []))
            elif not groups or not is_model_output(item):
                continue
            elif item.get("type") == "function_call":
                call = _tool_call_ref(item)
                if call is not None:
                    groups[-1][1].append(call)
            elif _string(item.get("id")):
                groups[-1][2].append(item["id"])
        return [
            ReasoningRecord(
                wire_format=NAME,
                fields=dict(reasoning),
                tool_calls=calls,
                extra_keys=extra_keys,
                response_id=self.response_id,
                response_model=self.response_model,
                complete=complete,
            )
            for reasoning, calls, extra_keys in groups
        ]


def _server_holds_history(doc: dict[str, Any]) -> bool:
    """With a stored chain the server already has every earlier item; re-sending one is a duplicate."""
    return doc.get("previous_response_id") not in (None, "") or doc.get("conversation") not in (None, "")


def _found(item: Any, cache: CacheView) -> tuple[ReasoningRecord, str | None, Literal["id", "fingerprint"]] | None:
    """The cached reasoning a model-output item of the request was produced with, the call id and the match."""
    if not is_model_output(item):
        return None
    item_id = _string(item.get("id"))
    if item.get("type") == "function_call":
        hit = cache.call(*_call_parts(item))
        if hit is None and item_id is not None:
            hit = cache.call(item_id, None, None)
        return (hit.record, hit.call.id, hit.via) if hit is not None else None
    record = cache.record(item_id) if item_id is not None else None
    return (record, None, "id") if record is not None else None


def _cached_reasoning(record: ReasoningRecord) -> str | None:
    """The rs_ id of a record that holds a whole reasoning item."""
    return _reasoning_id(record.fields)


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
    if first > 0 and _is_reasoning(items[first - 1]):
        return None if _reasoning_id(items[first - 1]) is None else index
    return first


def orphans(items: list[Any]) -> list[int]:
    """Indexes of reasoning items that nothing the model produced follows (the server refuses them)."""
    found = []
    for index, item in enumerate(items):
        following = items[index + 1] if index + 1 < len(items) else None
        if _reasoning_id(item) is not None and (following is None or is_input_side(following)):
            found.append(index)
    return found


def remove_orphans(items: list[Any]) -> list[RepairAction]:
    """Drops reasoning items that nothing the model produced follows (the server refuses them)."""
    actions = []
    # From the end, so that removing one can expose the reasoning item before it.
    for index in range(len(items) - 1, -1, -1):
        reasoning_id = _reasoning_id(items[index])
        if reasoning_id is None:
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        if following is not None and not is_input_side(following):
            continue
        del items[index]
        actions.append(
            RepairAction(kind="removed", location=f"input[{index}]", index=index, fields=[f"reasoning {reasoning_id}"])
        )
    actions.reverse()
    return actions


def insert_missing(items: list[Any], cache: CacheView) -> list[RepairAction]:
    """Puts each cached reasoning item back before the first run of items it produced, once per rs_ id."""
    present = {reasoning_id for item in items if (reasoning_id := _reasoning_id(item)) is not None}
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
    return _reasoning_id(item) is not None and "summary" not in item and isinstance(item.get("encrypted_content"), str)


def _produced_by(
    items: list[Any], index: int, cache: CacheView
) -> tuple[ReasoningRecord, str | None, Literal["id", "fingerprint"]] | None:
    """The cached record of the reasoning item at `index`, found through the items it produced right after it."""
    reasoning_id = _reasoning_id(items[index])
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


def remove_foreign_items(items: list[Any], foreign: ForeignLookup) -> list[RepairAction]:
    """Drops the reasoning items whose `encrypted_content` another model, deployment, host or account issued: the
    server cannot decrypt them, and takes the conversation without them."""
    sites = [
        (index, item["encrypted_content"])
        for index, item in enumerate(items)
        if _is_reasoning(item) and isinstance(item.get("encrypted_content"), str) and item["encrypted_content"]
    ]
    why = foreign([value for _, value in sites])
    actions = []
    for index, value in reversed(sites):  # from the end, so that indexes before stay valid
        if value not in why:
            continue
        following = items[index + 1] if index + 1 < len(items) else None
        call_id = following.get("call_id") if isinstance(following, dict) else None
        reasoning_id = _reasoning_id(items[index])
        del items[index]
        actions.append(
            RepairAction(
                kind="foreign_removed",
                location=f"input[{index}]",
                index=index,
                fields=[f"reasoning {reasoning_id}" if reasoning_id else "reasoning"],
                tool_call_id=call_id if isinstance(call_id, str) else None,
                reason=why[value],
            )
        )
    actions.reverse()
    return actions


def _reasoning_ids(item: Any) -> list[str]:
    reasoning_id = _reasoning_id(item)
    return [reasoning_id] if reasoning_id is not None else []


class Responses(Routed):
    body_marker = b'"input"'
    name = NAME
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
        if not isinstance(items, list) or _server_holds_history(doc):
            return []
        keys: list[str] = []
        for item in items:
            if not is_model_output(item):
                continue
            item_id = _string(item.get("id"))
            if item.get("type") == "function_call":
                keys += call_lookup_keys(model, *_call_parts(item))
            if item_id is not None:
                keys.append(item_id)
        return list(dict.fromkeys(keys))

    def repair(self, doc: Any, cache: CacheView, context: RepairContext) -> list[RepairAction]:
        items = doc.get("input") if isinstance(doc, dict) else None
        if not isinstance(items, list):
            return []
        actions = remove_orphans(items)
        if not _server_holds_history(doc):
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
                message=f"reasoning item {_reasoning_id(items[index])} is not followed by an item it produced",
            )
            for index in orphans(items)
        ]
        if dialects.reasoning_summary_required(context.host, context.path, context.model or ""):
            violations += [
                Violation(
                    rule=REASONING_SUMMARY_MISSING,
                    location=f"input[{index}]",
                    message=f"reasoning item {_reasoning_id(item)} has its encrypted_content but no summary",
                )
                for index, item in enumerate(items)
                if lacks_summary(item)
            ]
        return violations

    def calls_at(self, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
        item = item_at(doc, self.items_key, index)
        return [_call_parts(item)] if item is not None and item.get("type") == "function_call" else []

    # The repair sends no placeholder for a signature nothing was cached for.
    signature_placeholder = False

    def item_named(self, items: list[Any], index: int | None, position: int | None, ids: list[str]) -> int | None:
        named = item_index(items, ids) if ids else None  # an item or call the error names by id
        if named is not None:
            return named
        return index if index is not None and 0 <= index < len(items) else None


def item_index(items: list[Any], ids: list[str]) -> int | None:
    """The index of the first input item whose id or call_id is one of `ids`."""
    wanted = set(ids)
    for index, item in enumerate(items):
        if isinstance(item, dict) and {item.get("id"), item.get("call_id")} & wanted:
            return index
    return None
