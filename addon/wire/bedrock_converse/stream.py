"""A Bedrock Converse answer's content blocks, from its ConverseStream events or its whole body: the one assembly that
the capture (`format.py`) and the transcript (`transcript.py`) both read an answer with.

ConverseStream sends AWS event-stream frames, each event's type in its `:event-type` header: `messageStart`,
`contentBlockStart` (a tool use's id and name), `contentBlockDelta` (`text`, `reasoningContent` with `text`,
`signature` or `redactedContent`, `toolUse` with a piece of `input`), `contentBlockStop`, `messageStop` (the stop
reason) and `metadata` (usage) (https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStreamOutput.html;
the pydantic-ai cassettes in tests/fixtures/bedrock/ show them). A block is tagged by its one member, not by a
`type`. The message's own events are for its readers; `ConverseStream` reads the blocks' (addon/wire/blocks.py says
what `keep_text` keeps).
"""

from __future__ import annotations

from typing import Any

from ...shared import jsoncodec
from ...shared.limits import Budget
from ..assembly import AnswerLimits
from ..blocks import Block, BlockStream, in_bounds

REASONING = "reasoningContent"
TOOL_USE = "toolUse"
START, DELTA, STOP = "contentBlockStart", "contentBlockDelta", "contentBlockStop"
BLOCK_EVENTS = (START, DELTA, STOP)
# A reasoningContent delta's members -> the fields of the block they add to.
_REASONING_MEMBERS = (("text", "reasoning"), ("signature", "signature"), ("redactedContent", "redactedContent"))


def block_kind(block: Any) -> str | None:
    """A content block's tag: its one key (a Converse block is a union of members, exactly one of them set)."""
    if not isinstance(block, dict) or not block:
        return None
    return next(iter(block))


def text_only(data: bytes) -> bool:
    """Whether an event's data can only be a delta of answer text, which a capture neither parses nor holds: any
    other event matters (starts, stops, the message's stop), and so does a delta of reasoning or of a tool use. The
    text deltas are most of a stream; one whose text names those members is parsed, and its text not held."""
    return b'"delta"' in data and b'"reasoningContent"' not in data and b'"toolUse"' not in data


class ConverseStream(BlockStream):
    """The content blocks of one Converse answer, by index.

    With `keep_text` off (the capture), a block is what its first reasoningContent or toolUse member made it and
    holds only the pieces of that kind (a start's toolUse names the call; a start's reasoning is read as a delta's);
    each block counts against the budget as it opens, and an index past MAX_CONTENT_BLOCKS marks the answer over a
    bound. With it on (the transcript), a block holds every member that came at its index, text too (a start gives
    only its toolUse), and an index past the bound is passed over.
    """

    __slots__ = ()
    field_names = {
        "reasoning": "reasoning text",
        "signature": "signature",
        "redactedContent": "redactedContent",
        "input": "tool input",
    }

    def __init__(self, *, keep_text: bool, budget: Budget | None = None, kept: AnswerLimits | None = None) -> None:
        super().__init__(keep_text=keep_text, budget=budget, kept=kept)

    def event(self, name: str, doc: dict[str, Any]) -> None:
        """One contentBlockStart, contentBlockDelta or contentBlockStop event (`name`: its :event-type)."""
        index = doc.get("contentBlockIndex")
        if self.keep_text:
            if not in_bounds(index):
                return
        elif not isinstance(index, int) or not self.refuse_index(index):
            return
        if name == STOP:
            block = self.blocks.get(index)
            if block is not None:
                block.stopped = True
            return
        start = name == START
        member = doc.get("start" if start else "delta")
        if not isinstance(member, dict):
            return
        use = member.get(TOOL_USE)
        reasoning = member.get(REASONING)
        if self.keep_text:
            block = self.blocks.get(index)
            if block is None:
                block = self.blocks[index] = Block(None)
            if start:
                if isinstance(use, dict):
                    block.start = use
                return
            if isinstance(member.get("text"), str):
                self.add(block, "text", member["text"])
        elif isinstance(use, dict):
            block = self._open(index, TOOL_USE)
            if block is None:
                return
            if start:
                block.start = use
                return
            reasoning = None
        elif isinstance(reasoning, dict):
            block = self._open(index, REASONING)
            if block is None:
                return
        else:
            return
        if isinstance(reasoning, dict):
            for key, field in _REASONING_MEMBERS:
                piece = reasoning.get(key)
                if isinstance(piece, str):
                    self.add(block, field, piece)
        if isinstance(use, dict) and isinstance(use.get("input"), str):
            self.add(block, "input", use["input"])

    def document(self, content: list[Any]) -> None:
        """The reasoning and tool use blocks of a whole answer's content, each as it came (the capture's reading: the
        transcript shows a whole answer's content as it is, with nothing to assemble)."""
        for index, block in enumerate(content):
            kind = block_kind(block)
            if kind not in (REASONING, TOOL_USE) or not isinstance(block[kind], dict):
                continue
            if not self.refuse_index(index):
                return
            size = len(jsoncodec.dumps(block)) if kind == REASONING else 0
            if self.opens(call=kind == TOOL_USE, what=REASONING, size=size):
                self.blocks[index] = Block(kind, block[kind], stopped=True, whole=block)

    def _open(self, index: int, kind: str) -> Block | None:
        block = self.blocks.get(index)
        if block is not None:
            return block if block.kind == kind else None
        if not self.opens(call=kind == TOOL_USE):
            return None
        block = self.blocks[index] = Block(kind)
        return block
