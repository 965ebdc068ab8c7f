"""A format's reader and its transcriber's assembler, fed the same answer: the capture gets its reasoning records,
and the traces and metrics the answer as a person reads it (its model, usage, why it stopped, what it said)."""

from __future__ import annotations

from typing import Any

from ..shared.limits import Budget
from ..shared.records import ReasoningRecord
from ..wire import ResponseReader
from ..wire.assembly import AnswerAssembler
from ..wire.conversation import Answer
from ..wire.sse import SSEEvent


class ReadingAndAssembling:
    """Takes a ResponseReader's place in the tap. Every event goes to both, so none is passed over unparsed: the
    reading costs more than the reader's alone, which is why it is made only when something asked for answers."""

    markers = None

    def __init__(self, reader: ResponseReader, assembler: AnswerAssembler) -> None:
        self.reader = reader
        self.assembler = assembler

    @property
    def budget(self) -> Budget:
        return self.reader.budget

    @property
    def unreadable(self) -> int:
        return self.reader.unreadable

    def skippable(self, data: bytes) -> bool:
        return False

    def feed_event(self, event: SSEEvent) -> None:
        self.reader.feed_event(event)
        self.assembler.feed_event(event)

    def feed_document(self, doc: Any) -> None:
        self.reader.feed_document(doc)
        self.assembler.feed_document(doc)

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        return self.reader.records(complete=complete)

    def answer(self) -> Answer:
        return self.assembler.finish()
