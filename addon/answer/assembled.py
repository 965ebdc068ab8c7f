"""A format's reader and its transcriber's assembler, fed the same answer: the capture gets its reasoning records,
and the traces and metrics the answer as a person reads it (its model, id, usage, why it stopped, and when asked
for, what it said)."""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable
from typing import Any

from ..shared.limits import Budget
from ..shared.records import ReasoningRecord
from ..wire import ResponseReader
from ..wire.assembly import AnswerAssembler
from ..wire.conversation import Answer
from ..wire.sse import SSEEvent


@functools.lru_cache(maxsize=16)
def _search(markers: tuple[bytes, ...]) -> Callable[[bytes], re.Match[bytes] | None]:
    """One search for all of a transcriber's markers (five transcribers: a few entries)."""
    return re.compile(b"|".join(map(re.escape, markers))).search


SUMMARY_EVENTS = 4  # Anthropic's and Bedrock's summaries are two events, chat's a stop and a usage chunk per choice


class ReadingAndAssembling:
    """Takes a ResponseReader's place in the tap.

    With `summary_markers` (the transcriber's), the assembler is given only the last SUMMARY_EVENTS stream events
    that hold one, once the answer ended: the answer's model, id, usage and stop reason (providers send them last, or
    again at the end: Gemini's usage so far is on every chunk), none of its text; the reader still passes over the
    rest unparsed.
    Without, every event goes to both and none is passed over: what it costs is why the whole answer is assembled
    only when its content is asked for (llm_otel_content)."""

    def __init__(
        self,
        reader: ResponseReader,
        assembler: Callable[[], AnswerAssembler],
        summary_markers: tuple[bytes, ...] | None = None,
    ) -> None:
        """`assembler` makes the assembler when the first event or document comes for it: this is made on the way
        to a stream's first event, which waits for nothing more than it must."""
        self.reader = reader
        self._make_assembler: Callable[[], AnswerAssembler] | None = assembler
        self._assembler: AnswerAssembler | None = None
        self.summary_markers = summary_markers
        self.problem: str | None = None  # why the assembler was let go of
        self._summaries: deque[SSEEvent] = deque(maxlen=SUMMARY_EVENTS)
        # Every event the reader takes is looked at here too: one search for all the markers, and the reader's method
        # bound once, keep that to a fraction of a microsecond an event.
        self._read = reader.feed_event
        self._find_summary = _search(summary_markers) if summary_markers is not None else None

    @property
    def assembler(self) -> AnswerAssembler | None:
        """The assembler, made when first asked for; None once it failed (`problem` says why)."""
        if self._assembler is None and self._make_assembler is not None:
            self._assembler = self._make_assembler()
        return self._assembler

    @assembler.setter
    def assembler(self, value: AnswerAssembler | None) -> None:
        self._assembler = value
        if value is None:
            self._make_assembler = None

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
        find = self._find_summary
        return find is None or find(data) is not None

    def skippable(self, data: bytes) -> bool:
        return self._find_summary is not None and self.reader.skippable(data) and not self._summary(data)

    def feed_event(self, event: SSEEvent) -> None:
        self._read(event)
        find = self._find_summary
        if find is not None:
            if find(event.data) is not None:
                self._summaries.append(event)  # read at the end: only the last few say the final usage and stop
        elif self.assembler is not None:
            self._assemble(self.assembler.feed_event, event)

    def feed_document(self, doc: Any) -> None:
        self.reader.feed_document(doc)
        if self.assembler is not None:
            self._assemble(self.assembler.feed_document, doc)  # parsed once: it walks what the reader was given

    def _assemble(self, feed: Callable[[Any], None], what: Any) -> None:
        """The assembler never stands in the capture's way: one that fails is let go of, the reader reads on."""
        try:
            feed(what)
        except Exception as e:
            self.assembler, self.problem = None, f"{type(e).__name__}: {e}"

    def records(self, *, complete: bool) -> list[ReasoningRecord]:
        return self.reader.records(complete=complete)

    def answer(self) -> Answer | None:
        summaries, self._summaries = self._summaries, deque()
        for event in summaries:
            if self.assembler is not None:
                self._assemble(self.assembler.feed_event, event)
        if self.assembler is None:
            return None
        try:
            return self.assembler.finish()
        except Exception as e:
            self.assembler, self.problem = None, f"{type(e).__name__}: {e}"
            return None
