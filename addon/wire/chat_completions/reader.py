"""The capture's reader of a chat completion: its stream's chunks sorted by their bytes, the few that matter
assembled (stream.py) without the answer text, and each choice's reasoning turned into a ReasoningRecord."""

from __future__ import annotations

import re
from typing import Any

import orjson

from ...shared import jsoncodec
from ...shared.limits import Budget
from ...shared.records import ReasoningRecord, ToolCallRef
from ..base import event_documents
from ..sse import SSEEvent
from .fields import STREAM_MARKERS, litellm_short_id
from .keep import BudgetKeep
from .stream import ChatStream

NAME = "chat_completions"

# Unpacked for the checks below, which see every chunk: plain `in`/`find` beat a loop or a regex alternation there.
# The dialects' own markers are looked for only in chunks that hold none of the first four.
_REASONING, _TOOL_CALLS, _EXTRA_CONTENT, _THINKING, *_DIALECT_MARKERS = STREAM_MARKERS
# A chunk whose content is a non-empty string: the answer's content begins (or goes on) in it.
_CONTENT_TEXT = re.compile(rb'"content"\s*:\s*"[^"]')


def _interesting(data: bytes) -> bool:
    """Whether a chunk holds anything this reader keeps, judged by its STREAM_MARKERS and only past `"delta"`
    (every kept field is inside the delta). Chunks that hold none carry only answer text and are not parsed."""
    start = data.find(b'"delta"')
    if start < 0:
        return True  # not a delta chunk: let the parser look
    return (
        data.find(_REASONING, start) >= 0
        or data.find(_TOOL_CALLS, start) >= 0
        or data.find(_EXTRA_CONTENT, start) >= 0
        or data.find(_THINKING, start) >= 0
        or any(data.find(marker, start) >= 0 for marker in _DIALECT_MARKERS)
    )


def _marked(data: bytes) -> bool:
    return (
        _REASONING in data
        or _TOOL_CALLS in data
        or _EXTRA_CONTENT in data
        or _THINKING in data
        or any(marker in data for marker in _DIALECT_MARKERS)
    )


# Chunks set aside for a batch parse are parsed early past this, so memory stays bounded.
MAX_PENDING_BYTES = 4 * 1024 * 1024


class ChatCompletionsReader:
    """Reads chat completion chunks. While a stream passes, the chunks that matter are only set aside;
    they are parsed in one batch when the records are asked for, so the stream is never held up by it.

    The content's first text is parsed as it comes, to tell whether the answer starts with a `<think>` block; the
    chunks of such a block are parsed as they come until the answer text after it begins. From then on, and in
    answers without a block, content chunks are passed over unparsed; content arrays that hold Mistral's thinking
    chunks carry the `"thinking"` marker and are set aside as the reasoning fields are."""

    def __init__(self) -> None:
        # The stream's, once it names one: looked at before each event, so kept here as well.
        self.response_id: str | None = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self.unreadable = 0  # events that held no JSON (the capture says so in the log)
        self.budget = Budget()
        self.stream = ChatStream(BudgetKeep(self.budget))  # without the answer text
        # Where the content stands: None before its first text, True while a leading <think> block is read, False
        # once the answer text began (with or without a block before it).
        self._thinking: bool | None = None

    def feed_event(self, event: SSEEvent) -> None:
        data = event.data
        if data == b"[DONE]" or self.budget.over is not None:  # nothing more is kept of an answer over a bound
            return
        if self.response_id is None:  # the first chunk is read at once: the rest is judged by it
            self._parse(data, think=True)
            self._settle()
            return
        if self._thinking is not False and (self._thinking or _CONTENT_TEXT.search(data)):
            self._drain()  # what was set aside comes first
            self._parse(data, think=True)
            self._settle()
            return
        # A chunk of one event was judged whole already; this cheaper test sorts chunks of several.
        if not _marked(data):
            return
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes > MAX_PENDING_BYTES:
            self._drain()

    @property
    def response_model(self) -> str | None:
        return self.stream.response_model

    def _parse(self, data: bytes, think: bool = False) -> None:
        stream = self.stream
        try:
            stream.feed(orjson.loads(data), "delta", think)
        except orjson.JSONDecodeError:
            docs = list(event_documents(data))
            self.unreadable += not docs
            for doc in docs:
                stream.feed(doc, "delta", think)
        self.response_id = stream.response_id

    def _settle(self) -> None:
        """Where the content stands, after chunks were read for a `<think>` block: the stream keeps count of the
        choices that may still be in one, and of those whose content began, so no choice is looked at here."""
        if self.stream.open_blocks:
            self._thinking = True
        elif self.stream.content_begun:
            self._thinking = False

    def _drain(self) -> None:
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        try:
            docs = orjson.loads(b"[" + b",".join(pending) + b"]")  # one parse for the whole batch
        except orjson.JSONDecodeError:
            for data in pending:
                self._parse(data)
            return
        feed = self.stream.feed
        for doc in docs:
            feed(doc, "delta")

    def skippable(self, data: bytes) -> bool:
        return self.response_id is not None and self._thinking is False and not _interesting(data)

    @property
    def markers(self) -> tuple[bytes, ...] | None:
        """What the events this reader keeps contain, once the first event has been read and the content has begun
        (not with a `<think>` block, or after it)."""
        return STREAM_MARKERS if self.response_id is not None and self._thinking is False else None

    def feed_document(self, doc: Any) -> None:
        self.stream.feed(doc, "message", True)
        self.response_id = self.stream.response_id

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        self._drain()
        records = []
        for choice in self.stream.choices.values():
            record = ReasoningRecord(
                wire_format=NAME,
                fields=choice.fields(),
                tool_calls=[
                    ToolCallRef(
                        id=slot.id,
                        name=slot.name,
                        arguments=jsoncodec.join_text(slot.arguments.pieces),
                        aliases=[short] if (short := litellm_short_id(slot.id)) else [],
                        fields=slot.fields,
                    )
                    for slot in choice.calls.values()
                    if slot.id or slot.name
                ],
                response_id=self.stream.response_id,
                response_model=self.stream.response_model,
                complete=complete,
            )
            has_state = record.has_state or any(call.aliases for call in record.tool_calls)
            # A cut stream is only trusted once tool calls began: the reasoning before them is whole.
            if has_state and (complete or record.tool_calls):
                records.append(record)
        return records
