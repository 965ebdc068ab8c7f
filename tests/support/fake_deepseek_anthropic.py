"""Fake DeepSeek Anthropic-compatible Messages API (`POST …/anthropic/v1/messages`).

Answers as DeepSeek's /anthropic route does (https://api-docs.deepseek.com/guides/anthropic_api): thinking is on
unless the request sets `thinking.type` to "disabled"; a tool turn is a `thinking` block whose `signature` is the
message id, a bare UUID (https://github.com/NousResearch/hermes-agent/pull/21048), then `x-fake-parallel` `tool_use`
blocks; after the tool results (`x-fake-steps` tool turns) comes a final text answer. A stream opens the thinking
block without a `signature` key and sends none after it
(https://github.com/QuantumNous/new-api/issues/4762, https://github.com/Alishahryar1/free-claude-code/pull/599).

Its rules, with DeepSeek's texts:

* a `redacted_thinking` block anywhere is refused whole (HTTP 422): the Rust deserializer knows no such variant;
* with thinking on, every assistant message holding `tool_use` blocks must carry a thinking block, in every later
  request (HTTP 400, in an OpenAI-style envelope: https://github.com/OEvortex/aether/issues/31,
  https://github.com/NousResearch/hermes-agent/issues/17992). Only its presence is checked here: clients that send the
  block back without its signature are answered, so DeepSeek does not seem to verify what it holds.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

FINAL_ANSWER = "The directory holds two files."
THINKING_MISSING = "The `content[].thinking` in the thinking mode must be passed back to the API."
# The deserializer's text as third-party tests quote it (the full list of variants is not quoted anywhere), in the
# envelope of https://github.com/zhukunpenglinyutong/jetbrains-cc-gui/issues/591.
REDACTED_UNKNOWN = (
    "Failed to deserialize the JSON body into the target type: messages[{index}].content: unknown variant "
    "`redacted_thinking`, expected one of `text`, `thinking` at line 1 column {column}"
)


def error(status: int, message: str) -> Reply:
    body = {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": "invalid_request_error"}
    }
    return Reply(status, body)


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _has(message: Any, kind: str) -> bool:
    return any(isinstance(block, dict) and block.get("type") == kind for block in _blocks(message))


def thinks(doc: dict) -> bool:
    thinking = doc.get("thinking")
    return not (isinstance(thinking, dict) and thinking.get("type") == "disabled")


class DeepSeekAnthropicFake:
    name = "deepseek_anthropic"

    def __init__(self) -> None:
        self.issued: dict[str, dict] = {}  # tool_use id -> the thinking block issued with it
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?")[0].rstrip("/").endswith("/anthropic/v1/messages")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        messages = doc.get("messages") or []
        for index, message in enumerate(messages):
            if _has(message, "redacted_thinking"):
                column = recorded.body.find(b'"redacted_thinking"') + 1
                return error(422, REDACTED_UNKNOWN.format(index=index, column=column))
        if thinks(doc):
            for message in messages:
                if message.get("role") == "assistant" and _has(message, "tool_use") and not _has(message, "thinking"):
                    return error(400, THINKING_MISSING)
        message = self.answer(doc, options)
        if doc.get("stream"):
            return Reply(200, events=stream_events(message))
        return Reply(200, message)

    def answer(self, doc: dict, options: Options) -> dict:
        messages = doc.get("messages") or []
        message_id = str(uuid.uuid4())
        tool_turns = sum(1 for m in messages if m.get("role") == "assistant" and _has(m, "tool_use"))
        content: list[dict] = []
        if thinks(doc):
            text = f'The user asks what is in a directory (step {tool_turns + 1}).\nI should list it — "ok" ✓.'
            content.append({"type": "thinking", "thinking": text, "signature": message_id})
        if tool_turns < options.steps:
            uses = [
                {"type": "tool_use", "id": f"call_{uuid.uuid4().hex[:24]}", "name": "list_directory", "input": {}}
                for _ in range(options.parallel)
            ]
            for i, use in enumerate(uses):
                use["input"] = {"path": f"dir{i}"}
            with self._lock:
                for use in uses:
                    self.issued[use["id"]] = dict(content[0]) if content else {}
            content += uses
            stop_reason = "tool_use"
        else:
            content.append({"type": "text", "text": FINAL_ANSWER})
            stop_reason = "end_turn"
        return {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": str(doc.get("model", "")),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }


def stream_events(message: dict) -> list[bytes]:
    """The SSE events that carry `message`: no signature in the stream."""
    events = []

    def emit(data: dict) -> None:
        events.append(sse_event(data, data["type"]))

    def delta(index: int, value: dict) -> None:
        emit({"type": "content_block_delta", "index": index, "delta": value})

    emit({"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "thinking":
            emit({"type": "content_block_start", "index": index, "content_block": {"type": "thinking", "thinking": ""}})
            for piece in re.findall(r"\S+\s*|\s+", block["thinking"]):
                delta(index, {"type": "thinking_delta", "thinking": piece})
        elif kind == "tool_use":
            emit({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}})
            delta(index, {"type": "input_json_delta", "partial_json": json.dumps(block["input"])})
        else:
            emit({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            delta(index, {"type": "text_delta", "text": block["text"]})
        emit({"type": "content_block_stop", "index": index})
    emit({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}, "usage": {"output_tokens": 5}})
    emit({"type": "message_stop"})
    return events
