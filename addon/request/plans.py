"""What a repair did to a request, or would have done with repair off: the repair makes it, and the explainer reads
it when the provider refuses the request. Its own module, so that both (and the runtime that keeps plans between a
request and its answer) can import it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from ..answer.provenance import Origin, foreign_lookup
from ..cache import ReasoningStore
from ..shared.headers import listed_values, pretty_host
from ..shared.records import RepairAction, Violation
from ..shared.scope import Scope
from ..wire import CacheView, RepairContext, WireFormat
from ..wire.base import usable_keys

# Actions that put cached state into a request: the ones a provider can refuse the value of.
INSERTING = ("restored", "inserted", "id_restored")


@dataclass(frozen=True, slots=True)
class UsedEntry:
    """A cache entry a repair inserted state from."""

    response_id: str | None
    keys: list[str]  # every key it is stored under
    item: str | None  # the id of the item it holds (a Responses reasoning item), which an error may name


@dataclass
class RepairPlan:
    actions: list[RepairAction]
    cache: CacheView
    context: RepairContext
    # Foreign values that had to stay where they were: the index of each one's item, and a note for a person (see
    # WireFormat.remove_foreign).
    foreign_kept: list[tuple[int, str]] = field(default_factory=list)
    asked: list[str] = field(default_factory=list)  # the cache keys the repair looked up
    # llm_recover: the rules the request still breaks after the repair for which no form the provider accepts is
    # known (it goes as it is, and the provider's error follows).
    unrecovered: list[Violation] = field(default_factory=list)

    def cache_entries(self) -> list[UsedEntry]:
        """The cache entries the repair inserted state from: what to drop if the provider refuses it."""
        used = {action.response_id for action in self.actions if action.kind in INSERTING}
        return [
            UsedEntry(r.response_id, r.keys(), r.fields.get("id") if isinstance(r.fields.get("id"), str) else None)
            for r in self.cache.used
            if r.response_id in used
        ]


def plan_repair(
    wire_format: WireFormat,
    request: http.Request,
    doc: Any,
    model: str | None,
    store: ReasoningStore,
    placeholder: str,
    scope: Scope,
    *,
    by_content: bool = True,
    remove_foreign: bool = False,
    restore: bool = True,
    named_account: bool = False,
    recover: bool = False,
) -> RepairPlan:
    """Repairs a parsed request body in place from the cache, as the proxy does in flight.

    `by_content` allows the name-and-arguments fallback (see `formats.base.usable_keys`); `remove_foreign` first
    takes out the signed values the proxy saw issued for another origin (addon/answer/provenance.py); without `restore`
    that is all it does (a body parsed only for that, which `may_need_repair` said needs nothing). `named_account`:
    the caller's credential names its account (`provenance.Origin.named`). `recover` (llm_recover): where the request
    still breaks a rule of its provider after the repair, it is changed to the closest form the provider accepts
    (`WireFormat.recover`)."""
    scope_name = str(scope)
    betas = listed_values(request.headers, b"anthropic-beta")
    context = RepairContext(
        path=request.path, model=model, host=pretty_host(request), placeholder=placeholder, betas=betas
    )
    removed: list[RepairAction] = []
    kept: list[tuple[int, str]] = []
    if remove_foreign:
        removed, kept = wire_format.remove_foreign(doc, foreign_lookup(store, Origin(scope_name, model, named_account)))
    if not restore:
        return RepairPlan(removed, CacheView({}, model), context, kept)
    keys = usable_keys(wire_format.lookup_keys(doc, model), by_content=by_content)
    cache = CacheView(store.get_many(scope_name, keys) if keys else {}, model)
    # In the order of the places they were made at, as a turn's repairs follow the earlier turns' (request/resume.py).
    repairs = sorted(wire_format.repair(doc, cache, context), key=lambda action: action.index)
    recovered, unrecovered = recover_request(wire_format, doc, context) if recover else ([], [])
    return RepairPlan(removed + repairs + recovered, cache, context, kept, keys, unrecovered)


def recover_request(
    wire_format: WireFormat, doc: Any, context: RepairContext
) -> tuple[list[RepairAction], list[Violation]]:
    """What sending a repaired request in the closest form its provider accepts changed (llm_recover), and the rules
    it still breaks that no such form is known for. The check runs first: most requests break none."""
    violations = wire_format.check(doc, context)
    if not violations:
        return [], []
    actions = wire_format.recover(doc, context, [])
    answered = {action.rule for action in actions}
    return actions, [violation for violation in violations if violation.rule not in answered]
