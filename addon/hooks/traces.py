"""The addon that sends a GenAI span of each LLM exchange to an OpenTelemetry collector (llm_otel=URL).

It gathers, per flow, what the event log says the proxy did (an EventLog listener) and the answer the capture read
(an answer listener), and once both the flow and its answer are over hands one `Exchange` to the export thread
(traces/export.py), which does everything else off the event loop. Off (the default), it does nothing at all, and
OpenTelemetry is not even imported."""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mitmproxy import http

from .. import dialects
from .. import wire as formats
from ..answer.tap import ResponseTap, TapResult
from ..shared.events import Event
from ..shared.failopen import fail_open
from ..shared.flow_meta import RETRY_OF, flow_meta
from ..shared.headers import header
from ..shared.redact import display_url, masked_logger
from ..shared.startup import refuse
from ..traces.exchange import Exchange
from ..traces.genai import SpanEvent, span_event
from .runtime import Runtime

if TYPE_CHECKING:
    from ..traces.export import SpanExport

logger = masked_logger(__name__)

# What is held of flows whose spans are not made yet: their events (each flow's first MAX_FLOW_EVENTS), and, for a
# moment, their answers. Past MAX_HELD_BYTES the oldest flow's are let go of (its span then says fewer events).
MAX_HELD_BYTES = 8 * 1024 * 1024
MAX_FLOW_EVENTS = 64
MAX_PENDING = 4096  # flows held at once, whatever they hold
PENDING_BYTES = 512  # what an entry costs before its events and answer: its dict slot, object and flow id
HANDED_OVER_KEPT = 256  # the flows whose spans went last, whose late events are let go of


@dataclass(slots=True)
class _Pending:
    """What is held of one flow until its span is handed over."""

    events: list[SpanEvent] = field(default_factory=list)
    events_dropped: int = 0
    size: int = 0
    result: TapResult | None = None  # the answer the capture read, once it did
    ended: bool = False  # its response or error hook ran


class Traces:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.export: SpanExport | None = None
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._held = 0
        self._retries: dict[str, str] = {}  # a second sending's flow -> the flow it answers (hooks/retry.py)
        self._handed_over: deque[str] = deque(maxlen=HANDED_OVER_KEPT)

    def configure(self, updated: set[str]) -> None:
        settings = self.runtime.settings
        wanted = (settings.otel, settings.otel_content) if settings is not None and settings.otel else None
        current = (self.export.endpoint, self.export.content) if self.export is not None else None
        if wanted == current:
            return
        self._stop()
        if wanted is not None:
            self._start(*wanted)

    def _start(self, endpoint: str, content: bool) -> None:
        try:
            from ..traces.export import SpanExport
        except ImportError as e:
            refuse(f"llm_otel needs {e.name or 'opentelemetry-sdk'}: install it where mitmproxy runs")
        self.export = SpanExport(endpoint, display=display_url(endpoint), content=content)
        self.runtime.events.listeners.append(self._event)
        self.runtime.answer_listeners.append(self._answer)
        self.runtime.whole_answers = content
        self.runtime.span_counts = self.export.counts  # for the metrics, when they are served
        logger.info("llm traces to %s%s", display_url(endpoint), " with content" if content else "")

    def _stop(self, *, wait: bool = False) -> None:
        if self._event in self.runtime.events.listeners:
            self.runtime.events.listeners.remove(self._event)
        if self._answer in self.runtime.answer_listeners:
            self.runtime.answer_listeners.remove(self._answer)
        self.runtime.whole_answers = False
        self.runtime.span_counts = None
        self._pending.clear()
        self._held = 0
        self._retries.clear()
        self._handed_over.clear()
        if self.export is not None:
            export, self.export = self.export, None
            export.stop(wait=wait)  # options changed while traffic flows: the loop does not wait for the collector

    def done(self) -> None:
        self._stop(wait=True)

    def request(self, flow: http.HTTPFlow) -> None:
        if self.export is not None and RETRY_OF in flow.metadata:
            self._retries[flow.id] = str(flow.metadata[RETRY_OF])

    def response(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._ended(flow)

    def _event(self, event: Event) -> None:
        """An EventLog listener: what the proxy did, kept for the span of the flow it did it on."""
        if event.flow_id is None:
            return
        made = span_event(event, time.time_ns())
        if made is None:
            return
        flow_id = self._retries.get(event.flow_id, event.flow_id)
        if flow_id in self._handed_over:  # said after its span went (a line no hook waits for): not kept
            return
        pending = self._held_for(flow_id)
        if len(pending.events) >= MAX_FLOW_EVENTS:
            pending.events_dropped += 1
            return
        pending.events.append(made)
        self._hold(pending, made.size())

    def _answer(self, flow: http.HTTPFlow, result: TapResult) -> None:
        """An answer listener: the capture read the flow's answer (its tap finished)."""
        first = self._retries.get(flow.id)
        if first is not None:  # a second sending's answer is its first flow's (the client gets it there)
            self._keep_answer(self._held_for(first), result)
            return
        pending = self._held_for(flow.id)
        self._keep_answer(pending, result)
        if pending.ended:
            self._hand_over(flow, pending)

    def _keep_answer(self, pending: _Pending, result: TapResult) -> None:
        pending.result = result
        answer = result.answer
        if answer is not None:
            self._hold(pending, sum(len(part.text) + len(part.value or "") for part in answer.parts()))

    def _ended(self, flow: http.HTTPFlow) -> None:
        if self.export is None:
            return
        if RETRY_OF in flow.metadata:
            self._retries.pop(flow.id, None)
            return
        self._held_for(flow.id).ended = True
        # The request's own lines come on the loop's next turn (Runtime.answered), and so does a stream's reading
        # (ResponseTap.finish_soon): both were scheduled before this, so they are in when the span is settled.
        try:
            asyncio.get_running_loop().call_soon(self._settle, flow)
        except RuntimeError:  # no event loop (a test calling the hooks)
            self._settle(flow)

    def _settle(self, flow: http.HTTPFlow) -> None:
        pending = self._pending.get(flow.id)
        if pending is None:  # handed over already, by the answer listener
            return
        tap = flow.response.stream if flow.response is not None else None
        if pending.result is None and isinstance(tap, ResponseTap) and not tap.finished:
            return  # the answer listener hands it over once its answer is read
        self._hand_over(flow, pending)

    def _held_for(self, flow_id: str) -> _Pending:
        pending = self._pending.get(flow_id)
        if pending is None:
            pending = self._pending[flow_id] = _Pending()
            self._hold(pending, PENDING_BYTES)
        return pending

    def _hold(self, pending: _Pending, size: int) -> None:
        """Counts what `pending` holds more; past MAX_HELD_BYTES or MAX_PENDING the oldest flows are let go of (a
        flow whose hooks never came, say), and their spans are not made."""
        pending.size += size
        self._held += size
        while (self._held > MAX_HELD_BYTES or len(self._pending) > MAX_PENDING) and len(self._pending) > 1:
            _, oldest = self._pending.popitem(last=False)
            self._held -= oldest.size

    def _hand_over(self, flow: http.HTTPFlow, pending: _Pending) -> None:
        """The flow and its answer are over: its span is made off the loop."""
        if self._pending.pop(flow.id, None) is not None:  # else let go of already, and no longer counted
            self._held -= pending.size
        self._handed_over.append(flow.id)
        export = self.export
        meta = flow_meta(flow)
        if export is None or meta is None:
            return
        try:
            export.submit(exchange_of(flow, meta, pending))
        except Exception as e:
            fail_open(flow.id, "traces", None, e)


def exchange_of(flow: http.HTTPFlow, meta: dict[str, Any], pending: _Pending) -> Exchange:
    """What the span of a finished flow is made of, taken on the event loop: references and a few numbers."""
    request, response = flow.request, flow.response
    wire_format = formats.by_name(meta["format"])
    host = request.pretty_host  # the host the request went to, without its port
    model = meta.get("request_model")
    result = pending.result
    answer = result.answer if result is not None else None
    records = result.records if result is not None else ()
    diagnosis = meta.get("diagnosis")
    ended = response.timestamp_end if response is not None and response.timestamp_end else time.time()
    return Exchange(
        flow_id=flow.id,
        wire_format=wire_format.name,
        operation=wire_format.operation,
        provider=dialects.provider_name(host, request.path, model or ""),
        server_address=host,
        server_port=request.port,
        path=request.path,
        api_url=f"{request.scheme}://{host}{request.path.split('?', 1)[0]}",
        scope=str(meta.get("scope", "")),
        request_model=model,
        started=request.timestamp_start,
        ended=ended,
        request_body=request.raw_content,
        request_encoding=header(request.headers, b"content-encoding"),
        status=response.status_code if response is not None else None,
        error=flow.error.msg if flow.error is not None else None,
        first_chunk_at=result.first_chunk_at if result is not None else None,
        answer=answer,
        whole_answer=result.whole_answer if result is not None else False,
        calls=[call.id for record in records for call in record.tool_calls if call.id],
        response_id=(answer.id if answer is not None else None)
        or next((r.response_id for r in records if r.response_id), None),
        events=pending.events,
        events_dropped=pending.events_dropped,
        rule=diagnosis.get("rule") if isinstance(diagnosis, dict) else None,
        refusal=diagnosis.get("message") if isinstance(diagnosis, dict) else None,
    )
