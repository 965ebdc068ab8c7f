"""A fake LLM provider on loopback that enforces the real providers' rules and error texts.

One HTTP server records every request and hands it to the dialect that owns its
path (`fake_chat`, `fake_responses`, `fake_anthropic`, `fake_gemini`, ...). A dialect
validates the request the way the real provider does, with its exact error
text, and answers with a JSON body or a list of SSE events; the server takes
care of streaming, compression, delays and aborted connections.

Per-request behaviour is set with `x-fake-*` request headers (see `Options`).
"""

from __future__ import annotations

import base64
import gzip
import json
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import brotli
import zstandard

from .loopback import LoopbackServer


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes  # as received on the wire (still content-encoded)
    doc: Any  # parsed JSON of the decoded body, or None
    status: int = 0
    sent: bytearray = field(default_factory=bytearray)  # response body before content-encoding
    wire: bytearray = field(default_factory=bytearray)  # response body as written (content-encoded, unchunked)


@dataclass(frozen=True)
class ToolCall:
    """A call of one of a real client's own tools (its name and arguments), so that the client runs it."""

    name: str
    arguments: dict[str, Any]


@dataclass
class Options:
    parallel: int = 1  # tool calls per tool turn
    steps: int = 1  # tool turns before the final answer
    content: str | None = None  # text sent alongside the tool calls
    event_delay: float = 0.0  # seconds between streamed events
    abort_after: int | None = None  # close the connection after this many events
    encoding: str | None = None  # content-encoding of the response
    events: int | None = None  # extra filler events for long streams
    status: int | None = None  # answer with this status and a server error body instead of the dialect's answer
    delay: float = 0.0  # seconds to wait before answering
    drop: bool = False  # close the connection without answering (after `delay`)
    pad: int = 0  # about this many bytes of answer text: a field of a JSON answer, events early in a stream
    corrupt: str | None = None  # "truncate" or "non-utf8": spoil a JSON answer, or the data of every stream event
    hold: str | None = None  # a name: wait until the test calls `FakeProvider.release(name)` (at most HOLD_SECONDS)
    hold_after: int | None = None  # streams: hold after this many events (-N: all but the last N) instead of before
    # text the model quotes (a key from a tool result, say) in its reasoning and its tool call arguments, or the
    # message of the error `status` answers with; the header carries it base64-encoded (it may hold newlines)
    say: str | None = None
    wording: str | None = None  # "2026": a provider's later wording of an error text, where the fake knows two
    # the call each tool turn makes when the request offers that tool: `FakeProvider.tool`, set by a test for a real
    # client, which cannot send x-fake-* headers (see `call_for`)
    tool: ToolCall | None = None

    @classmethod
    def from_headers(cls, headers: dict[str, str]) -> Options:
        def get(name: str, cast, default):
            value = headers.get(f"x-fake-{name}")
            return default if value is None else cast(value)

        return cls(
            parallel=get("parallel", int, 1),
            steps=get("steps", int, 1),
            content=get("content", str, None),
            event_delay=get("event-delay", float, 0.0),
            abort_after=get("abort-after", int, None),
            encoding=get("encoding", str, None),
            events=get("events", int, None),
            status=get("status", int, None),
            delay=get("delay", float, 0.0),
            drop=get("drop", lambda v: v.lower() in ("1", "true", "yes"), False),
            pad=get("pad", int, 0),
            corrupt=get("corrupt", str, None),
            hold=get("hold", str, None),
            hold_after=get("hold-after", int, None),
            say=get("say", lambda v: base64.b64decode(v).decode(), None),
            wording=get("wording", str, None),
        )


def call_for(options: Options, offered: list[Any]) -> ToolCall | None:
    """The call a test asked for, if the request offers its tool; None: the dialect picks a tool as it always has."""
    return options.tool if options.tool is not None and options.tool.name in offered else None


@dataclass
class Reply:
    status: int
    doc: Any = None  # a JSON body
    events: list[bytes] | None = None  # SSE events with their framing: a streamed answer
    headers: dict[str, str] = field(default_factory=dict)


class Dialect(Protocol):
    name: str

    def matches(self, path: str) -> bool: ...

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply: ...


def sse_event(data: Any, event: str | None = None) -> bytes:
    """One SSE event with real wire framing; `data` is JSON-encoded unless it is a str."""
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


SERVER_ERROR = {
    "error": {
        "message": "The server had an error while processing your request. Sorry about that!",
        "type": "server_error",
        "param": None,
        "code": None,
    }
}
PAD_PIECE = 16 * 1024  # answer text per filler event of a padded stream
HOLD_SECONDS = 120.0  # a held request goes on by itself after this long: a failing test must not hang the fake


def _filler(size: int) -> str:
    return ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * (size // 57 + 1))[:size]


def pad_reply(reply: Reply, size: int) -> None:
    """Makes an answer about `size` bytes longer with answer text, without touching what it carries."""
    if reply.events is not None:
        piece = _filler(PAD_PIECE)
        filler = [sse_event({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})] * max(
            1, size // PAD_PIECE
        )
        reply.events[1:1] = filler
    elif isinstance(reply.doc, dict):
        reply.doc = {**reply.doc, "x_fake_pad": _filler(size)}


def corrupt_json(payload: bytes, how: str) -> bytes:
    """A JSON text cut in half, or with a Latin-1 (not UTF-8) string added before its final brace."""
    if how == "truncate":
        return payload[: len(payload) // 2]
    if how == "non-utf8":
        head = payload.rstrip()
        return head[:-1] + b', "x_fake_note": "caf\xe9 cr\xe8me"}' if head.endswith(b"}") else payload + b"\xff"
    raise ValueError(how)


def corrupt_event(event: bytes, how: str) -> bytes:
    """An SSE event whose JSON data is spoilt (other events, such as [DONE], are left alone)."""
    head, sep, payload = event.rpartition(b"data: ")
    if not sep or not payload.startswith(b"{"):
        return event
    return head + sep + corrupt_json(payload[: -len(b"\n\n")], how) + b"\n\n"


def decode_body(raw: bytes, encoding: str | None) -> bytes:
    for name in reversed([n.strip() for n in (encoding or "").split(",") if n.strip()]):
        if name == "gzip":
            raw = gzip.decompress(raw)
        elif name == "br":
            raw = brotli.decompress(raw)
        elif name == "zstd":
            raw = zstandard.ZstdDecompressor().decompress(raw)
        elif name == "deflate":
            raw = zlib.decompress(raw)
    return raw


class _Compressor:
    """Compresses a stream piece by piece, flushing each piece so it can be read at once."""

    def __init__(self, encoding: str | None) -> None:
        self.encoding = encoding
        if encoding == "gzip":
            self._obj = zlib.compressobj(wbits=31)
        elif encoding == "deflate":
            self._obj = zlib.compressobj(wbits=15)
        elif encoding == "br":
            self._obj = brotli.Compressor()
        elif encoding == "zstd":
            self._obj = zstandard.ZstdCompressor().compressobj()
        elif encoding:
            raise ValueError(encoding)

    def piece(self, data: bytes) -> bytes:
        if not self.encoding:
            return data
        if self.encoding in ("gzip", "deflate"):
            return self._obj.compress(data) + self._obj.flush(zlib.Z_SYNC_FLUSH)
        if self.encoding == "br":
            return self._obj.process(data) + self._obj.flush()
        return self._obj.compress(data) + self._obj.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)

    def end(self) -> bytes:
        if not self.encoding:
            return b""
        if self.encoding in ("gzip", "deflate"):
            return self._obj.flush()
        if self.encoding == "br":
            return self._obj.finish()
        return self._obj.flush()


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client or proxy hanging up mid-answer is what the fault tests do on purpose: no traceback for it.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeProvider(LoopbackServer):
    server_class = _QuietServer

    def __init__(self) -> None:
        from . import fake_anthropic, fake_chat, fake_responses
        from .fake_bedrock import BedrockDialect
        from .fake_gemini import GeminiDialect

        super().__init__()
        self.requests: list[Recorded] = []
        self.chat = fake_chat.ChatFake()  # the providers a shared route reaches, picked by route and model
        self.responses = fake_responses.ResponsesFake(fake_responses.OpenAI())
        self.anthropic = fake_anthropic.MessagesFake(fake_anthropic.Anthropic())
        self.gemini = GeminiDialect()
        self.dialects: list[Dialect] = [self.responses, self.anthropic, self.gemini, self.chat]
        self.xai = fake_responses.ResponsesFake(fake_responses.Xai())
        self.dialects.insert(0, self.xai)  # before the OpenAI fake, which takes every other /responses path
        self.deepseek_responses = fake_responses.ResponsesFake(fake_responses.DeepSeek())
        self.dialects.insert(0, self.deepseek_responses)
        self.copilot_messages = fake_anthropic.MessagesFake(fake_anthropic.CopilotMessages())
        self.dialects.insert(0, self.copilot_messages)  # before the Anthropic fake, which takes every /v1/messages
        self.deepseek_anthropic = fake_anthropic.MessagesFake(fake_anthropic.DeepSeek())
        self.dialects.insert(0, self.deepseek_anthropic)
        self.vertex_anthropic = fake_anthropic.MessagesFake(fake_anthropic.Vertex())
        self.dialects.insert(0, self.vertex_anthropic)
        # Kimi, GLM, Qwen on DashScope, MiniMax, Cerebras and Mistral, each on a route of its own: ahead of `chat`,
        # which takes every chat completions path, and of the Anthropic fakes, whose routes end the same way.
        self.chat_hosts = fake_chat.routed_hosts()
        self.cerebras, self.mistral = self.chat_hosts["cerebras"], self.chat_hosts["mistral"]
        self.dialects[0:0] = self.chat_hosts.values()
        # Kimi's Anthropic-compatible route, ahead of the moonshot chat fake whose routes start the same way.
        self.kimi_anthropic = fake_anthropic.MessagesFake(fake_anthropic.Kimi())
        self.dialects.insert(0, self.kimi_anthropic)
        self.bedrock = BedrockDialect()
        self.dialects.append(self.bedrock)
        self._lock = threading.Lock()
        self._holds: dict[str, threading.Event] = {}
        self.tool: ToolCall | None = None  # the call each tool turn makes, where offered (`Options.tool`)

    @property
    def issued(self) -> dict[str, dict[str, str]]:
        """What the chat completions providers behind the shared route issued, by tool call id."""
        return self.chat.issued

    def handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(_Handler):
            fake = provider

        return Handler

    def record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def _hold_event(self, name: str) -> threading.Event:
        with self._lock:
            return self._holds.setdefault(name, threading.Event())

    def hold(self, name: str) -> None:
        """Where a request with `x-fake-hold: NAME` waits, until `release(NAME)` (or HOLD_SECONDS)."""
        self._hold_event(name).wait(HOLD_SECONDS)

    def release(self, name: str) -> None:
        """Lets the requests held under `name` go on, and any that come later pass straight through."""
        self._hold_event(name).set()

    def find(self, header: str, value: str) -> list[Recorded]:
        """The requests received so far whose request header `header` is `value`."""
        with self._lock:
            return [r for r in self.requests if r.headers.get(header.lower()) == value]

    def wait_for_request(self, header: str, value: str, timeout: float = 60.0) -> Recorded:
        """The first request with header `header` set to `value`, once it has arrived (it is recorded on arrival,
        before any delay or hold)."""
        deadline = time.monotonic() + timeout
        while not (found := self.find(header, value)):
            if time.monotonic() > deadline:
                raise AssertionError(f"no request with {header}: {value} reached the fake")
            time.sleep(0.02)
        return found[0]

    def last(self, path_suffix: str = "/chat/completions") -> Recorded:
        with self._lock:
            return next(r for r in reversed(self.requests) if path_suffix in r.path.split("?")[0])

    def dialect_for(self, path: str) -> Dialect | None:
        return next((d for d in self.dialects if d.matches(path)), None)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    fake: FakeProvider

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._send(Reply(200, {"ok": True, "path": self.path}), Options(), None)

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            doc = json.loads(decode_body(raw, headers.get("content-encoding")))
        except Exception:
            doc = None
        recorded = Recorded("POST", self.path, headers, raw, doc)
        self.fake.record(recorded)
        options = Options.from_headers(headers)
        options.tool = self.fake.tool
        if options.hold is not None and options.hold_after is None:
            self.fake.hold(options.hold)
        if options.delay:
            time.sleep(options.delay)
        if options.drop:  # as an upstream that gave up on the request: no status line, nothing
            self.close_connection = True
            self.connection.shutdown(2)
            return
        dialect = self.fake.dialect_for(self.path)
        if options.status is not None:
            error = (
                SERVER_ERROR if options.say is None else {"error": {**SERVER_ERROR["error"], "message": options.say}}
            )
            reply = Reply(options.status, error, headers={"retry-after": "1", "x-request-id": "req_fake_5xx"})
        elif dialect is None:
            reply = Reply(200, {"ok": True, "path": self.path, "length": len(raw)})
        elif not isinstance(doc, dict):
            message = "We could not parse the JSON body of your request."
            reply = Reply(400, {"error": {"message": message, "type": "invalid_request_error", "param": None}})
        else:
            reply = dialect.handle(doc, recorded, options)
        if options.pad and reply.status == 200:
            pad_reply(reply, options.pad)
        recorded.status = reply.status
        self._send(reply, options, recorded)

    def _send(self, reply: Reply, options: Options, recorded: Recorded | None) -> None:
        if reply.events is not None:
            return self._stream(reply, options, recorded)
        body = json.dumps(reply.doc).encode()
        if options.corrupt and reply.status == 200:
            body = corrupt_json(body, options.corrupt)
        if recorded is not None:
            recorded.sent += body
        encoding = options.encoding if reply.status == 200 else None
        if encoding:
            compressor = _Compressor(encoding)
            body = compressor.piece(body) + compressor.end()
        if recorded is not None:
            recorded.wire += body
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if encoding:
            self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, reply: Reply, options: Options, recorded: Recorded | None) -> None:
        compressor = _Compressor(options.encoding)
        self.send_response(reply.status)
        self.send_header("content-type", reply.headers.get("content-type", "text/event-stream"))
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        for name, value in reply.headers.items():
            if name != "content-type":  # a stream of another kind (Bedrock's event-stream frames) says so
                self.send_header(name, value)
        if options.encoding:
            self.send_header("content-encoding", options.encoding)
        self.end_headers()
        events = reply.events or []
        for count, event in enumerate(events):
            # hold_after counts from the end when negative: -1 holds before the last event.
            if options.hold is not None and options.hold_after in (count, count - len(events)):
                self.fake.hold(options.hold)
            if options.abort_after is not None and count >= options.abort_after:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # mid-stream, no terminating chunk
                return
            if options.corrupt:
                event = corrupt_event(event, options.corrupt)
            if recorded is not None:
                recorded.sent += event
            self._chunk(compressor.piece(event), recorded)
            if options.event_delay:
                time.sleep(options.event_delay)
        self._chunk(compressor.end(), recorded)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes, recorded: Recorded | None = None) -> None:
        if recorded is not None:
            recorded.wire += data
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()


# The fake in a process of its own, with a listen backlog that takes a burst of connections.
_OWN_PROCESS = """
import http.server, time
http.server.ThreadingHTTPServer.request_queue_size = 1024
from tests.support.fake_provider import FakeProvider
provider = FakeProvider().start()
print(provider.url, flush=True)
time.sleep(10**9)
"""


@contextmanager
def fake_provider_process() -> Iterator[str]:
    """A FakeProvider in a process of its own, so that it takes no time from the process that drives it; its URL."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen([sys.executable, "-c", _OWN_PROCESS], cwd=root, stdout=subprocess.PIPE, text=True)
    try:
        url = (process.stdout.readline() if process.stdout else "").strip()
        if not url:
            raise RuntimeError("the fake provider did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)
