"""Comparing two versions of a conversation: what the proxy sent against what the client sent, and a turn against
the turn before it. The result is the later version with each difference marked, and what it lacks put back in
place, marked too, so that one list shows both.

Messages are paired by role and tool calls (else text), so a message whose reasoning is gone still pairs with the
version that had it; within a pair, parts are compared by their content.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass, field
from difflib import Match, SequenceMatcher
from typing import Any

from ..shared.limits import MAX_ALIGNMENT_STEPS
from ..wire.conversation import Mark, Message, Part


@dataclass(slots=True)
class Changes:
    messages: list[Message]  # the later version, marked, with what it lacks shown in place
    added: int = 0  # parts (or whole messages) the later version has and the earlier lacks
    removed: int = 0
    merged: int = 0
    notes: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.merged)


def compare(
    before: list[Message], after: list[Message], *, added: Mark = "restored", removed: Mark = "removed"
) -> Changes:
    """`after` with its differences from `before` marked: what it adds as `added`, what it lacks as `removed`
    (put back where it was), messages built from several of `before`'s as "merged". Neither list is changed."""
    changes = Changes([])
    opcodes = _opcodes([m.key() for m in before], [m.key() for m in after])
    # A merged message pairs with the part that holds its tool calls; the others it absorbed look deleted.
    absorbed: dict[int, list[Message]] = {}
    for op, b1, b2, a1, _ in opcodes:
        if op == "delete":
            into = next((at for at in (a1, a1 - 1) if 0 <= at < len(after) and _holds(after[at], before[b1:b2])), None)
            if into is not None:
                absorbed.setdefault(into, []).extend(before[b1:b2])
    for op, b1, b2, a1, a2 in opcodes:
        if op == "equal":
            for at, old, new in zip(range(a1, a2), before[b1:b2], after[a1:a2]):
                if old is new:  # one history message read once (MessageMemo): nothing to compare
                    changes.messages.append(new)
                elif at in absorbed:
                    changes.messages.append(_merged(absorbed[at] + [old], new, added, removed, changes))
                else:
                    changes.messages.append(_compare_parts(old, new, added, removed, changes))
        elif op == "insert":
            for new in after[a1:a2]:
                changes.messages.append(_whole(new, added))
                changes.added += 1
        elif op == "delete":
            if not any(m is before[b1] for olds in absorbed.values() for m in olds):
                for old in before[b1:b2]:
                    changes.messages.append(_whole(old, removed))
                    changes.removed += 1
        else:
            _replace(before[b1:b2], after[a1:a2], added, removed, changes)
    return changes


def _opcodes(before: list[Any], after: list[Any]) -> list[tuple[str, int, int, int, int]]:
    """SequenceMatcher's opcodes, with the common start and end (most of a history) paired without it, and what is
    between them paired in order when aligning it would take more than MAX_ALIGNMENT_STEPS."""
    start = 0
    shortest = min(len(before), len(after))
    while start < shortest and before[start] == after[start]:
        start += 1
    end = 0
    while end < shortest - start and before[-1 - end] == after[-1 - end]:
        end += 1
    opcodes = [("equal", 0, start, 0, start)] if start else []
    old, new = before[start : len(before) - end], after[start : len(after) - end]
    if old or new:
        try:
            middle = _BoundedMatcher(old, new, MAX_ALIGNMENT_STEPS).get_opcodes()
        except _TooManySteps:
            middle = [("replace", 0, len(old), 0, len(new))]
        opcodes += [(op, b1 + start, b2 + start, a1 + start, a2 + start) for op, b1, b2, a1, a2 in middle]
    if end:
        opcodes.append(("equal", len(before) - end, len(before), len(after) - end, len(after)))
    return opcodes


class _TooManySteps(Exception):
    """Aligning two versions' messages would take more than its bound: they are paired in order instead."""


class _BoundedMatcher(SequenceMatcher):
    """SequenceMatcher (without junk) that gives up once its matching would take more than `steps`.

    Its find_longest_match looks, for each element of a range of `a`, at every position in `b` of an equal element,
    and get_matching_blocks calls it again on either side of each match it finds: a few thousand alike messages
    (one-word user messages, alternating in one version) make that cubic, minutes for a 0.3 MB capture. Each call
    is charged those positions before it runs (all of them, up to the end of `b`: an upper bound, kept as prefix
    sums over `a` so that charging costs nothing), so the steps it takes in all stay within the bound."""

    def __init__(self, a: list[Any], b: list[Any], steps: int) -> None:
        super().__init__(None, a, b, autojunk=False)
        self.steps_left = steps
        self._charges = [0]
        for element in a:
            self._charges.append(self._charges[-1] + 1 + len(self.b2j.get(element, ())))

    def find_longest_match(self, alo: int = 0, ahi: int | None = None, blo: int = 0, bhi: int | None = None) -> Match:
        ahi = len(self.a) if ahi is None else ahi
        self.steps_left -= 1 + self._charges[ahi] - self._charges[alo]
        if self.steps_left < 0:
            raise _TooManySteps
        return super().find_longest_match(alo, ahi, blo, bhi)


def _holds(message: Message, others: list[Message]) -> bool:
    """Whether `message` holds every part of `others`, all of its role: what a merge of them would be."""
    if any(other.role != message.role for other in others):
        return False
    have = Counter(p.key() for p in message.parts)
    need = Counter(p.key() for other in others for p in other.parts)
    return all(have[key] >= count for key, count in need.items())


def _merged(olds: list[Message], new: Message, added: Mark, removed: Mark, changes: Changes) -> Message:
    olds = sorted(olds, key=lambda m: _position(m.where))
    whole = Message(new.role, [p for m in olds for p in m.parts], new.where)
    merged = _compare_parts(whole, new, added, removed, changes)
    if merged is new:
        merged = copy.copy(new)
    merged.mark = "merged"
    merged.note = "merged from " + ", ".join(m.where for m in olds)
    changes.merged += 1
    return merged


def _position(where: str) -> int:
    digits = where[where.rfind("[") + 1 : -1] if where.endswith("]") else ""
    return int(digits) if digits.isdigit() else -1


def _whole(message: Message, mark: Mark) -> Message:
    marked = copy.copy(message)
    marked.mark = mark
    return marked


def _compare_parts(old: Message, new: Message, added: Mark, removed: Mark, changes: Changes) -> Message:
    if old is new or old.parts == new.parts:
        return new
    old_keys = Counter(p.key() for p in old.parts)
    new_keys = Counter(p.key() for p in new.parts)
    if old_keys == new_keys:
        return new
    marked = copy.copy(new)
    marked.parts = []
    remaining = old_keys.copy()
    for part in new.parts:
        key = part.key()
        if remaining[key] > 0:
            remaining[key] -= 1
            marked.parts.append(part)
        else:
            marked.parts.append(_marked(part, added))
            changes.added += 1
    for part in old.parts:  # what the later version lacks, after what it has
        key = part.key()
        if remaining[key] > 0:
            remaining[key] -= 1
            marked.parts.append(_marked(part, removed))
            changes.removed += 1
    return marked


def _marked(part: Part, mark: Mark) -> Part:
    marked = copy.copy(part)
    marked.mark = mark
    return marked


def _replace(old: list[Message], new: list[Message], added: Mark, removed: Mark, changes: Changes) -> None:
    """A run of messages that changed: merged (fewer messages holding all of the earlier ones' parts), or else
    each paired in order where the roles agree."""
    if len(new) == 1 and len(old) > 1 and all(m.role == new[0].role for m in old):
        changes.messages.append(_merged(old, new[0], added, removed, changes))
        return
    for position in range(max(len(old), len(new))):
        if position < len(old) and position < len(new) and old[position].role == new[position].role:
            changes.messages.append(_compare_parts(old[position], new[position], added, removed, changes))
        else:
            if position < len(old):
                changes.messages.append(_whole(old[position], removed))
                changes.removed += 1
            if position < len(new):
                changes.messages.append(_whole(new[position], added))
                changes.added += 1
