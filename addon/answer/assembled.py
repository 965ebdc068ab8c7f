"""A format's reader and its transcriber's assembler, fed the same answer: the capture gets its reasoning records,
and the traces and metrics the answer as a person reads it (its model, id, usage, why it stopped, and when asked
for, what it said)."""

from __future__ import annotations

from typing import Any

from ..shared.limits import Budget
from ..shared.records import ReasoningRecord
from ..wire import ResponseReader
from ..wire.assembly import AnswerAssembler
from ..wire.conversation import Answer
from ..wire.sse import SSEEvent


class ReadingAndAssembling:
    """Takes a ResponseReader's place in the tap.

    With `summary_markers` (the transcriber's), the assembler is given only the stream events that hold one: the
    answer's model, id, usage and stop reason, none of its text, and the reader still passes over the rest unparsed.
    Without, every event goes to both and none is passed over: what it costs is why the whole answer is assembled
    only when its content is asked for (llm_otel_content)."""

    def __init__(
        self, reader: ResponseReader, assembler: AnswerAssembler, summary_markers: tuple[bytes, ...] | None = None
    ) -> None:
        self.reader = reader
        self.assembler = assembler
        self.summary_markers = summary_markers

    @property
    def markers(self) -> tuple[bytes, ...] | None:
        wanted, summary = self.reader.markers, self.summary_markers
        return None if wanted is None or summary is None else wanted + summary

    @property
    def budget(self) -> Budget:
        return self.reader.budget

    @property
    def unreadable(self) -> int:
        return self.reader.unreadable

    def _summary(self, data: bytes) -> bool:
        summary = self.summary_markers
        return summary is None or any(marker in data for marker in summary)

    def skippable(self, data: bytes) -> bool:
        return self.summary_markers is not None and self.reader.skippable(data) and not self._summary(data)

    def feed_event(self, event: SSEEvent) -> None:
        self.reader.feed_event(event)
        if self._summary(event.data):
            self.assembler.feed_event(event)

    def feed_document(self, doc: Any) -> None:
        self.reader.feed_document(doc)
        self.assembler.feed_document(doc)  # parsed once: the assembler walks what the reader was given

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        return self.reader.records(complete=complete)

    def answer(self) -> Answer:
        return self.assembler.finish()
