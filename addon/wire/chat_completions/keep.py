"""What one assembly of a chat completion may hold (stream.py), and what happens past it.

The capture holds an answer's reasoning state within its `Budget` (bytes; the first bound met stops it, and the
answer is not cached). The transcript holds an answer for people to read within its `AnswerLimits` (characters;
past a bound the rest is counted, not kept, and the transcript says how much). The assembly asks its `Keep` at each
point where it would hold more: a text piece, a value sent whole, a new choice, tool call or `reasoning_details`
entry, a Mistral thinking chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...shared import jsoncodec
from ...shared.limits import MAX_CHOICES, MAX_CONTENT_BLOCKS, MAX_TOOL_CALLS, Budget, Parts, utf8_size
from .. import assembly
from ..assembly import AnswerLimits

# The strings of a `reasoning_details` fragment a transcript shows.
_DETAIL_TEXTS = ("text", "summary", "signature", "data")
# What a streamed thinking chunk costs the capture's budget whatever its text.
THINKING_CHUNK_COST = 1024


class Text(Protocol):
    """A text that arrives in pieces, joined once at the end."""

    pieces: list[str]

    def append(self, piece: str) -> None: ...


class Keep(Protocol):
    # True: past a bound nothing more of the answer is kept, so the assembly stops reading the document at hand;
    # False: what is past a bound is left out and counted, and the assembly goes on.
    stops: bool
    # The size of a `reasoning_details` fragment, in the unit `take` counts.
    measure: Callable[[dict[str, Any]], int]

    def text(self, what: str) -> Text:
        """A new text for pieces of `what`."""
        ...

    def take(self, what: str, size: int, held: int = 0) -> bool:
        """Whether `size` more of `what` (which holds `held` already) may be kept."""
        ...

    def value(self, what: str, value: Any) -> bool:
        """Whether a value sent whole (not null) may be kept."""
        ...

    def choice(self, held: int) -> bool:
        """Whether one more choice may be kept, past the `held` kept."""
        ...

    def call(self, held: int) -> bool:
        """Whether one more tool call may be kept, past the `held` its choice holds."""
        ...

    def detail(self, held: int) -> bool:
        """Whether one more `reasoning_details` entry may be kept, past the `held` its choice holds."""
        ...

    def thinking_chunk(self) -> bool:
        """Whether one more streamed Mistral thinking chunk may be kept."""
        ...


class BudgetKeep:
    """The capture's: within one answer's Budget, in bytes; the first bound met stops it."""

    __slots__ = ("budget",)
    stops = True

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget if budget is not None else Budget()

    def text(self, what: str) -> Parts:
        return Parts(what, self.budget)

    @staticmethod
    def measure(fragment: dict[str, Any]) -> int:
        return sum(utf8_size(value) for value in fragment.values() if isinstance(value, str))  # every string held

    def take(self, what: str, size: int, held: int = 0) -> bool:
        return self.budget.take(what, size, held)

    def value(self, what: str, value: Any) -> bool:
        return value is not None and self.budget.take(what, len(jsoncodec.dumps(value)))

    def choice(self, held: int) -> bool:
        if held < MAX_CHOICES:
            return True
        self.budget.refuse(f"it has more than {MAX_CHOICES} choices")
        return False

    def call(self, held: int) -> bool:
        return self.budget.take_call()  # counted over the whole answer, by the budget

    def detail(self, held: int) -> bool:
        return True  # bounded by their bytes

    def thinking_chunk(self) -> bool:
        return self.budget.take("thinking chunk", THINKING_CHUNK_COST)  # countless empty chunks are bounded too


class Pieces:
    """A text of the transcript's, within its AnswerLimits: a piece past MAX_ASSEMBLED_CHARS is counted, not kept."""

    __slots__ = ("limits", "pieces")

    def __init__(self, limits: AnswerLimits) -> None:
        self.limits = limits
        self.pieces: list[str] = []

    def append(self, piece: str) -> None:
        self.limits.add(self.pieces, piece)


class AnswerKeep:
    """The transcript's: within the answer's AnswerLimits, in characters; past a bound the rest is counted."""

    __slots__ = ("limits",)
    stops = False

    def __init__(self, limits: AnswerLimits) -> None:
        self.limits = limits

    def text(self, what: str) -> Pieces:
        return Pieces(self.limits)

    @staticmethod
    def measure(fragment: dict[str, Any]) -> int:
        return sum(len(value) for key in _DETAIL_TEXTS if isinstance(value := fragment.get(key), str))  # text shown

    def take(self, what: str, size: int, held: int = 0) -> bool:
        limits = self.limits
        if limits.kept + size <= assembly.MAX_ASSEMBLED_CHARS:
            limits.kept += size
            return True
        limits.dropped += size
        return False

    def value(self, what: str, value: Any) -> bool:
        return value is not None

    def choice(self, held: int) -> bool:
        return self._entry(held, MAX_CHOICES)

    def call(self, held: int) -> bool:
        return self._entry(held, MAX_TOOL_CALLS)

    def detail(self, held: int) -> bool:
        return self._entry(held, MAX_CONTENT_BLOCKS)

    def thinking_chunk(self) -> bool:
        return True  # their text counts

    def _entry(self, held: int, limit: int) -> bool:
        if held < limit:
            return True
        self.limits.entries_left_out += 1
        return False
