"""The stream callable that lets a response through untouched while reading a copy.

mitmproxy calls it with each piece of the body as it arrives (still
content-encoded, not aligned to events) and once more with b"" at the end. It
returns every piece as it came, so the client sees the stream as the provider
sent it, byte for byte and without delay.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from ..shared import jsoncodec
from ..shared.limits import MAX_DECODED_BYTES, MAX_HELD_STREAM_BYTES
from ..shared.records import ReasoningRecord
from ..wire import ResponseReader
from ..wire.content_encoding import BoundedDecoder, DecodedTooLarge, Undecodable, UnsupportedEncoding, decode_body
from ..wire.conversation import Answer
from ..wire.event_stream import FrameEvents
from ..wire.sse import SSEParser, looks_like_event_stream

# Stream chunks are read in batches of this many chunks or bytes, whichever comes first.
BACKLOG_CHUNKS = 256
BACKLOG_BYTES = 64 * 1024
# A non-streamed body is read whole at its end; past this size it is not read.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class TapResult:
    """What the tap made of one answer, handed over once when the answer ended."""

    complete: bool  # False: the stream was cut short
    sse: bool  # the answer came as an event stream (SSE, or AWS event-stream frames)
    read: bool  # the copy was read (a 2xx answer): else nothing below but `problem` says anything
    records: tuple[ReasoningRecord, ...] = ()
    over: str | None = None  # the bound the answer met (limits.Budget): it was read to its end, and is not cached
    unreadable: int = 0  # stream events that held no JSON (ResponseReader.unreadable)
    problem: str | None = None  # why the copy could not be read, if it could not
    seconds: float = 0.0  # the time the tap spent reading its copy, off the stream's path or on it
    answer: Answer | None = None  # the answer as a person reads it, when the reader assembled it (ReadingAndAssembling)
    whole_answer: bool = False  # `answer` holds what was said, not only its model, id, usage and stop reason
    first_chunk_at: float | None = None  # when the first piece of the body came (time.time())


class ResponseTap:
    """Reads a copy of one answer as it passes. At the end it hands what it read, as a TapResult, to `on_finish`
    (inside `guard`, which keeps a failure there off the stream); without `on_finish` the caller asks the reader."""

    def __init__(
        self,
        reader: ResponseReader,
        *,
        sse: bool,
        content_encoding: str | None,
        read: bool,
        keep_body: bool,
        on_finish: Callable[[TapResult], None] | None = None,
        guard: Callable[[], AbstractContextManager[object]] = nullcontext,
        defer: bool = False,
        aws_frames: bool = False,  # the stream is AWS event-stream framing (Amazon Bedrock), not SSE
    ) -> None:
        self.reader: ResponseReader | None = reader  # None once the tap finished
        self._sse = sse
        self._read = read
        self._keep_body = keep_body
        self._finished = False
        # With `defer`, the end of the body does not finish the tap: the caller does, by `finish_soon` (see there).
        self._defer = defer
        self.ended = False  # the whole body went through
        self.problem: str | None = None  # why the copy could not be read, if it could not
        self._on_finish = on_finish
        self._guard = guard
        self._encoding = content_encoding
        # One growing buffer, not a list of pieces: joining pieces would hold a big answer twice at the end.
        self._kept: bytearray | None = bytearray() if keep_body or not sse else None
        self._size = 0
        self._decoder: BoundedDecoder | None = None
        self._skippable = reader.skippable
        self._parser: SSEParser | FrameEvents | None = None
        # A 2xx event stream is read; its decoder and parser are made when the reading starts, not on the way to
        # the first event.
        self._reading = read and sse
        self._aws_frames = aws_frames
        self._backlog: list[bytes] = []
        # While the copy is held (up to MAX_HELD_STREAM_BYTES), nothing of it is read until the end.
        self._holding = True
        self._unreadable_frames = 0  # AWS event frames that carried nothing a reader takes
        self._backlog_size = 0
        self.seconds = 0.0  # spent reading: what the proxy's own time on this answer is made of
        self.first_chunk_at: float | None = None

    @property
    def finished(self) -> bool:
        """Whether the answer was read to its end (or its reading given up) and handed over."""
        return self._finished

    @property
    def unread_bytes(self) -> int:
        """The bytes of the stream set aside and not read yet."""
        return sum(map(len, self._backlog))

    def __call__(self, chunk: bytes) -> bytes:
        if not chunk:
            self.ended = True
            if not self._defer:
                self.finish(complete=True)
            return chunk
        if not self._size:
            self.first_chunk_at = time.time()
        self._size += len(chunk)
        if self._kept is not None:
            if self._size <= MAX_DOCUMENT_BYTES:
                self._kept += chunk
            else:
                self._kept = None
                if not self._sse:
                    self._stop(f"response body larger than {MAX_DOCUMENT_BYTES} bytes, not read")
        if self._reading:
            # Set aside and read at the end, once the client has all of it; past the bound, read in batches as it
            # passes: one warm pass over many chunks costs far less than a cold call per chunk between mitmproxy's
            # own work, and the stream is not held up at all.
            self._backlog.append(chunk)
            self._backlog_size += len(chunk)
            if self._holding:
                if self._backlog_size > MAX_HELD_STREAM_BYTES:
                    self._holding = False
                    self._read_backlog()
            elif self._backlog_size >= BACKLOG_BYTES or len(self._backlog) >= BACKLOG_CHUNKS:
                self._read_backlog()
        return chunk

    def _read_backlog(self) -> None:
        started = time.perf_counter()
        try:
            self._read_pending()
        finally:
            self.seconds += time.perf_counter() - started

    def _start_reading(self) -> None:
        if self._parser is not None or not self._reading:
            return
        try:
            # A compressed stream's copy is decoded piece by piece and no further than the bound.
            self._decoder = BoundedDecoder(self._encoding, MAX_DECODED_BYTES)
            self._parser = FrameEvents() if self._aws_frames else SSEParser()
        except UnsupportedEncoding as e:
            self._stop(str(e))
        except Exception as e:  # on the stream's path now: a broken copy must never break the stream
            self._stop(f"stream not readable: {type(e).__name__}: {e}")

    def _read_pending(self) -> None:
        self._start_reading()
        backlog, self._backlog, self._backlog_size = self._backlog, [], 0
        batch: list[bytes] = []
        size = 0
        for chunk in backlog:
            if self._parser is None:  # the copy stopped being read: the rest is let go of
                return
            batch.append(chunk)
            size += len(chunk)
            if size >= BACKLOG_BYTES or len(batch) >= BACKLOG_CHUNKS:
                self._read_batch(b"".join(batch))
                batch.clear()
                size = 0
        if batch:
            self._read_batch(b"".join(batch))

    def _read_batch(self, data: bytes) -> None:
        if self._parser is None:
            return
        try:
            assert self._decoder is not None
            markers = self.reader.markers  # known only once the reader has seen the start of the answer
            for piece in self._decoder.decode(data):
                for event in self._parser.feed(piece, self._skippable, markers):
                    self.reader.feed_event(event)
        except DecodedTooLarge as e:
            self._stop(f"stream copy {e}; the rest of it is not read (the client gets all of it)")
        except Exception as e:  # a broken copy must never break the stream itself
            self._stop(f"stream not readable: {type(e).__name__}: {e}")

    def finish_soon(self) -> None:
        """Finishes a whole answer on the event loop's next turn. Called from the response hook, this is after the
        client has the end of the stream: mitmproxy writes it once the hook returns, in the same step of the loop
        (when no addon's hook waits on anything). Reading what was set aside and storing it then costs the client
        nothing, and asyncio runs the callback before it reads anything new, so the next request still finds the
        cache entry."""
        try:
            asyncio.get_running_loop().call_soon(self.finish)
        except RuntimeError:  # no event loop (a test calling the hooks directly): finish now
            self.finish()

    def take_body(self) -> bytes | None:
        """The raw body as received, when a copy was kept; the tap lets go of it."""
        kept, self._kept = self._kept, None
        return bytes(kept) if kept is not None else None

    def finish(self, *, complete: bool = True) -> None:
        if self._finished:
            return
        self._finished = True
        self._read_backlog()
        started = time.perf_counter()
        try:
            if self._parser is not None and complete:
                assert self._decoder is not None
                for piece in self._decoder.flush():
                    for event in self._parser.feed(piece):
                        self.reader.feed_event(event)
                for event in self._parser.close():
                    self.reader.feed_event(event)
                if isinstance(self._parser, FrameEvents):
                    self._frames_ended(self._parser)
            elif self._read and not self._sse and complete and self._kept is not None:
                raw = self._kept
                if not self._keep_body:
                    self._kept = None  # the parse below is the last use of it
                self._read_document(raw)
                del raw
        except Exception as e:
            self._stop(f"response not readable: {type(e).__name__}: {e}")
        if not self._keep_body:
            self._kept = None
        self.seconds += time.perf_counter() - started
        if self._on_finish is not None:
            with self._guard():
                self._on_finish(self._result(complete))
        self._let_go()

    def _let_go(self) -> None:
        """A finished tap stays on its flow for as long as the flow is kept (mitmweb, a flow file): it holds
        nothing of what it read, which may be megabytes of reasoning and the parser's state."""
        self._reading = False
        self._parser = None
        self._decoder = None
        self._backlog = []
        self.reader = self._skippable = None  # the reader's method holds the reader
        self._on_finish = None  # and these the flow, which holds the tap
        self._guard = nullcontext

    def _frames_ended(self, frames: FrameEvents) -> None:
        self._unreadable_frames = frames.unreadable
        if frames.exceptions:
            self.problem = self.problem or f"the upstream ended the stream with {', '.join(frames.exceptions)}"
        elif frames.cut_short:
            self.problem = (
                self.problem or f"the stream ended {frames.cut_short} bytes into a frame; that frame not read"
            )

    def _result(self, complete: bool) -> TapResult:
        if not self._read:
            return TapResult(
                complete=complete, sse=self._sse, read=False, problem=self.problem, first_chunk_at=self.first_chunk_at
            )
        records = tuple(self.reader.records(complete=complete))
        assembled = getattr(self.reader, "answer", None)  # ReadingAndAssembling
        whole = assembled is not None and getattr(self.reader, "summary_markers", None) is None
        return TapResult(
            complete=complete,
            sse=self._sse,
            read=True,
            records=records,
            over=self.reader.budget.over,  # after records(): the reader may meet a bound while it assembles them
            unreadable=self.reader.unreadable + self._unreadable_frames,
            problem=self.problem,
            seconds=self.seconds,
            answer=assembled() if assembled is not None else None,
            whole_answer=whole,
            first_chunk_at=self.first_chunk_at,
        )

    def _read_document(self, raw: bytes | bytearray) -> None:
        try:
            body = decode_body(raw, self._encoding, MAX_DECODED_BYTES)
        except Undecodable as e:
            self._stop(f"response body {e}; not read")
            return
        try:
            doc = jsoncodec.loads(body)
        except ValueError:
            if not looks_like_event_stream(body):
                self._stop("response body is not JSON")
                return
            # An event stream sent without its content type.
            parser = SSEParser()
            for event in parser.feed(bytes(body)) + parser.close():
                self.reader.feed_event(event)
            return
        self.reader.feed_document(doc)

    def _stop(self, problem: str) -> None:
        self._reading = False
        self._parser = None
        self._decoder = None
        self.problem = self.problem or problem


def read_recorded(reader: ResponseReader, body: bytes, *, sse: bool, aws_frames: bool = False) -> str | None:
    """Feeds a whole recorded (already decoded) body to a reader, as the tap would have while it streamed; returns
    what the tap found wrong with it (an exception frame, a frame cut short), if anything."""
    tap = ResponseTap(
        reader, sse=sse or aws_frames, content_encoding=None, read=True, keep_body=False, aws_frames=aws_frames
    )
    tap(body)
    tap.finish(complete=True)
    return tap.problem
