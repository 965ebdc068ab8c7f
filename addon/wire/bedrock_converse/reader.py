"""The capture's reader of a Converse answer: its stream's events, but for the text deltas its bytes tell apart,
assembled (stream.py) without the answer text, and its reasoning blocks turned into a ReasoningRecord linked to its
toolUse ids."""

from __future__ import annotations

from typing import Any

from ...shared import jsoncodec
from ...shared.limits import Budget
from ...shared.records import ReasoningRecord
from ..base import event_documents
from ..blocks import Block, reasoning_fields, tool_calls, whole_blocks
from ..sse import SSEEvent
from .stream import BLOCK_EVENTS, REASONING, TOOL_USE, ConverseStream, text_only

NAME = "bedrock_converse"
BLOCKS_FIELD = "reasoning_blocks"  # the reasoningContent blocks of a turn, in order, as the provider sent them
TEXT_FIELD = "reasoning_text"  # their readable text, for the log only
# The kinds of the answer's blocks, only kept when a reasoning block follows another kind of block (interleaved
# thinking), so that the blocks can be put back where they were.
LAYOUT_FIELD = "reasoning_layout"


def reasoning_text(block: dict[str, Any]) -> str:
    reasoning = block.get(REASONING)
    text = reasoning.get("reasoningText") if isinstance(reasoning, dict) else None
    value = text.get("text") if isinstance(text, dict) else None
    return value if isinstance(value, str) else ""


def reasoning_block(block: Block) -> dict[str, Any]:
    """A reasoning block as the non-streamed answer would hold it."""
    if block.whole is not None:
        return block.whole
    redacted = block.streamed("redactedContent")
    if redacted:
        return {REASONING: {"redactedContent": jsoncodec.join_text(redacted)}}
    text: dict[str, Any] = {"text": jsoncodec.join_text(block.streamed("reasoning"))}
    signature = block.streamed("signature")
    if signature:
        text["signature"] = jsoncodec.join_text(signature)
    return {REASONING: {"reasoningText": text}}


class ConverseReader:
    markers: tuple[bytes, ...] | None = None  # the event type, which stops carry alone, is not in the data

    def __init__(self) -> None:
        self._ended = False  # messageStop seen, or a whole document read
        self.unreadable = 0
        self.budget = Budget()
        self._stream = ConverseStream(keep_text=False, budget=self.budget)

    skippable = staticmethod(text_only)  # called on every event of a stream: the function itself, not a wrapper

    def feed_event(self, event: SSEEvent) -> None:
        if self.budget.over is not None:
            return
        docs = list(event_documents(event.data))
        self.unreadable += not docs
        for doc in docs:
            if isinstance(doc, dict):
                if event.event == "messageStop":
                    self._ended = True
                elif event.event in BLOCK_EVENTS:
                    self._stream.event(event.event, doc)

    def feed_document(self, doc: Any) -> None:
        output = doc.get("output") if isinstance(doc, dict) else None
        message = output.get("message") if isinstance(output, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        self._ended = True
        if isinstance(content, list):
            self._stream.document(content)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        ended = complete and self._ended
        indexed = self._stream.indexed()
        kept = whole_blocks((block for _, block in indexed), ended=ended, reasoning=(REASONING,))
        reasoning = [reasoning_block(block) for block in kept if block.kind == REASONING]
        if not reasoning:
            return []
        # Blocks the reader did not keep (answer text) sit at the indexes between the ones it did (all below
        # MAX_CONTENT_BLOCKS).
        layout: list[str] = []
        for index, block in indexed:
            layout += ["text"] * (index - len(layout))
            layout.append(block.kind)
        fields = reasoning_fields(
            (BLOCKS_FIELD, TEXT_FIELD, LAYOUT_FIELD),
            reasoning,
            (reasoning_text(block) for block in reasoning),
            layout,
            [REASONING] * len(reasoning),
        )
        calls = tool_calls(kept, TOOL_USE, ended=ended, id_key="toolUseId", arguments="input")
        return [ReasoningRecord(wire_format=NAME, fields=fields, tool_calls=calls, complete=complete)]
