"""An Anthropic Messages answer's content blocks, from its stream events or its whole body: the one assembly that
the capture (`format.py`) and the transcript (`transcript.py`) both read an answer with.

A stream is `message_start` (model, usage so far), then per block `content_block_start` (its type and first
fields), `content_block_delta`s (`text_delta`, `thinking_delta`, `signature_delta`, `input_json_delta`,
`citations_delta`) and `content_block_stop`, then `message_delta` (stop reason, final usage) and `message_stop`;
an `error` event can end it early. Bedrock's InvokeModelWithResponseStream carries the same events inside its
`chunk` frames. The message's own events are for its readers; `MessagesStream` reads the blocks' (addon/wire/blocks.py
says what `keep_text` keeps).
"""

from __future__ import annotations

from typing import Any

from ...shared import jsoncodec
from ...shared.limits import Budget
from ..assembly import AnswerLimits
from ..blocks import Block, BlockStream, in_bounds

THINKING_TYPES = ("thinking", "redacted_thinking")
TOOL_USE = "tool_use"
# The blocks a capture keeps as the provider built them; of any other it keeps only where it sits.
_KEPT_WHOLE = (*THINKING_TYPES, TOOL_USE)
START, DELTA, STOP = "content_block_start", "content_block_delta", "content_block_stop"
MAX_CITATIONS = 256  # citations the transcript keeps per block; past it they are counted

# An event can matter to a capture only if its data holds one of these; `text_delta` events, the bulk of a stream,
# hold none of them unless their text does (then they are parsed, and their text not held).
EVENT_MARKERS = (
    b'"message_start"',
    b'"content_block_start"',
    b'"thinking',  # "thinking" blocks and "thinking_delta"
    b'"signature_delta"',
    b'"input_json_delta"',
    b'"content_block_stop"',
    b'"message_stop"',
)

# A delta's type -> the field of the block it adds to, and the block type it implies when no start came.
_DELTAS = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "thinking"),
    "input_json_delta": ("partial_json", TOOL_USE),
}
_STATE_DELTAS = {kind: found for kind, found in _DELTAS.items() if kind != "text_delta"}


class MessagesStream(BlockStream):
    """The content blocks of one Messages answer, by index.

    With `keep_text` off (the capture), a block is kept only from its start on, as the start gave it when it is a
    thinking, redacted_thinking or tool_use block and as its type alone otherwise, and its text deltas are not held;
    each block counts against the budget as it opens (a tool call as one of the answer's calls, a redacted_thinking
    block by its size), which bounds how many there are whatever their indexes. With it on (the transcript), a block
    is kept as it came, with its text and citations, even without its start (as the type its delta implies) or with
    a start that is no object; its index must be below MAX_CONTENT_BLOCKS.
    """

    __slots__ = ("_deltas",)
    field_names = {"thinking": "thinking", "signature": "signature", "partial_json": "tool call arguments"}

    def __init__(self, *, keep_text: bool, budget: Budget | None = None, kept: AnswerLimits | None = None) -> None:
        super().__init__(keep_text=keep_text, budget=budget, kept=kept)
        self._deltas = _DELTAS if self.keep_text else _STATE_DELTAS

    def event(self, kind: Any, doc: dict[str, Any]) -> None:
        """One event of the answer's stream (`kind`: its `type`); all but the blocks' events are left to the
        reader."""
        index = doc.get("index")
        if not isinstance(index, int) or (self.keep_text and not in_bounds(index)):
            return
        if kind == START:
            self._start(index, doc.get("content_block"))
            return
        block = self.blocks.get(index)
        if kind == STOP:
            if block is not None:
                block.stopped = True
            return
        delta = doc.get("delta")
        if kind != DELTA or not isinstance(delta, dict):
            return
        delta_type = delta.get("type")
        found = self._deltas.get(delta_type) if isinstance(delta_type, str) else None
        if found is None:
            if delta_type == "citations_delta" and self.keep_text:
                self._citation(index, block, delta.get("citation"))
            return
        name, implied = found
        piece = delta.get(name)
        if not isinstance(piece, str):
            return
        if block is None:
            if not self.keep_text:  # a capture keeps a block from its start on
                return
            block = self.blocks[index] = Block(implied, {"type": implied})  # the start never came (or was cut)
        self.add(block, name, piece)

    def document(self, content: list[Any]) -> None:
        """The blocks of a whole answer's `content` (the capture's reading: the transcript shows a whole answer's
        content as it is, with nothing to assemble)."""
        for index, block in enumerate(content):
            if isinstance(block, dict):
                self._open(index, block, stopped=True)

    def _start(self, index: int, start: Any) -> None:
        if isinstance(start, dict):
            self._open(index, start)
        elif self.keep_text:
            self.blocks[index] = Block(None, {"type": None, "value": start})

    def _open(self, index: int, start: dict[str, Any], *, stopped: bool = False) -> None:
        kind = start.get("type")
        if not self.keep_text:
            if index not in self.blocks and not self._opens(kind, start):
                return
            if kind not in _KEPT_WHOLE:
                start = {"type": kind}  # an answer's text is not needed, only where the block sits
        self.blocks[index] = Block(kind if isinstance(kind, str) else "", start, stopped=stopped)

    def _opens(self, kind: Any, start: dict[str, Any]) -> bool:
        if kind == TOOL_USE:
            return self.opens(call=True)
        if kind == "redacted_thinking":
            return self.opens(call=False, what="redacted_thinking", size=len(jsoncodec.dumps(start)))
        return self.opens(call=False)

    def _citation(self, index: int, block: Block | None, citation: Any) -> None:
        if block is None:
            block = self.blocks[index] = Block("text", {"type": "text", "text": ""})
        if block.citations is None:
            block.citations = []
        if len(block.citations) < MAX_CITATIONS:
            block.citations.append(citation)
