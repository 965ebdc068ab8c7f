"""Answers built to be expensive to read: many fragments that would defeat a reader that scans a list for each.

Each function gives a whole streamed answer (SSE bytes) with `n` such fragments.
"""

from __future__ import annotations

import json


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
