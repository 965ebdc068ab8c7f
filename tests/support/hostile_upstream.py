"""An upstream on loopback that answers with whatever bytes a test gives it: compression bombs, answers built to be
expensive to read, streams of any size. Unlike the fake provider it enforces nothing; it only serves.

A test registers an answer for a path (`serve`), as a body or as a generator of chunks (sent with chunked
transfer encoding, each chunk flushed), with the headers it says, byte for byte. Request bodies are read and
counted, never decoded: a compressed bomb sent by a client costs this server nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import LoopbackServer


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    body: bytes | Callable[[], Iterable[bytes]] = b"{}"  # bytes, or a generator of chunks for a chunked answer


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


class HostileUpstream(LoopbackServer):
    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[str, Answer] = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()

    def serve(self, path: str, answer: Answer) -> None:
        self.answers[path] = answer

    def handler(self) -> type[BaseHTTPRequestHandler]:
        upstream = self

        class Handler(_Handler):
            owner = upstream

        return Handler

    def last(self) -> Received:
        with self._lock:
            return self.received[-1]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    owner: HostileUpstream

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._answer(b"")

    def do_POST(self) -> None:  # noqa: N802
        self._answer(self.rfile.read(int(self.headers.get("content-length") or 0)))

    def _answer(self, body: bytes) -> None:
        with self.owner._lock:
            self.owner.received.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        answer = self.owner.answers.get(self.path.split("?", 1)[0], Answer(body=b'{"ok": true}'))
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if isinstance(answer.body, bytes):
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            return
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in answer.body():
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
