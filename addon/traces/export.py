"""The spans' way out (llm_otel=URL): a thread of its own reads each finished exchange, makes its span with the
OpenTelemetry SDK and sends spans in batches with its OTLP/HTTP exporter. The event loop only hands an `Exchange`
over, so a slow or dead collector never delays a request or an answer.

What waits is bounded by the bytes it holds (MAX_QUEUED_BYTES of exchanges, each counted by its request body, its
answer and its events); past it an exchange is dropped and counted, never waited for. A collector that cannot be
reached is said once, with the exporter's reason, and once more when it is reached again; the exporter's own log
lines (one per failed batch) are kept out of mitmproxy's output while this runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import OTELResourceDetector, Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..shared.redact import masked_logger, redact_text
from ..shared.version import __version__
from .exchange import Exchange, plan_span
from .links import ConversationLinks, TurnPlace

logger = masked_logger(__name__)

MAX_QUEUED_BYTES = 32 * 1024 * 1024
BATCH = 256  # spans sent in one request to the collector, at most
# And about this many bytes of them (collectors take 4 MiB requests by default; one span with content holds up to
# three 256 KiB attributes): a batch is sent once it reaches it.
BATCH_BYTES = 3 * 1024 * 1024
# How long a batch waits for more spans once it has one: each request to the collector costs the export thread about
# a millisecond of CPU, which many agents' turns at once would otherwise pay a few spans at a time.
BATCH_SECONDS = 1.0
EXPORT_SECONDS = 5.0  # the exporter's time for one batch, its retries included
SHUTDOWN_SECONDS = 3.0  # what stopping waits for the spans still queued
SERVICE = "llm-reasoning-proxy"
_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.proto.http.trace_exporter")


@dataclass(slots=True)
class SpanCounts:
    exported: int = 0
    dropped: int = 0  # past the queue's bound, or in a batch the collector never took
    failed_batches: int = 0


class _Collected(SpanProcessor):
    """Keeps the spans the worker ends, for the worker to send itself (a batch processor would queue them again)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


class _ExporterLines(logging.Filter):
    """Keeps the exporter's own warnings out of mitmproxy's output, remembering the last one's text: the reason the
    one line this module says about a collector that cannot be reached gives."""

    def __init__(self) -> None:
        super().__init__()
        self.last: str | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            self.last = redact_text(record.getMessage())[:300]
        except Exception:
            self.last = redact_text(record.msg)[:300] if isinstance(record.msg, str) else None
        return False


class SpanExport:
    """The thread that makes and sends spans. `submit` is all the event loop calls."""

    def __init__(self, endpoint: str, *, display: str, content: bool, exporter: object | None = None) -> None:
        self.endpoint = endpoint
        self.display = display  # the endpoint as it may be said (no credentials)
        self.content = content
        self.counts = SpanCounts()
        self.links = ConversationLinks()
        self._queue: deque[Exchange] = deque()
        self._queued_bytes = 0
        self._wake = threading.Condition()
        self._closing = False
        self._down = False  # the collector could not be reached, and that was said
        self._full_said = False
        self._collected = _Collected()
        # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (Phoenix's openinference.project.name) are read, and no other
        # detector: the process detector would put mitmdump's command line, a Redis password in it, on every span.
        resource = Resource({"service.name": SERVICE, "service.version": __version__}).merge(
            OTELResourceDetector().detect()
        )
        self._provider = TracerProvider(resource=resource, span_limits=SpanLimits(), shutdown_on_exit=False)
        self._provider.add_span_processor(self._collected)
        self._tracer = self._provider.get_tracer(SERVICE, __version__)
        # The exporter reads OTEL_EXPORTER_OTLP_HEADERS (a collector's credentials) and OTEL_EXPORTER_OTLP_CERTIFICATE.
        self._exporter = exporter or OTLPSpanExporter(endpoint=endpoint, timeout=EXPORT_SECONDS)
        self._lines = _ExporterLines()
        for name in _EXPORTER_LOGGERS:
            logging.getLogger(name).addFilter(self._lines)
        self._thread = threading.Thread(target=self._run, name="llm-otel-export", daemon=True)
        self._thread.start()

    def submit(self, exchange: Exchange) -> bool:
        """Queues an exchange for its span; False when it was dropped (the queue holds MAX_QUEUED_BYTES)."""
        size = exchange.size()
        with self._wake:
            if self._closing:
                return False
            if self._queued_bytes + size > MAX_QUEUED_BYTES and self._queue:
                self.counts.dropped += 1  # under the lock, as every count the export thread changes
                if not self._full_said:
                    self._full_said = True
                    logger.warning(
                        "llm otel: spans are being dropped: %d MiB of exchanges wait for %s (%d dropped so far; "
                        "said once until the queue drains)",
                        MAX_QUEUED_BYTES // (1024 * 1024),
                        self.display,
                        self.counts.dropped,
                    )
                return False
            self._queue.append(exchange)
            self._queued_bytes += size
            if len(self._queue) in (1, BATCH):  # the thread waits for the first, or for a batch to fill
                self._wake.notify()
        return True

    def stop(self, *, wait: bool = True) -> None:
        """Sends what is queued (for up to SHUTDOWN_SECONDS), then stops the thread and the exporter. Without `wait`
        (options changed while traffic flows) the event loop does not wait for it: the thread ends on its own."""
        with self._wake:
            self._closing = True
            self._wake.notify()
        if not wait:
            return
        self._thread.join(SHUTDOWN_SECONDS + EXPORT_SECONDS)
        if self.counts.dropped:
            logger.info("llm otel: %d spans sent, %d dropped", self.counts.exported, self.counts.dropped)

    def _take(self) -> list[Exchange]:
        with self._wake:
            while not self._queue and not self._closing:
                self._wake.wait()
            until = time.monotonic() + BATCH_SECONDS
            while len(self._queue) < BATCH and not self._closing:
                left = until - time.monotonic()
                if left <= 0:
                    break
                self._wake.wait(left)
            taken = []
            while self._queue and len(taken) < BATCH:
                exchange = self._queue.popleft()
                self._queued_bytes -= exchange.size()
                taken.append(exchange)
            if not self._queue:
                self._full_said = False
            return taken

    def _run(self) -> None:
        try:
            self._export_until_closed()
        finally:  # the thread's own end, whether stop() waits for it or not
            self._exporter_done()

    def _export_until_closed(self) -> None:
        deadline: float | None = None
        while True:
            taken = self._take()
            if not taken:
                return  # closing, and nothing is left
            if self._closing:
                deadline = deadline or time.monotonic() + SHUTDOWN_SECONDS
                if time.monotonic() > deadline:
                    with self._wake:
                        self.counts.dropped += len(taken) + len(self._queue)
                    return
            batch_bytes = 0
            for exchange in taken:
                try:
                    batch_bytes += self._make_span(exchange)
                except Exception as e:  # one exchange the span cannot be made of: the rest go on
                    logger.warning("llm otel: no span for flow %s: %s: %s", exchange.flow_id, type(e).__name__, e)
                if batch_bytes >= BATCH_BYTES:
                    self._send()
                    batch_bytes = 0
            self._send()

    def _exporter_done(self) -> None:
        for name in _EXPORTER_LOGGERS:
            logging.getLogger(name).removeFilter(self._lines)
        try:
            self._exporter.shutdown()  # type: ignore[attr-defined]
        except Exception as e:
            logger.debug("llm otel: exporter shutdown: %s", e)

    def _make_span(self, exchange: Exchange) -> int:
        """Makes the exchange's span (kept for `_send`); returns about the bytes it holds."""
        plan = plan_span(exchange, content=self.content)
        earlier = self.links.find(plan.links)  # the turn whose answer its request's history holds
        if earlier is not None:
            plan.attributes["gen_ai.conversation.id"] = f"{earlier.trace_id:032x}"
        if earlier is not None:
            parent = SpanContext(earlier.trace_id, earlier.root_span_id, False, TraceFlags(TraceFlags.SAMPLED))
            context = trace.set_span_in_context(trace.NonRecordingSpan(parent), Context())
            previous = SpanContext(earlier.trace_id, earlier.span_id, False, TraceFlags(TraceFlags.SAMPLED))
            links = [Link(previous, {"llm_proxy.link": "previous turn"})]
        else:
            context, links = Context(), []
        span = self._tracer.start_span(
            plan.name,
            context=context,
            kind=SpanKind.CLIENT,
            attributes=plan.attributes,
            links=links,
            start_time=plan.start_ns,
        )
        own = span.get_span_context()
        if earlier is None:
            span.set_attribute("gen_ai.conversation.id", f"{own.trace_id:032x}")
        for event in plan.events:
            span.add_event(event.name, event.attributes, timestamp=event.timestamp_ns)
        if plan.error is not None:
            span.set_status(Status(StatusCode.ERROR, plan.error))
        span.end(end_time=plan.end_ns)
        root = earlier.root_span_id if earlier is not None else own.span_id
        self.links.remember(plan.issued, TurnPlace(own.trace_id, root, own.span_id))
        return plan.size()

    def _send(self) -> None:
        spans, self._collected.spans = self._collected.spans, []
        if not spans:
            return
        try:
            result = self._exporter.export(spans)  # type: ignore[attr-defined]
        except Exception as e:
            self._lines.last = f"{type(e).__name__}: {e}"
            result = SpanExportResult.FAILURE
        if result == SpanExportResult.SUCCESS:
            self.counts.exported += len(spans)
            if self._down:
                self._down = False
                logger.info("llm otel: %s takes spans again", self.display)
            return
        with self._wake:
            self.counts.dropped += len(spans)
            self.counts.failed_batches += 1
        if not self._down:
            self._down = True
            logger.warning(
                "llm otel: cannot send spans to %s (%s); traffic goes on, spans are dropped until it takes them "
                "(said once until then)",
                self.display,
                self._lines.last or "the exporter gave no reason",
            )
