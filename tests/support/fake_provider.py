"""A fake LLM provider on loopback that enforces the real providers' rules and error texts.

Dialects are chosen by model name, as the real services would see them:

* "gemini-*" is GitHub Copilot serving Gemini: answers carry `reasoning_text`
  and `reasoning_opaque`; the next request must carry the opaque it issued on
  every assistant tool-call message of the current turn, and `content: []` is
  refused with Copilot's `invalid_request_body`.
* "deepseek-*" is DeepSeek thinking mode: answers carry `reasoning_content`;
  every assistant tool-call message sent back must carry it.
* anything else is a plain OpenAI-compatible host with no reasoning rules.

Per-request behaviour is set with `x-fake-*` request headers (see `_Options`).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import threading
import time
import uuid
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import brotli
import zstandard

COPILOT_INVALID_BODY = {"error": {"message": "invalid request body", "code": "invalid_request_body"}}
VERTEX_MISSING_SIGNATURE = (
    "Unable to submit request because function call `default_api:{name}` in the {block}. content block is "
    "missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/"
    "thought-signatures"
)
DEEPSEEK_MISSING_REASONING = (
    "Missing `reasoning_content` field in the assistant message at message index {index}. For more "
    "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
)


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes  # as received on the wire (still content-encoded)
    doc: Any  # parsed JSON of the decoded body, or None
    status: int = 0
    sent: bytearray = field(default_factory=bytearray)  # response body before content-encoding


@dataclass
class _Options:
    parallel: int = 1  # tool calls per tool turn
    steps: int = 1  # tool turns before the final answer
    content: str | None = None  # text sent alongside the tool calls
    event_delay: float = 0.0  # seconds between streamed events
    abort_after: int | None = None  # close the connection after this many events
    encoding: str | None = None  # content-encoding of the response
    events: int | None = None  # extra filler events for long streams

    @classmethod
    def from_headers(cls, headers: dict[str, str]) -> _Options:
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
        )


def _decode_body(raw: bytes, encoding: str | None) -> bytes:
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


def dialect_of(model: str) -> str:
    if model.startswith("gemini"):
        return "copilot"
    if model.startswith("deepseek"):
        return "deepseek"
    return "plain"


def _gemini_block_number(messages: list[dict], position: int) -> int:
    """1-based index into the Gemini `contents` Copilot builds: system messages leave, tool results merge."""
    block = 0
    previous_role = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "system":
            continue
        if not (role == "tool" and previous_role == "tool"):
            block += 1
        previous_role = role
        if index == position:
            return block
    return block


class FakeProvider:
    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.issued: dict[str, dict[str, str]] = {}  # tool call id -> reasoning fields issued with it
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeProvider:
        provider = self

        class Handler(_Handler):
            fake = provider

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
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

    def record(self, recorded: Recorded) -> None:
        with self._lock:
            self.requests.append(recorded)

    def last(self, path_suffix: str = "/chat/completions") -> Recorded:
        with self._lock:
            return next(r for r in reversed(self.requests) if r.path.split("?")[0].endswith(path_suffix))

    # rules -----------------------------------------------------------------------------------
    def validate(self, doc: dict) -> tuple[int, dict] | None:
        model = str(doc.get("model", ""))
        messages = doc.get("messages") or []
        dialect = dialect_of(model)
        if dialect == "copilot":
            return self._validate_copilot(messages)
        if dialect == "deepseek":
            return self._validate_deepseek(messages)
        return None

    def _validate_copilot(self, messages: list[dict]) -> tuple[int, dict] | None:
        for message in messages:
            if message.get("role") == "assistant" and message.get("content") == []:
                return 400, COPILOT_INVALID_BODY
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        for index, message in enumerate(messages):
            calls = message.get("tool_calls") or []
            if index < last_user or message.get("role") != "assistant" or not calls:
                continue
            opaque = message.get("reasoning_opaque")
            if opaque is None:
                name = calls[0].get("function", {}).get("name", "")
                text = VERTEX_MISSING_SIGNATURE.format(name=name, block=_gemini_block_number(messages, index))
                return 400, {"error": {"message": text, "code": "invalid_request_body"}}
            issued = self.issued.get(calls[0].get("id", ""), {}).get("reasoning_opaque")
            if opaque != issued:
                return 400, {"error": {"message": "Thought signature is not valid.", "code": "invalid_request_body"}}
        return None

    def _validate_deepseek(self, messages: list[dict]) -> tuple[int, dict] | None:
        for index, message in enumerate(messages):
            if (
                message.get("role") == "assistant"
                and message.get("tool_calls")
                and message.get("reasoning_content") is None
            ):
                return 400, {
                    "error": {
                        "message": DEEPSEEK_MISSING_REASONING.format(index=index),
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_request_error",
                    }
                }
        return None

    # answers ---------------------------------------------------------------------------------
    def answer(self, doc: dict, options: _Options) -> tuple[dict, list[dict]]:
        """The whole answer message and the stream chunks that carry it."""
        model = str(doc.get("model", ""))
        dialect = dialect_of(model)
        messages = doc.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        done_steps = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant" and m.get("tool_calls"))
        response_id = uuid.uuid4().hex[:24]
        if messages and messages[-1].get("role") in ("user", "tool") and done_steps < options.steps:
            message, chunks = self._tool_turn(doc, dialect, options)
        else:
            message, chunks = self._final_turn(dialect, options)
        for chunk in chunks:
            chunk.update(
                {"id": response_id, "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
            )
        return {
            "id": response_id,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {"index": 0, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop", "message": message}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }, chunks

    def _tool_turn(self, doc: dict, dialect: str, options: _Options) -> tuple[dict, list[dict]]:
        tools = [t.get("function", {}).get("name") for t in doc.get("tools") or [] if isinstance(t, dict)]
        name = next((t for t in tools if t), "list_directory")
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:20]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps({"path": f"dir{i}"})},
            }
            for i in range(options.parallel)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": options.content}
        chunks: list[dict] = []

        def delta(d: dict, finish: str | None = None) -> dict:
            return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

        if dialect == "copilot":
            text = f"**Planning**\n\nI should call `{name}` to answer.\n\n"
            opaque = base64.b64encode(os.urandom(96)).decode()
            message.update({"reasoning_text": text, "reasoning_opaque": opaque})
            fields = {"reasoning_opaque": opaque, "reasoning_text": text}
            half = len(text) // 2
            chunks += [
                delta({"content": None, "role": "assistant", "reasoning_text": text[:half]}),
                delta({"content": None, "role": "assistant", "reasoning_text": text[half:]}),
            ]
            chunks += [delta({"content": None, "role": "assistant"}) for _ in range(options.events or 0)]
            if options.content:
                chunks.append(delta({"content": options.content, "role": "assistant"}))
            for i, call in enumerate(calls):
                d: dict[str, Any] = {"content": None, "role": "assistant", "tool_calls": [{**call, "index": i}]}
                if i == 0:
                    d["reasoning_opaque"] = opaque
                chunks.append(delta(d, "tool_calls" if i == len(calls) - 1 else None))
        elif dialect == "deepseek":
            text = f"The user wants a listing. I will call {name}."
            message["reasoning_content"] = text
            message["content"] = options.content or ""
            fields = {"reasoning_content": text}
            chunks.append(delta({"role": "assistant", "content": None, "reasoning_content": ""}))
            chunks += [delta({"content": None, "reasoning_content": piece}) for piece in re.findall(r"\S+\s*", text)]
            chunks += [delta({"content": None, "reasoning_content": ""}) for _ in range(options.events or 0)]
            for i, call in enumerate(calls):
                chunks.append(
                    delta(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {"name": name, "arguments": ""},
                                }
                            ]
                        }
                    )
                )
                arguments = call["function"]["arguments"]
                for j in range(0, len(arguments), 4):
                    chunks.append(
                        delta({"tool_calls": [{"index": i, "function": {"arguments": arguments[j : j + 4]}}]})
                    )
            chunks.append(delta({"content": "", "reasoning_content": None}, "tool_calls"))
        else:
            fields = {}
            for i, call in enumerate(calls):
                chunks.append(delta({"role": "assistant", "tool_calls": [{**call, "index": i}]}))
            chunks.append(delta({}, "tool_calls"))
        message["tool_calls"] = calls
        with self._lock:
            for call in calls:
                self.issued[call["id"]] = fields
        return message, chunks

    def _final_turn(self, dialect: str, options: _Options) -> tuple[dict, list[dict]]:
        words = ["The", " directory", " holds", " two", " files."] + [" More."] * (options.events or 0)
        message: dict[str, Any] = {"role": "assistant", "content": "".join(words)}
        chunks = [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": w}, "finish_reason": None}]}
            for w in words
        ]
        chunks[-1]["choices"][0]["finish_reason"] = "stop"
        if dialect == "deepseek":
            message["reasoning_content"] = "Summarise the listing."
        return message, chunks


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    fake: FakeProvider

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_GET(self) -> None:  # noqa: N802
        self._json(200, {"ok": True, "path": self.path})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            doc = json.loads(_decode_body(raw, headers.get("content-encoding")))
        except Exception:
            doc = None
        recorded = Recorded("POST", self.path, headers, raw, doc)
        self.fake.record(recorded)
        if not self.path.split("?")[0].endswith("/chat/completions"):
            recorded.status = 200
            return self._json(200, {"ok": True, "path": self.path, "length": len(raw)}, recorded=recorded)
        if not isinstance(doc, dict):
            recorded.status = 400
            return self._json(
                400,
                {
                    "error": {
                        "message": "We could not parse the JSON body of your request.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        error = self.fake.validate(doc)
        if error is not None:
            recorded.status = error[0]
            return self._json(*error, recorded=recorded)
        recorded.status = 200
        options = _Options.from_headers(headers)
        whole, chunks = self.fake.answer(doc, options)
        if doc.get("stream"):
            self._stream(chunks, options, recorded)
        else:
            self._json(200, whole, options.encoding, recorded)

    def _json(self, status: int, doc: Any, encoding: str | None = None, recorded: Recorded | None = None) -> None:
        body = json.dumps(doc).encode()
        if recorded is not None:
            recorded.sent += body
        if encoding:
            compressor = _Compressor(encoding)
            body = compressor.piece(body) + compressor.end()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if encoding:
            self.send_header("content-encoding", encoding)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _stream(self, chunks: list[dict], options: _Options, recorded: Recorded) -> None:
        compressor = _Compressor(options.encoding)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        if options.encoding:
            self.send_header("content-encoding", options.encoding)
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
        for count, event in enumerate(events):
            if options.abort_after is not None and count >= options.abort_after:
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(2)  # mid-stream, no terminating chunk
                return
            recorded.sent += event
            self._chunk(compressor.piece(event))
            if options.event_delay:
                time.sleep(options.event_delay)
        tail = compressor.end()
        if tail:
            self._chunk(tail)
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
