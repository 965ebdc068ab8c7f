"""The addon that reads reasoning out of LLM responses and stores it in the cache."""

from __future__ import annotations

import functools
import time
from contextlib import AbstractContextManager

from mitmproxy import http

from .. import wire as formats
from ..answer.provenance import Origin, issued_values, record_origins
from ..answer.storable import storable
from ..answer.tap import ResponseTap, TapResult
from ..cache import ReasoningStore, StoreUnavailable
from ..shared.events import Captured, summarize_record
from ..shared.failopen import FailOpen, fail_open
from ..shared.flow_meta import flow_meta
from ..shared.headers import header, media_type
from ..shared.records import ReasoningRecord, display_call_id
from ..shared.redact import masked_logger, redact_url
from ..wire import WireFormat, event_stream
from ..wire import sse as sse_parser
from .annotate import add_comment, report_skip
from .runtime import Runtime

logger = masked_logger(__name__)


def remember_issuer(store: ReasoningStore, origin: Origin, record: ReasoningRecord, wire_format: WireFormat) -> None:
    """Notes which host, account and model issued the signed values of an answer, with tool calls or without: a
    request that sends one to another model gets it removed (addon/answer/provenance.py)."""
    values = issued_values(record, wire_format.signed_fields)
    if values:
        record_origins(store, origin, values)


class ResponseCapture:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        meta = flow_meta(flow)
        if meta is None or flow.response is None or not self.runtime.ready:
            return
        try:  # on the way to a stream's first event, like the request hook (see there)
            response = flow.response
            if callable(response.stream):
                reason = "another addon already streams this response; reasoning not captured"
                report_skip(flow, reason, self.runtime.events)
                return
            if response.status_code >= 400:
                return  # error answers are small: let mitmproxy read them whole, to be explained
            kind = media_type(response.headers)
            aws_frames = kind == event_stream.MEDIA_TYPE
            response.stream = ResponseTap(
                formats.by_name(meta["format"]).reader(),
                sse=aws_frames or kind == sse_parser.MEDIA_TYPE,
                aws_frames=aws_frames,
                content_encoding=header(response.headers, b"content-encoding"),
                read=response.status_code < 300,
                keep_body=self.runtime.reattach_streamed_bodies(),
                on_finish=functools.partial(self._commit, flow),
                guard=functools.partial(self._failing_open, flow),
                defer=True,  # finished by the response hook (`_close`), or by the error hook if cut short
            )
        except Exception as e:
            fail_open(flow.id, "response capture", self.runtime.events, e)

    def response(self, flow: http.HTTPFlow) -> None:
        self._close(flow, complete=True)

    def error(self, flow: http.HTTPFlow) -> None:
        # An aborted stream ends here instead of in `response`.
        self._close(flow, complete=False)

    def _close(self, flow: http.HTTPFlow, *, complete: bool) -> None:
        tap = flow.response.stream if flow.response is not None else None
        if not isinstance(tap, ResponseTap):
            return
        with self._failing_open(flow):
            if complete and tap.ended and not self.runtime.keep_bodies():
                # What is stored on a flow after its response hook never reaches a flow file or a UI: only
                # when none is kept can the reading wait until the client has the whole answer.
                tap.finish_soon()
                return
            tap.finish(complete=complete)
            body = tap.take_body()
            if body is not None and flow.response.raw_content is None:
                flow.response.raw_content = body

    def _failing_open(self, flow: http.HTTPFlow) -> AbstractContextManager[None]:
        return FailOpen(flow.id, "response capture", self.runtime.events)

    def _commit(self, flow: http.HTTPFlow, result: TapResult) -> None:
        """Stores the reasoning the tap read of an answer, and says what became of it."""
        meta = flow_meta(flow)
        store, settings = self.runtime.store, self.runtime.settings
        if meta is None or store is None or settings is None:
            return
        timing = meta.setdefault("addon_ms", {})
        if isinstance(timing, dict):
            timing["response"] = round(result.seconds * 1000, 3)
        url = redact_url(flow.request.url)
        if result.problem:
            report_skip(flow, result.problem, self.runtime.events)
        if not result.read:
            return
        wire_format = formats.by_name(meta["format"])
        captured = []
        unavailable = None
        over = result.over
        if over is not None:
            report_skip(flow, f"answer over a bound: {over}; read to its end, not cached", self.runtime.events)
        for record in result.records:
            record = record.model_copy(update={"request_model": meta.get("request_model"), "captured_at": time.time()})
            keys = record.keys()
            if unavailable is None:
                try:
                    remember_issuer(store, Origin.of(meta), record, wire_format)
                except StoreUnavailable as e:
                    unavailable = str(e)
            stored, note = False, None
            if keys and over is not None:
                note = f"not cached: {over}"
            elif keys:
                kept, note = storable(record, wire_format)
                if kept is None:
                    report_skip(flow, f"answer {record.response_id or flow.id}: {note}", self.runtime.events)
                elif unavailable is None:
                    try:
                        store.put(meta["scope"], keys, kept)
                        stored = True
                    except StoreUnavailable as e:
                        unavailable = str(e)
            fields, summaries = summarize_record(record, wire_format.text_fields, settings.log_opaque)
            self.runtime.events.write(
                Captured(
                    flow_id=flow.id,
                    host=meta["host"],
                    url=url,
                    wire_format=wire_format.name,
                    response_id=record.response_id,
                    request_model=record.request_model,
                    response_model=record.response_model,
                    tool_calls=summaries,
                    fields=fields,
                    streamed=result.sse,
                    complete=result.complete,
                    stored=stored,
                    note=note,
                )
            )
            names = sorted({*record.fields, *(name for call in record.tool_calls for name in call.fields)})
            # Calls without an id (Gemini) are named by their function; the cache keys them by name and arguments.
            calls = [display_call_id(call.id) if call.id else f"{call.name}()" for call in record.tool_calls]
            captured.append({"response_id": record.response_id, "fields": names, "tool_calls": calls})
            # Every capture is in the event log; the terminal gets it only at debug verbosity.
            logger.debug(
                "llm captured %s from %s for %s",
                ", ".join(names),
                url,
                f"tool calls {', '.join(calls)}" if calls else "no tool call" + ("" if keys else " (not cached)"),
            )
        if result.unreadable:
            # Such events reach the client as they came, but whatever reasoning they carried is lost:
            # without this line the log would not say why nothing (or less) was captured.
            reason = f"{result.unreadable} stream event(s) not valid JSON (cut short or not UTF-8); not read"
            report_skip(flow, reason, self.runtime.events)
        if not result.complete and not captured:
            # A cut-off answer is only read once its tool calls began; one cut before leaves no other trace.
            error = flow.error.msg if flow.error is not None else "connection closed"
            report_skip(flow, f"answer cut off before any tool call ({error}); nothing cached", self.runtime.events)
        if unavailable is not None:
            reason = f"reasoning cache unavailable, this answer's reasoning is logged but not cached: {unavailable}"
            report_skip(flow, reason, self.runtime.events)
        if captured:
            meta["captured"] = captured
            fields = sorted({name for entry in captured for name in entry["fields"]})
            count = sum(len(entry["tool_calls"]) for entry in captured)
            add_comment(flow, f"llm captured {', '.join(fields)} for {count} tool call(s)")
