"""The benchmark's fake provider: answers as fast as it can, so that the proxy is what gets measured.

Run as `python scripts/bench_upstream.py`; it prints "listening PORT". Requests
ask for what they want in headers, so the server never parses a body:
`x-bench-events: N` streams N chat completion chunks (reasoning first, a
quarter of them up to 500, then answer text, then a tool call carrying an
opaque value, as an agent's turn ends); `x-bench-event-bytes: B` pads each text chunk to about B bytes;
`x-bench-frames: N` streams a Bedrock ConverseStream answer of N AWS event-stream frames laid out the same way
(reasoning text, its signature, answer text, a tool use); anything else gets a small JSON answer.
"""

from __future__ import annotations

import json
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from llm_reasoning_proxy.event_stream import MEDIA_TYPE, event_frame

SMALL = json.dumps(
    {
        "id": "r",
        "object": "chat.completion",
        "model": "bench",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    }
).encode()


@lru_cache(maxsize=16)
def event_stream(events: int, event_bytes: int) -> list[bytes]:
    """The events of one streamed turn, with real wire framing."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "deepseek-v4-flash"}
    pad = "x" * max(0, event_bytes - 200)
    out = []
    for i in range(max(events - 1, 0)):
        if i < min(events // 4, 500):
            delta = {"role": "assistant", "content": None, "reasoning_content": f"thinking {i} {pad}"}
        else:
            delta = {"role": "assistant", "content": f" token{i}{pad}"}
        out.append(b"data: " + json.dumps({**head, "choices": [{"index": 0, "delta": delta}]}).encode() + b"\n\n")
    call = {
        "index": 0,
        "id": "call_bench_turn",
        "type": "function",
        "function": {"name": "read", "arguments": '{"filePath": "README.md"}'},
    }
    last = {"content": None, "tool_calls": [call], "reasoning_opaque": "b" * 1200}
    out.append(
        b"data: "
        + json.dumps({**head, "choices": [{"index": 0, "delta": last, "finish_reason": "tool_calls"}]}).encode()
        + b"\n\n"
    )
    out.append(b"data: [DONE]\n\n")
    return out


@lru_cache(maxsize=16)
def frame_stream(frames: int) -> list[bytes]:
    """The frames of one streamed Bedrock Converse turn, as ConverseStream sends them (each with its padding `p`)."""

    def frame(kind: str, payload: dict) -> bytes:
        return event_frame(kind, json.dumps({**payload, "p": "abcdefghijklmnopqrstuvwxyz"[: len(out) % 26]}).encode())

    def delta(index: int, value: dict) -> bytes:
        return frame("contentBlockDelta", {"contentBlockIndex": index, "delta": value})

    out: list[bytes] = []
    out.append(frame("messageStart", {"role": "assistant"}))
    body = max(frames - 10, 2)
    thinking = min(body // 4, 500)
    out += [delta(0, {"reasoningContent": {"text": f"thinking {i} "}}) for i in range(thinking)]
    out.append(delta(0, {"reasoningContent": {"signature": "E" + "b" * 1199}}))
    out.append(frame("contentBlockStop", {"contentBlockIndex": 0}))
    out += [delta(1, {"text": f" token{i}"}) for i in range(body - thinking)]
    out.append(frame("contentBlockStop", {"contentBlockIndex": 1}))
    use = {"toolUseId": "tooluse_bench_turn", "name": "read"}
    out.append(frame("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": use}}))
    out.append(delta(2, {"toolUse": {"input": '{"filePath": "README.md"}'}}))
    out.append(frame("contentBlockStop", {"contentBlockIndex": 2}))
    out.append(frame("messageStop", {"stopReason": "tool_use"}))
    out.append(frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}}))
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # otherwise small answers stall 40 ms (Nagle and delayed ACK)

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        events = int(self.headers.get("x-bench-events") or 0)
        frames = int(self.headers.get("x-bench-frames") or 0)
        if not events and not frames:
            answer = SMALL if not self.headers.get("x-bench-echo") else json.dumps({"received": len(body)}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        self.send_response(200)
        self.send_header("content-type", MEDIA_TYPE if frames else "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        pieces = (
            frame_stream(frames) if frames else event_stream(events, int(self.headers.get("x-bench-event-bytes") or 0))
        )
        for event in pieces:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
        self.wfile.write(b"0\r\n\r\n")


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # the default backlog of 5 resets a burst of 32 connections
    daemon_threads = True


def main() -> None:
    server = Server(("127.0.0.1", 0), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
