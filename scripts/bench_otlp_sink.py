"""The benchmark's OpenTelemetry collector: takes OTLP/HTTP exports and answers 200 at once, reading nothing of them,
so that what `scripts/bench --observed` measures is the proxy's side of tracing (making and sending the spans).

Run as `python scripts/bench_otlp_sink.py`; it prints "listening PORT", then, when stopped, how many exports and
bytes it took."""

from __future__ import annotations

import signal
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

taken = {"exports": 0, "bytes": 0}


class Sink(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        size = int(self.headers.get("content-length", 0))
        self.rfile.read(size)
        taken["exports"] += 1
        taken["bytes"] += size
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    finally:
        print(f"took {taken['exports']} exports, {taken['bytes']} bytes", flush=True)


if __name__ == "__main__":
    main()
