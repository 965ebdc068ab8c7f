"""The capture's reader of a Messages answer: its stream's events sorted by their bytes, the few that matter
assembled (stream.py) without the answer text, and its thinking blocks turned into a ReasoningRecord linked to its
tool_use ids."""

from __future__ import annotations

from typing import Any

from ...shared.limits import Budget
from ...shared.records import ReasoningRecord
from ..base import event_documents
from ..blocks import Block, reasoning_fields, tool_calls, whole_blocks
from ..sse import SSEEvent
from .stream import EVENT_MARKERS, THINKING_TYPES, TOOL_USE, MessagesStream

NAME = "anthropic_messages"
BLOCKS_FIELD = "thinking_blocks"  # the thinking blocks of a turn, in order, as the provider sent them
TEXT_FIELD = "thinking"  # their readable text, for the log only
# The block types of the whole response, only kept when a thinking block follows a non-thinking
# block (interleaved thinking), so that the blocks can be put back where they were.
LAYOUT_FIELD = "thinking_layout"
TEXT_FIELDS = frozenset({TEXT_FIELD})


def thinking_block(block: Block) -> dict[str, Any]:
    """A thinking block as the non-streamed response would hold it: its start, deltas appended, keys in place."""
    whole = dict(block.start)
    for name in ("thinking", "signature"):
        if block.streamed(name):
            whole[name] = block.joined(name, whole.get(name))
    return whole


class AnthropicReader:
    markers: tuple[bytes, ...] | None = None  # no byte string marks every event this reader keeps

    def __init__(self) -> None:
        self.response_id: str | None = None
        self.response_model: str | None = None
        self._ended = False  # message_stop seen, or a whole document read
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()
        self._stream = MessagesStream(keep_text=False, budget=self.budget)

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if self.budget.over is not None or not any(marker in data for marker in EVENT_MARKERS):
            return
        # Dispatch on the data's own "type": with blank lines missing, one SSE event holds many.
        docs = list(event_documents(data))
        self.unreadable += not docs
        for doc in docs:
            if isinstance(doc, dict):
                kind = doc.get("type")
                if kind == "message_start":
                    self._message(doc.get("message"))
                elif kind == "message_stop":
                    self._ended = True
                else:
                    self._stream.event(kind, doc)

    def skippable(self, data: bytes) -> bool:
        return not any(marker in data for marker in EVENT_MARKERS)

    def _message(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if self.response_id is None and isinstance(message.get("id"), str):
            self.response_id = message["id"]
        if self.response_model is None and isinstance(message.get("model"), str):
            self.response_model = message["model"]

    def feed_document(self, doc: Any) -> None:
        if not isinstance(doc, dict):
            return
        self._message(doc)
        self._ended = True
        content = doc.get("content")
        if isinstance(content, list):
            self._stream.document(content)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        ended = complete and self._ended
        blocks = whole_blocks(self._stream.in_order(), ended=ended, reasoning=THINKING_TYPES)
        thinking = [thinking_block(block) for block in blocks if block.kind in THINKING_TYPES]
        if not thinking:
            return []
        fields = reasoning_fields(
            (BLOCKS_FIELD, TEXT_FIELD, LAYOUT_FIELD),
            thinking,
            (b["thinking"] for b in thinking if isinstance(b.get("thinking"), str)),
            [block.kind for block in blocks],
            [b["type"] for b in thinking],
        )
        return [
            ReasoningRecord(
                wire_format=NAME,
                fields=fields,
                tool_calls=tool_calls(blocks, TOOL_USE, ended=ended, id_key="id", arguments="partial_json"),
                response_id=self.response_id,
                response_model=self.response_model,
                complete=complete,
            )
        ]
