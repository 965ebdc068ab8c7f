"""A stand-in OpenTelemetry collector on loopback: it takes OTLP/HTTP trace exports (protobuf, as the SDK's exporter
sends them), decodes them with opentelemetry-proto and keeps the spans as plain dicts. Quicker than Phoenix for the
tests that only look at what the proxy sends; tests/test_e2e_traces.py also sends to a real Phoenix.

It can be told to refuse (`status`), or to hold each export until released (`hold`), as a slow collector would."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

WAIT_SECONDS = 60.0


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind is not None else None


def attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in pairs}


class OtlpSink:
    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.exports = 0
        self.status = 200
        self.hold = threading.Event()
        self.hold.set()  # set: answer at once
        self._changed = threading.Condition()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                sink.hold.wait(WAIT_SECONDS)
                if sink.status == 200 and self.path == "/v1/traces":
                    sink._take(body, dict(self.headers))
                self.send_response(sink.status if self.path == "/v1/traces" else 404)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> OtlpSink:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.hold.set()
        self._server.shutdown()
        self._server.server_close()

    def _take(self, body: bytes, headers: dict[str, str]) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        found = []
        for resource_spans in request.resource_spans:
            resource = attributes(resource_spans.resource.attributes)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "start_ns": span.start_time_unix_nano,
                            "end_ns": span.end_time_unix_nano,
                            "status": {"code": span.status.code, "message": span.status.message},
                            "attributes": attributes(span.attributes),
                            "events": [
                                {"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes(e.attributes)}
                                for e in span.events
                            ],
                            "links": [
                                {"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()} for link in span.links
                            ],
                            "resource": resource,
                            "headers": headers,
                        }
                    )
        with self._changed:
            self.spans.extend(found)
            self.exports += 1
            self._changed.notify_all()

    def wait_for(self, count: int, deadline: float = WAIT_SECONDS) -> list[dict[str, Any]]:
        """The spans, once at least `count` arrived; fails with what came if they do not."""
        until = time.monotonic() + deadline
        with self._changed:
            while len(self.spans) < count:
                left = until - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"{len(self.spans)} spans came, not {count}: {[s['name'] for s in self.spans]}"
                    )
                self._changed.wait(left)
            return list(self.spans)
