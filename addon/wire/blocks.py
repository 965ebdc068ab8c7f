"""An answer's content blocks as its stream builds them: what Anthropic's Messages stream and Bedrock's
ConverseStream share.

Both number an answer's content blocks and send each as a start, deltas that add pieces of its fields, and a stop.
Each format's stream assembler (`addon/wire/<format>/stream.py`, a `BlockStream`) reads its own events into
`Block`s, and both readings of an answer build on it, as `keep_text` says:

- off, the capture's: only what a repair gives back and where it sat (reasoning with its signature, tool calls' ids,
  names and arguments, each block's kind); answer text is neither held nor, where the format's byte markers tell
  its events apart, even parsed. What it holds goes through the answer's `Budget`, the bounds of what is stored:
  past one the answer is read on but not cached, and the budget says which bound.
- on, the transcript's: everything that arrived, text too, for people to read, within the `AnswerLimits` of the
  answer's assembly (MAX_ASSEMBLED_CHARS of text in all, MAX_CONTENT_BLOCKS block indexes).

The capture's reader (`reader.py`) turns the blocks into a ReasoningRecord with the helpers at the end of this module;
the transcript's assembler (`transcript.py`) turns them into an Answer's message (`BlockStream.message`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable
from typing import Any, ClassVar

from ..shared import jsoncodec
from ..shared.limits import MAX_CONTENT_BLOCKS, Budget, Parts
from ..shared.records import ToolCallRef, canonical_arguments
from .assembly import AnswerLimits
from .conversation import Message, Part

# What an open block costs the capture's budget whatever it holds: an answer of countless empty blocks is bounded too.
BLOCK_COST = 1024


class Kept:
    """A text that arrives in pieces, kept within the answer's AnswerLimits and joined once (the transcript's
    counterpart of `Parts`)."""

    __slots__ = ("pieces", "limits")

    def __init__(self, limits: AnswerLimits) -> None:
        self.pieces: list[str] = []
        self.limits = limits

    def append(self, piece: str) -> None:
        self.limits.add(self.pieces, piece)


class Block:
    """One content block of an answer as its events build it."""

    __slots__ = ("kind", "start", "pieces", "stopped", "whole", "citations")

    def __init__(self, kind: str | None, start: Any = None, *, stopped: bool = False, whole: Any = None) -> None:
        self.kind = kind  # what the block is, as the format tells it (Anthropic's `type`, Converse's member)
        self.start = start  # what its start gave of it (Anthropic's content_block, Converse's toolUse)
        # Each field's streamed pieces, by the field's name, in the order the fields first came.
        self.pieces: dict[str, Parts | Kept] = {}
        self.stopped = stopped  # its stop seen, or it came whole
        self.whole = whole  # the block as a whole answer gave it, where a format keeps that as it came
        self.citations: list[Any] | None = None  # Anthropic's citations_delta, for the transcript

    def streamed(self, name: str) -> list[str]:
        """The pieces of field `name` kept so far."""
        held = self.pieces.get(name)
        return held.pieces if held is not None else []

    def joined(self, name: str, first: Any = None) -> str:
        """Field `name` whole: `first` (what the block's start held of it, when a string) and its pieces joined."""
        return jsoncodec.join_text([first if isinstance(first, str) else "", *self.streamed(name)])


def in_bounds(index: Any) -> bool:
    """Whether a block index is one the transcript takes: a whole number below MAX_CONTENT_BLOCKS, so that a hostile
    index allocates nothing."""
    return isinstance(index, int) and not isinstance(index, bool) and 0 <= index < MAX_CONTENT_BLOCKS


class BlockStream:
    """The content blocks of one answer by index, as a format's events (or its whole body) build them.

    `keep_text` off is the capture's reading, held within `budget`; on, the transcript's, within `kept`. A format's
    subclass reads its events into `blocks` through `opens`, `add` and `refuse_index`, which hold them within those
    bounds.
    """

    __slots__ = ("blocks", "keep_text", "budget", "kept")
    # Each field's name in a budget's message ("its thinking is over the 4 MiB limit per stored value").
    field_names: ClassVar[dict[str, str]] = {}

    def __init__(self, *, keep_text: bool, budget: Budget | None = None, kept: AnswerLimits | None = None) -> None:
        if keep_text != (kept is not None):
            raise ValueError("keep_text reads within an AnswerLimits (kept=), without it within a Budget (budget=)")
        self.blocks: dict[int, Block] = {}
        self.keep_text = keep_text
        self.budget = budget if budget is not None else Budget()
        self.kept = kept

    def add(self, block: Block, name: str, piece: str) -> None:
        """One more piece of a block's field, kept within the bounds of the reading."""
        held = block.pieces.get(name)
        if held is None:
            held = block.pieces[name] = (
                Kept(self.kept) if self.kept is not None else Parts(self.field_names.get(name, name), self.budget)
            )
        held.append(piece)

    def opens(self, *, call: bool, what: str = "content block", size: int = BLOCK_COST) -> bool:
        """Whether one more block may be held: in the capture, a tool call counts as one of the answer's calls, any
        other block as `size` bytes of `what`; the transcript bounds blocks by their index alone."""
        if self.kept is not None:
            return True
        return self.budget.take_call() if call else self.budget.take(what, size)

    def refuse_index(self, index: int) -> bool:
        """Whether a capture takes a block index: past MAX_CONTENT_BLOCKS the answer is read on but not cached."""
        if 0 <= index < MAX_CONTENT_BLOCKS:
            return True
        self.budget.refuse(f"it has a content block index outside 0 to {MAX_CONTENT_BLOCKS - 1}")
        return False

    def indexed(self) -> list[tuple[int, Block]]:
        """The blocks with their indexes, in order."""
        return sorted(self.blocks.items(), key=_first)

    def in_order(self) -> list[Block]:
        return [block for _, block in self.indexed()]

    # The transcript's reading ------------------------------------------------------------------------------------

    def message(self, role: str, where: str, content: str, parts_of: Callable[[Block, str], list[Part]]) -> Message:
        """The answer's message as people read it: each block's parts (`parts_of(block, "<content>[index]")`), in
        order, then what the assembly left out past its bounds."""
        parts = [part for index, block in self.indexed() for part in parts_of(block, f"{content}[{index}]")]
        note = self.kept.note() if self.kept is not None else None
        if note is not None:
            parts.append(note)
        return Message(role, parts, where)


def _first(item: tuple[int, Block]) -> int:
    return item[0]


# The capture's reading: blocks into the fields of a ReasoningRecord ------------------------------------------------


def whole_blocks(blocks: Iterable[Block], *, ended: bool, reasoning: Container[str]) -> list[Block]:
    """The blocks a capture keeps: unless the answer ended, only reasoning blocks that ended are whole (one cut before
    its stop may lack its signature; an error event can end a stream early)."""
    return [block for block in blocks if ended or block.stopped or block.kind not in reasoning]


def call_ref(use: Any, id_key: str, arguments: list[str], *, whole: bool) -> ToolCallRef | None:
    """The tool call a block made (`use`: its start, with the call's id under `id_key`, its name and any input;
    `arguments`: the input's streamed pieces); by its id alone when the input may be cut short."""
    call_id = use.get(id_key) if isinstance(use, dict) else None
    if not isinstance(call_id, str) or not call_id:
        return None
    name = use.get("name")
    if not isinstance(name, str) or not whole:
        # Input cut short: the id still links the call, a name+input fingerprint would be wrong.
        return ToolCallRef(id=call_id)
    streamed = jsoncodec.join_text(arguments)
    return ToolCallRef(id=call_id, name=name, arguments=canonical_arguments(streamed or use.get("input", {})))


def tool_calls(blocks: Iterable[Block], kind: str, *, ended: bool, id_key: str, arguments: str) -> list[ToolCallRef]:
    """The tool calls of the blocks of `kind`, each whole once its block stopped or the answer ended."""
    return [
        call
        for block in blocks
        if block.kind == kind
        for call in [call_ref(block.start, id_key, block.streamed(arguments), whole=ended or block.stopped)]
        if call is not None
    ]


def reasoning_fields(
    names: tuple[str, str, str], reasoning: list[Any], texts: Iterable[str], layout: list[str], leading: list[str]
) -> dict[str, Any]:
    """A record's fields (`names`: those of the blocks, their text and the layout): the reasoning blocks as the
    provider sent them, their readable text (for the log only), and the kinds of all the answer's blocks where the
    reasoning does not simply lead (`leading`: its blocks' kinds), so that a repair puts it back where it was."""
    blocks_field, text_field, layout_field = names
    fields: dict[str, Any] = {blocks_field: reasoning}
    text = "\n\n".join(piece for piece in texts if piece)
    if text:
        fields[text_field] = text
    if layout[: len(reasoning)] != leading:
        fields[layout_field] = layout
    return fields
