"""The benchmark's fake provider: answers as fast as it can, so that the proxy is what gets measured.

Run as `python scripts/bench_upstream.py`; it prints "listening PORT". Requests
ask for what they want in headers, so the server never parses a body:
`x-bench-events: N` streams N chat completion chunks (reasoning first, a
quarter of them up to 500, then answer text, then a tool call carrying an
opaque value, as an agent's turn ends); `x-bench-event-bytes: B` pads each text chunk to about B bytes;
`x-bench-frames: N` streams a Bedrock ConverseStream answer of N AWS event-stream frames laid out the same way
(reasoning text, its signature, answer text, a tool use); `x-bench-dense: DIALECT` with `x-bench-events: N` streams
N events of that dialect in which nine in ten carry reasoning (see DENSE_STREAMS); `x-bench-pause-ms: MS` makes any
stream wait that long after its first event, as a provider's first token comes alone; anything else gets a small
JSON answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from llm_reasoning_proxy.wire.event_stream import MEDIA_TYPE, event_frame

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
def frame_stream(frames: int, reasoning: float | None = None) -> list[bytes]:
    """The frames of one streamed Bedrock Converse turn, as ConverseStream sends them (each with its padding `p`):
    `reasoning` of them carry reasoning text (by default a quarter, up to 500)."""

    def frame(kind: str, payload: dict) -> bytes:
        return event_frame(kind, json.dumps({**payload, "p": "abcdefghijklmnopqrstuvwxyz"[: len(out) % 26]}).encode())

    def delta(index: int, value: dict) -> bytes:
        return frame("contentBlockDelta", {"contentBlockIndex": index, "delta": value})

    out: list[bytes] = []
    out.append(frame("messageStart", {"role": "assistant"}))
    body = max(frames - 10, 2)
    thinking = min(body // 4, 500) if reasoning is None else int(body * reasoning)
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


# Streams dense with reasoning, one per way a provider streams it, shaped as captured from each (the fields and their
# order as the providers send them): nine events in ten carry a reasoning delta of a few tokens, then a short answer
# and a tool call carrying the turn's signature or opaque value, as an agent's turn ends.
DENSE_REASONING = 0.9


def _thought(i: int) -> str:
    return f" step {i}: the caller passes a naive datetime"


def _sse(payload: dict, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _chat_chunks(events: int, model: str, reasoning: Callable[[str], dict], ending: dict) -> list[bytes]:
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1763682744, "model": model}

    def chunk(delta: dict, finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    thinking = int(events * DENSE_REASONING)
    out = [chunk({"role": "assistant", "content": None, **reasoning(_thought(i))}) for i in range(thinking)]
    out += [chunk({"content": f" token{i}"}) for i in range(max(events - thinking - 2, 0))]
    call = {"index": 0, "id": "call_bench_turn", "type": "function"}
    call["function"] = {"name": "read", "arguments": '{"filePath": "README.md"}'}
    out.append(chunk({"content": None, "tool_calls": [call], **ending}, "tool_calls"))
    out.append(b"data: [DONE]\n\n")
    return out


def _anthropic(events: int) -> list[bytes]:
    def delta(index: int, value: dict) -> bytes:
        return _sse({"type": "content_block_delta", "index": index, "delta": value}, "content_block_delta")

    def block(kind: str, index: int, extra: dict | None = None) -> bytes:
        return _sse({"type": kind, "index": index, **(extra or {})}, kind)

    message = {"id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []}
    out = [_sse({"type": "message_start", "message": message}, "message_start")]
    out.append(
        block("content_block_start", 0, {"content_block": {"type": "thinking", "thinking": "", "signature": ""}})
    )
    thinking = int(events * DENSE_REASONING)
    out += [delta(0, {"type": "thinking_delta", "thinking": _thought(i)}) for i in range(thinking)]
    out.append(delta(0, {"type": "signature_delta", "signature": "E" + "b" * 1199}))
    out.append(block("content_block_stop", 0))
    out.append(block("content_block_start", 1, {"content_block": {"type": "text", "text": ""}}))
    out += [delta(1, {"type": "text_delta", "text": f" token{i}"}) for i in range(max(events - thinking - 12, 0))]
    out.append(block("content_block_stop", 1))
    use = {"type": "tool_use", "id": "toolu_bench_turn", "name": "read", "input": {}}
    out.append(block("content_block_start", 2, {"content_block": use}))
    out.append(delta(2, {"type": "input_json_delta", "partial_json": '{"filePath": "README.md"}'}))
    out.append(block("content_block_stop", 2))
    out.append(_sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}, "message_delta"))
    out.append(_sse({"type": "message_stop"}, "message_stop"))
    return out


def _responses(events: int) -> list[bytes]:
    sequence = iter(range(10**9))
    rs_id = "rs_bench" + "0" * 42

    def event(kind: str, **fields: object) -> bytes:
        return _sse({"type": kind, "sequence_number": next(sequence), **fields}, kind)

    response = {"id": "resp_bench", "object": "response", "status": "in_progress", "model": "gpt-5", "output": []}
    out = [event("response.created", response=response), event("response.in_progress", response=response)]
    out.append(event("response.output_item.added", output_index=0, item={"id": rs_id, "type": "reasoning"}))
    thinking = int(events * DENSE_REASONING)
    out += [
        event(
            "response.reasoning_summary_text.delta",
            item_id=rs_id,
            output_index=0,
            summary_index=0,
            delta=_thought(i),
            obfuscation="cEzFsirYKOK",
        )
        for i in range(thinking)
    ]
    summary = [{"type": "summary_text", "text": "".join(_thought(i) for i in range(thinking))}]
    reasoning = {"id": rs_id, "type": "reasoning", "summary": summary, "encrypted_content": "gAAAA" + "b" * 1195}
    out.append(event("response.output_item.done", output_index=0, item=reasoning))
    message = "msg_bench" + "0" * 41
    out += [
        event("response.output_text.delta", item_id=message, output_index=1, content_index=0, delta=f" token{i}")
        for i in range(max(events - thinking - 6, 0))
    ]
    call = {
        "id": "fc_bench",
        "type": "function_call",
        "call_id": "call_bench_turn",
        "name": "read",
        "arguments": '{"filePath": "README.md"}',
        "status": "completed",
    }
    out.append(event("response.output_item.done", output_index=2, item=call))
    done = {**response, "status": "completed", "output": [reasoning, call]}
    out.append(event("response.completed", response=done))
    return out


def _gemini(events: int) -> list[bytes]:
    def chunk(part: dict) -> bytes:
        candidate = {"content": {"parts": [part], "role": "model"}, "index": 0}
        usage = {"promptTokenCount": 34, "totalTokenCount": 102, "thoughtsTokenCount": 68}
        return _sse(
            {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-2.5-pro", "responseId": "bench"}
        )

    thinking = int(events * DENSE_REASONING)
    out = [chunk({"text": _thought(i), "thought": True}) for i in range(thinking)]
    out += [chunk({"text": f" token{i}"}) for i in range(max(events - thinking - 1, 0))]
    call = {"name": "read", "args": {"filePath": "README.md"}, "id": "call_bench_turn"}
    out.append(chunk({"functionCall": call, "thoughtSignature": "E" + "b" * 1199}))
    return out


DENSE_STREAMS: dict[str, Callable[[int], list[bytes]]] = {
    # DeepSeek, Kimi, GLM, Qwen: reasoning_content deltas.
    "chat_reasoning_content": lambda n: _chat_chunks(
        n, "deepseek-v4-flash", lambda text: {"reasoning_content": text}, {}
    ),
    # GitHub Copilot: reasoning_text deltas, the opaque value with the tool call.
    "chat_reasoning_text": lambda n: _chat_chunks(
        n, "gemini-3-pro-preview", lambda text: {"reasoning_text": text}, {"reasoning_opaque": "b" * 1200}
    ),
    # OpenRouter: reasoning and reasoning_details deltas, the encrypted detail with the tool call.
    "chat_reasoning_details": lambda n: _chat_chunks(
        n,
        "openai/gpt-5.4-mini",
        lambda text: {
            "reasoning": text,
            "reasoning_details": [
                {"type": "reasoning.summary", "summary": text, "format": "openai-responses-v1", "index": 0}
            ],
        },
        {
            "reasoning_details": [
                {
                    "type": "reasoning.encrypted",
                    "data": "gAAAA" + "b" * 1195,
                    "format": "openai-responses-v1",
                    "index": 0,
                }
            ]
        },
    ),
    "anthropic": _anthropic,
    "responses": _responses,
    "gemini": _gemini,
    "bedrock": lambda n: frame_stream(n, DENSE_REASONING),
}


@lru_cache(maxsize=16)
def dense_stream(dialect: str, events: int) -> list[bytes]:
    return DENSE_STREAMS[dialect](events)


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
        dense = self.headers.get("x-bench-dense")
        if not events and not frames:
            answer = SMALL if not self.headers.get("x-bench-echo") else json.dumps({"received": len(body)}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)
            return
        self.send_response(200)
        aws = frames or dense == "bedrock"
        self.send_header("content-type", MEDIA_TYPE if aws else "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        if dense:
            pieces = dense_stream(dense, events)
        elif frames:
            pieces = frame_stream(frames)
        else:
            pieces = event_stream(events, int(self.headers.get("x-bench-event-bytes") or 0))
        pause = float(self.headers.get("x-bench-pause-ms") or 0) / 1000
        for i, event in enumerate(pieces):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            if pause and i == 0:
                time.sleep(pause)
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
