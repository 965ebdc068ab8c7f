"""A threaded HTTP server on a free loopback port, for the test upstreams (the fake provider, the hostile one)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackServer:
    """Serves with a handler class made for this owner; `url` once started."""

    server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None

    def handler(self) -> type[BaseHTTPRequestHandler]:
        """The request handler class, bound to this owner."""
        raise NotImplementedError

    def start(self):  # noqa: ANN201 - returns the subclass
        self._server = self.server_class(("127.0.0.1", 0), self.handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"
