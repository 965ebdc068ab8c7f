"""The addon that reads reasoning out of LLM responses and stores it in the cache."""

from __future__ import annotations

import functools
from contextlib import AbstractContextManager
from typing import Any

from mitmproxy import http

from .. import wire as formats
from ..answer.assembled import ReadingAndAssembling
from ..answer.keep import KeptAnswer, keep_answer
from ..answer.provenance import Origin
from ..answer.tap import BACKLOG_BYTES, ResponseTap, TapResult
from ..shared.events import Captured, summarize_record
from ..shared.failopen import FailOpen, fail_open
from ..shared.flow_meta import RETRY_OF, flow_meta
from ..shared.headers import header, media_type
from ..shared.records import display_call_id
from ..shared.redact import masked_logger, redact_url
from ..wire import WireFormat, event_stream
from ..wire import sse as sse_parser
from .annotate import add_comment, report_skip
from .runtime import Runtime

logger = masked_logger(__name__)


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
            reader = formats.by_name(meta["format"]).reader()
            if self.runtime.answer_listeners:  # the traces or the metrics read the answer too
                transcriber = formats.TRANSCRIBERS[meta["format"]]
                summary = None if self.runtime.whole_answers else transcriber.summary_markers
                reader = ReadingAndAssembling(reader, transcriber.assembler, summary)
            tap = ResponseTap(
                reader,
                sse=aws_frames or kind == sse_parser.MEDIA_TYPE,
                aws_frames=aws_frames,
                content_encoding=header(response.headers, b"content-encoding"),
                read=response.status_code < 300,
                # A second sending's answer goes to another flow's client (hooks/retry.py): held whole for it.
                keep_body=RETRY_OF in flow.metadata or self.runtime.reattach_streamed_bodies(),
                on_finish=functools.partial(self._commit, flow),
                guard=functools.partial(self._failing_open, flow),
                defer=True,  # finished by the response hook (`_close`), or by the error hook if cut short
            )
            if response.raw_content is not None:
                # The body is here already, and mitmproxy will not stream it through the tap: a flow read from a
                # file (`mitmdump -r`, `mitmweb -r`), or an answer another addon made. The tap reads it as if it had.
                feed_whole(tap, response.raw_content)
            response.stream = tap
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
            if complete and tap.ended and not self.runtime.keep_bodies() and RETRY_OF not in flow.metadata:
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
        """Stores the reasoning the tap read of an answer and says what became of it, then tells the listeners."""
        try:
            self._store(flow, result)
        finally:
            for listener in self.runtime.answer_listeners:
                with FailOpen(flow.id, "answer listener", self.runtime.events):
                    listener(flow, result)

    def _store(self, flow: http.HTTPFlow, result: TapResult) -> None:
        meta = flow_meta(flow)
        store = self.runtime.store
        if meta is None or store is None or self.runtime.settings is None:
            return
        timing = meta.setdefault("addon_ms", {})
        if isinstance(timing, dict):
            timing["response"] = round(result.seconds * 1000, 3)
        wire_format = formats.by_name(meta["format"])
        kept = None
        if result.read:
            origin = Origin.of(meta)
            cut_off_by = flow.error.msg if flow.error is not None else "connection closed"
            kept = keep_answer(store, meta["scope"], origin, meta.get("request_model"), wire_format, result, cut_off_by)
        self._report(flow, meta, wire_format, result, kept)

    def _report(
        self,
        flow: http.HTTPFlow,
        meta: dict[str, Any],
        wire_format: WireFormat,
        result: TapResult,
        kept: KeptAnswer | None,
    ) -> None:
        """Says, in one place, what became of an answer: mitmproxy's output, the event log, the flow."""
        events, settings = self.runtime.events, self.runtime.settings
        assert settings is not None
        if result.problem:
            report_skip(flow, result.problem, events)
        if kept is None:
            return
        url = redact_url(flow.request.url)
        if result.over is not None:
            report_skip(flow, f"answer over a bound: {result.over}; read to its end, not cached", events)
        captured = []
        for entry in kept.records:
            record = entry.record
            if entry.refused:
                report_skip(flow, f"answer {record.response_id or flow.id}: {entry.note}", events)
            fields, summaries = summarize_record(record, wire_format.text_fields, settings.log_opaque)
            events.write(
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
                    stored=entry.stored,
                    note=entry.note,
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
                f"tool calls {', '.join(calls)}"
                if calls
                else "no tool call" + ("" if record.keys() else " (not cached)"),
            )
        for reason in kept.skipped_after:
            report_skip(flow, reason, events)
        if captured:
            meta["captured"] = captured
            fields = sorted({name for entry in captured for name in entry["fields"]})
            count = sum(len(entry["tool_calls"]) for entry in captured)
            calls = "an answer without tool calls" if count == 0 else f"{count} tool call{'s' if count > 1 else ''}"
            add_comment(flow, f"llm captured {', '.join(fields)} for {calls}")


def feed_whole(tap: ResponseTap, body: bytes) -> None:
    """Passes a body that is already whole through a tap in pieces of the size a stream brings, then its end."""
    for start in range(0, len(body), BACKLOG_BYTES):
        tap(body[start : start + BACKLOG_BYTES])
    tap(b"")
