"""Which repairs of a request the event log has not shown yet: each is listed once per conversation, then counted.

A client that drops reasoning state drops it on every turn, so turn N of a conversation needs every repair of turns
1..N-1 again. Listed in full each time, a 400-message session wrote about 65 KB per request, a log growing with the
square of the session's length. The proxy has no conversation id, but histories only grow at their end: the same
value put back at the same place, under the same scope, is a repeat. So a repair is known by its scope, kind, the
cached answer and tool call it came from, its fields and its location; a repair that carries neither a tool call nor
a cached answer (`content: []` made null, a merge) is known also by those of the repairs at the same index of the
same request, which tell one conversation's message from another's.

The memory is per process and bounded (`MAX_REMEMBERED_REPAIRS`, least recently seen dropped first). Proxies that
share a cache each list a repair the first time they make it; a proxy restarted in the middle of a conversation
lists its repairs once more.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from ..shared.limits import MAX_REMEMBERED_REPAIRS
from ..shared.records import RepairAction, summarize_actions


@dataclass(slots=True)
class SortedRepairs:
    """The repairs of one request: those new to the log, and how many of each kind were logged on earlier turns."""

    new: list[RepairAction]
    again_by_kind: dict[str, int] = field(default_factory=dict)

    @property
    def again(self) -> int:
        return sum(self.again_by_kind.values())

    @property
    def total(self) -> int:
        return len(self.new) + self.again

    def count_again(self, by_kind: dict[str, int]) -> None:
        """Counts repairs the log listed with an earlier turn of the conversation, which this request was not sorted
        against (addon/request/resume.py reads only a turn's new items)."""
        for kind, count in by_kind.items():
            self.again_by_kind[kind] = self.again_by_kind.get(kind, 0) + count

    def summary(self) -> str:
        """For a person, and as short as the new repairs: "restored … on messages[398] (…); 397 earlier repairs
        again"."""
        again = self.again
        parts = [summarize_actions(self.new)] if self.new else []
        if again:
            parts.append(f"{again} earlier repair{'' if again == 1 else 's'} again")
        return "; ".join(parts)


class RepairMemory:
    """The repairs this process has logged, as 64-bit hashes, the least recently seen forgotten first."""

    def __init__(self, size: int = MAX_REMEMBERED_REPAIRS) -> None:
        self.size = size
        self._seen: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def clear(self) -> None:
        self._seen.clear()

    def sort(self, scope: str, applied: bool, actions: list[RepairAction]) -> SortedRepairs:
        """Splits a request's repairs into those not logged before (remembered from now on) and repeats."""
        anchors: dict[int, tuple[object, ...]] = {}
        for action in actions:
            if action.tool_call_id is not None or action.response_id is not None:
                anchors.setdefault(action.index, (action.tool_call_id, action.response_id))
        seen = self._seen
        result = SortedRepairs([])
        again = result.again_by_kind
        for action in actions:
            tool_call, response = action.tool_call_id, action.response_id
            anchor = anchors.get(action.index) if tool_call is None and response is None else None
            # Python's own hash: salted per process, which is all the memory needs (it is never written down).
            key = hash(
                (scope, applied, action.kind, response, tool_call, tuple(action.fields), action.location, anchor)
            )
            if key in seen:
                seen.move_to_end(key)
                again[action.kind] = again.get(action.kind, 0) + 1
            else:
                seen[key] = None
                result.new.append(action)
        while len(seen) > self.size:
            seen.popitem(last=False)
        return result
