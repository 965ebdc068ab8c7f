"""Answers built to be expensive to read: many fragments that would defeat a reader that scans a list for each.

Each function gives a whole streamed answer (SSE bytes) with `n` such fragments.
"""

from __future__ import annotations

import functools
import json
import zlib

import brotli
import zstandard


def chat_details(n: int) -> bytes:
    events = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    for i in range(n):
        events.append(
            {
                "id": "c1",
                "choices": [
                    {"index": 0, "delta": {"reasoning_details": [{"type": "reasoning.text", "index": i, "text": "x"}]}}
                ],
            }
        )
    events.append(
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f", "arguments": "{}"}}]
                    },
                }
            ],
        }
    )
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def chat_calls_without_index(n: int) -> bytes:
    events = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "r"}}]}
    ]
    for i in range(n):
        events.append(
            {
                "id": "c1",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"id": f"call_{i}", "function": {"name": "f", "arguments": "{}"}}]},
                    }
                ],
            }
        )
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def chat_whitespace_content(n: int) -> bytes:
    """Content of 64 spaces a chunk, never anything else: the reader cannot tell whether a `<think>` block begins."""
    events = [{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}]
    events += [{"id": "c1", "choices": [{"index": 0, "delta": {"content": " " * 64}}]}] * n
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def chat_think_choices(n: int) -> bytes:
    """Chunk i closes choice i's `<think>` block and opens one in choice i+1: a new choice, whose block is open,
    in every chunk."""
    events = [
        {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "<think>"}}]}
    ]
    for i in range(n):
        choices = [{"index": i, "delta": {"content": "</think>x"}}, {"index": i + 1, "delta": {"content": "<think>"}}]
        events.append({"id": "c1", "choices": choices})
    return b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def responses_items_without_index(n: int) -> bytes:
    events = [{"type": "response.created", "response": {"id": "resp_1", "model": "m", "output": []}}]
    events.append(
        {
            "type": "response.output_item.done",
            "item": {"id": "rs_1", "type": "reasoning", "encrypted_content": "e", "summary": []},
        }
    )
    for i in range(n):
        events.append(
            {
                "type": "response.output_item.done",
                "item": {
                    "id": f"fc_{i}",
                    "type": "function_call",
                    "call_id": f"call_{i}",
                    "name": "f",
                    "arguments": "{}",
                },
            }
        )
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


def anthropic_blocks(n: int) -> bytes:
    events = [{"type": "message_start", "message": {"id": "msg_1", "model": "claude", "content": []}}]
    events.append({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}})
    events += [{"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "x"}}] * n
    events.append({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}})
    events.append({"type": "content_block_stop", "index": 0})
    for i in range(1, n // 10 + 2):
        events.append(
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "f", "input": {}},
            }
        )
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_stop"})
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + json.dumps(e).encode() + b"\n\n" for e in events)


def gemini_parts(n: int) -> bytes:
    events = []
    for i in range(n):
        part = {"functionCall": {"name": "f", "args": {"i": i}}, "thoughtSignature": f"sig{i}"}
        events.append(
            {
                "responseId": "r1",
                "modelVersion": "gemini-3-pro-preview",
                "candidates": [{"index": 0, "content": {"role": "model", "parts": [part]}}],
            }
        )
    return b"".join(b"data: " + json.dumps(e).encode() + b"\r\n\r\n" for e in events)


@functools.lru_cache(maxsize=8)
def bomb(encoding: str, size: int = 1 << 30, content: bytes = b"\0") -> bytes:
    """`size` bytes of `content` repeated (zeros by default), compressed with `encoding` ("br", "gzip",
    "deflate", "zstd"), made piece by piece: 1 GiB of zeros is 1.7 KB of brotli."""
    piece = content * ((16 << 20) // len(content))
    if encoding == "br":
        compressor = brotli.Compressor(quality=5)
        out = [compressor.process(piece) for _ in range(size // len(piece))]
        return b"".join(out) + compressor.finish()
    if encoding == "zstd":
        compressor = zstandard.ZstdCompressor(level=3).compressobj()
        out = [compressor.compress(piece) for _ in range(size // len(piece))]
        return b"".join(out) + compressor.flush()
    compressor = zlib.compressobj(9, wbits=31 if encoding == "gzip" else 15)
    out = [compressor.compress(piece) for _ in range(size // len(piece))]
    return b"".join(out) + compressor.flush()
