"""What a repair did to a request, or would have done with repair off: the repair makes it, and the explainer reads
it when the provider refuses the request. Its own module, so that both (and the runtime that keeps plans between a
request and its answer) can import it."""

from __future__ import annotations

from dataclasses import dataclass, field

from .formats import CacheView, RepairContext
from .records import RepairAction

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

    def cache_entries(self) -> list[UsedEntry]:
        """The cache entries the repair inserted state from: what to drop if the provider refuses it."""
        used = {action.response_id for action in self.actions if action.kind in INSERTING}
        return [
            UsedEntry(r.response_id, r.keys(), r.fields.get("id") if isinstance(r.fields.get("id"), str) else None)
            for r in self.cache.used
            if r.response_id in used
        ]
