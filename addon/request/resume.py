"""A request read from where the same conversation's last one ended (addon/request/history.py): what the repair hook does
with a turn's new items instead of the whole body, and what it remembers of each request for the next turn."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mitmproxy import http

from ..cache import ReasoningStore
from ..shared import jsoncodec
from ..shared.records import ActionTally, ReasoningRecord, RepairAction
from ..shared.scope import Scope
from ..shared.sizes import action_size, record_size, strings_size
from ..wire import CacheView, WireFormat
from ..wire.base import call_lookup_keys
from .history import (
    HistoryMemory,
    Remembered,
    SentBody,
    continue_body,
    end_of_value,
    list_bounds,
    write_body,
    written_items,
)
from .plans import RepairPlan, plan_repair

# Repairs that take items or values out: their places count the items as the client sent them, which a turn read
# from where the last one ended does not know.
_REMOVING = frozenset({"removed", "foreign_removed"})
# The last items whose tool calls are asked again on the next turn when the cache had nothing for them: the answer
# that made them may have been stored just after the request that carried them was read.
_RECENT_ITEMS = 8


@dataclass(frozen=True, slots=True)
class Reading:
    """How a request is read, the same for each turn of a conversation: what the memory is keyed by."""

    wire_format: WireFormat
    request: http.Request
    scope: Scope
    store: ReasoningStore
    placeholder: str
    by_content: bool
    remove_foreign: bool
    named_account: bool
    recover: bool = False  # llm_recover

    @property
    def key(self) -> Hashable:
        return (
            str(self.scope),
            self.request.path,
            self.wire_format.name,
            self.placeholder,
            self.by_content,
            self.remove_foreign,
            self.named_account,
            self.recover,
        )

    def plan(self, doc: Any, model: str | None, *, restore: bool = True) -> RepairPlan:
        return plan_repair(
            self.wire_format,
            self.request,
            doc,
            model,
            self.store,
            self.placeholder,
            self.scope,
            by_content=self.by_content,
            remove_foreign=self.remove_foreign,
            restore=restore,
            named_account=self.named_account,
            recover=self.recover and restore,
        )


@dataclass
class Outcome:
    """What the repair hook makes of one request."""

    model: str | None
    plan: RepairPlan  # every repair of the request, the earlier turns' included
    sent: bytes | None  # the body to send on, when the repair changed it
    tally: ActionTally  # what the flow comment says of the repairs
    fresh: list[RepairAction]  # the repairs the event log has not been shown by this conversation
    earlier_by_kind: dict[str, int] = field(default_factory=dict)  # the others, which it has
    doc: Any = None  # the parsed body, when it was read whole (written as it always was when `sent` is None)


def _pending(reading: Reading, doc: Any, model: str | None, start: int, plan: RepairPlan) -> list[str]:
    """The keys the cache was asked for the tool calls in items from `start` on and had nothing under."""
    wire_format = reading.wire_format
    asked = set(plan.asked)  # a format asks only for the calls it may repair
    found = plan.cache.found
    pending = []
    for index in range(start, len(doc[wire_format.items_key])):
        for call in wire_format.calls_at(doc, index):
            keys = [key for key in call_lookup_keys(model, *call) if key in asked]
            if keys and not any(key in found for key in keys):
                pending += keys
    return pending


def _found_size(found: Mapping[str, ReasoningRecord]) -> int:
    """The bytes the keys of `found` hold, with their records (each counted once here; one a later turn finds again
    under another key counts again: a bound from above)."""
    records = {id(record): record for record in found.values()}
    return strings_size(found) + sum(map(record_size, records.values()))


def remember_whole(
    memory: HistoryMemory,
    reading: Reading,
    body: bytes,
    doc: Any,
    model: str | None,
    plan: RepairPlan,
    tally: ActionTally,
) -> SentBody | None:
    """Remembers a request read whole; returns the body to send on when the plan changed it (None: the memory could
    not write it, and the caller writes it as it always did)."""
    wire_format = reading.wire_format
    key = wire_format.items_key
    if wire_format.resume is None or not isinstance(doc, dict) or not isinstance(doc.get(key), list):
        return None
    sent = write_body(doc, key) if plan.actions else None
    bounds = list_bounds(body, key)
    if bounds is None or (plan.actions and sent is None):
        return sent
    items = doc[key]
    actions, found, mismatched = plan.actions, dict(plan.cache.found), dict(plan.cache.mismatched)
    used_ids = {record.response_id for record in plan.cache.used}
    unique_ids = {name for item in items for name in wire_format.resume.unique_ids(item)}

    def carried() -> int:
        parsed = bounds.others_size() + sum(map(action_size, actions)) + _found_size(found)
        return parsed + strings_size(used_ids) + strings_size(mismatched) + strings_size(unique_ids)

    memory.remember(
        reading.key,
        Remembered(
            body=body,
            items_end=bounds.items_end,
            tail=body[bounds.close :],
            model=model,
            others={name: value for name, value in doc.items() if name != key},
            window=items[-1:],
            sent_count=len(items),
            sent=sent,
            actions=actions,
            tally=tally,
            found=found,
            used=list(plan.cache.used),
            used_ids=used_ids,
            mismatched=mismatched,
            pending=_pending(reading, doc, model, max(0, len(items) - _RECENT_ITEMS), plan),
            unique_ids=unique_ids,
            uncounted=carried,
        ),
    )
    return sent


def _shifted(action: RepairAction, offset: int, key: str) -> RepairAction | None:
    """An action on the items of a turn read alone, placed in the whole request."""
    place = f"{key}[{action.index}]"
    if not action.location.startswith(place):
        return None
    index = action.index + offset
    return replace(action, index=index, location=f"{key}[{index}]{action.location[len(place) :]}")


def resume(memory: HistoryMemory, reading: Reading, body: bytes) -> Outcome | None:
    """The outcome of a request that continues a remembered one, from its new items alone; None when there is none
    to continue, or the new items could change what the repair does to the earlier ones (then it is read whole)."""
    wire_format = reading.wire_format
    rules = wire_format.resume
    if rules is None:
        return None
    matched = memory.match(reading.key, body)
    if matched is None:
        return None
    entry, added = matched
    try:
        new_items = jsoncodec.loads_exact(b"[" + added + b"]")
    except ValueError:
        return None
    window = entry.window
    if window and not rules.ends_input(window[-1]):
        return None
    if any(rules.opens_turn(item) for item in (*window, *new_items)):
        return None
    if "id_restored" in entry.tally.by_kind:  # tool results of a renamed call anywhere later are renamed too
        return None
    if "recovered" in entry.tally.by_kind:  # sent in another form than the client's (thinking off, say)
        return None
    if entry.pending and reading.store.get_many(str(reading.scope), entry.pending):
        return None  # an answer the earlier turn found nothing for is cached now: read it whole
    key = wire_format.items_key
    doc = dict(entry.others)
    # The window is the matched entry's, which the memory forgot (HistoryMemory.match): the repair may change it
    # in place, and a repair that does is not continued (below).
    doc[key] = [*window, *new_items]
    plan = reading.plan(doc, entry.model)
    # A recovery may change what lies outside the new items (the request's thinking): read it whole. (What the check
    # finds unrecoverable here is not said: it sees only the new items, whose tool results answer calls before them.)
    if any(action.kind == "recovered" for action in plan.actions):
        return None
    if plan.foreign_kept or any(action.index < len(window) or action.kind in _REMOVING for action in plan.actions):
        return None
    if any(captured in entry.found for captured in plan.cache.by_name):
        return None  # a call given by name and arguments what an earlier call has by its own id: read it whole
    items = doc[key]
    unique_ids = [name for item in items[len(window) :] for name in rules.unique_ids(item)]
    if not entry.unique_ids.isdisjoint(unique_ids):
        return None  # the whole request's repair would have found it in place earlier
    entry.unique_ids.update(unique_ids)
    kept = entry.sent_count - len(window)
    fresh = []
    for action in plan.actions:
        placed = _shifted(action, kept, key)
        if placed is None:
            return None
        fresh.append(placed)
    actions = entry.actions + fresh if fresh else entry.actions
    sent = None
    if actions:
        pieces = written_items(items)
        if entry.sent is None or pieces is None:
            return None  # the earlier items were sent as the client wrote them: the whole body is written once
        sent = continue_body(entry.sent, kept, pieces)
    # What the conversation found, used and refused so far goes on in place, not copied a turn: the matched request
    # is forgotten (HistoryMemory.match). An earlier turn's plan, kept to explain an error, then sees later turns'
    # records beside its own; it drops only those its own repairs inserted (RepairPlan.cache_entries).
    found, used, mismatched = entry.found, entry.used, entry.mismatched
    new_found = {key: record for key, record in plan.cache.found.items() if found.get(key) is not record}
    new_mismatched = [key for key in plan.cache.mismatched if key not in mismatched]
    found.update(plan.cache.found)
    mismatched.update(plan.cache.mismatched)
    new_used = []
    for record in plan.cache.used:
        if record.response_id not in entry.used_ids:
            entry.used_ids.add(record.response_id)
            used.append(record)
            new_used.append(record.response_id)

    def added() -> int:
        parsed = sum(map(action_size, fresh)) + _found_size(new_found)
        return parsed + strings_size(unique_ids) + strings_size(new_mismatched) + strings_size(new_used)

    earlier_by_kind = dict(entry.tally.by_kind)  # the tally goes on with this turn's repairs
    tally = entry.tally.add(fresh)
    memory.remember(
        reading.key,
        Remembered(
            body=body,
            items_end=end_of_value(body, len(body) - len(entry.tail)),
            tail=entry.tail,
            model=entry.model,
            others=entry.others,
            window=items[-1:],
            sent_count=kept + len(items),
            sent=sent,
            actions=actions,
            tally=tally,
            found=found,
            used=used,
            used_ids=entry.used_ids,
            mismatched=mismatched,
            pending=_pending(reading, doc, entry.model, len(window), plan),
            unique_ids=entry.unique_ids,
            carried=entry.carried,
            uncounted=added,
        ),
    )
    context = plan.context
    whole = RepairPlan(actions, CacheView(found, entry.model, mismatched, used), context)
    return Outcome(entry.model, whole, sent.data if sent is not None else None, tally, fresh, earlier_by_kind)
