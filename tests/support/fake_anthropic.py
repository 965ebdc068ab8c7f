"""Fake Anthropic Messages dialect (`POST /v1/messages`): extended thinking with signed blocks.

Answers as the real API does with `thinking` on: a tool turn is a `thinking`
block (text + `signature`), optionally a `text` block (`x-fake-content`), then
`x-fake-parallel` `tool_use` blocks; after the tool results (`x-fake-steps`
tool turns) comes a final text answer. `x-fake-redacted: 1` gives a
`redacted_thinking` block instead of the thinking block, `x-fake-redacted: both`
gives one after it. Streams use the real event sequence (`message_start`,
`content_block_start`/`_delta`/`_stop` with `thinking_delta`, a
`signature_delta` just before the block's stop, `input_json_delta`,
`message_delta`, `message_stop`).

With thinking on, it refuses (400, Anthropic's error envelope) what the API
refuses, with the API's texts:

* a thinking block whose `signature` was not issued for exactly its text, or a
  `redacted_thinking` block whose `data` was not issued, in any message; either
  issued for another model counts as not issued (a switch from one Claude model
  to another gets "Invalid `signature` in `thinking` block": vybestack/llxprt-code
  #2335, Roo-Code #10461);
* a final assistant message holding `tool_use` blocks that does not start with
  a thinking block;
* a final assistant message whose thinking blocks are not the ones issued with
  its `tool_use` ids, in order;
* for a `claude-fable-5…` model or with `x-fake-binding: 1` (see `Binding`): a
  thinking block sent back under another system prompt, other tools or other
  earlier messages than the request that produced it had.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

THINKING_TYPES = ("thinking", "redacted_thinking")
# The current docs.claude.com wording, as https://github.com/mastra-ai/mastra/issues/9277 quotes it.
MISSING_THINKING = (
    "messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When "
    "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost "
    "set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To "
    "avoid this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
# API errors quoted verbatim in https://github.com/anthropics/claude-code/issues/10627 and, for MODIFIED,
# https://github.com/anthropics/claude-code/issues/25361.
INVALID_SIGNATURE = "messages.{index}.content.{block}: Invalid `signature` in `thinking` block"
MODIFIED = (
    "messages.{index}.content.{block}: `thinking` or `redacted_thinking` blocks in the latest assistant message "
    "cannot be modified. These blocks must remain as they were in the original response."
)
# anthropics/claude-code issue #56708 (an API error quoted verbatim).
INVALID_DATA = "messages.{index}.content.{block}: Invalid `data` in `redacted_thinking` block"
FINAL_ANSWER = "The directory holds two files."
# Block binding (platform.claude.com preserved-thinking docs), as anomalyco/opencode #48637 quotes it: the text, the
# sentence said when the request lacks the beta header its remedy needs, and the one cause-naming tail quoted.
BOUND_ELSEWHERE = (
    "messages.{index}.content.{block}: Invalid `signature` in `thinking` block. The block is bound to a different "
    'conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
)
BINDING_BETA = "thinking-binding-controls-2026-08-01"
BINDING_NEEDS_BETA = f" That setting requires the `{BINDING_BETA}` value in the `anthropic-beta` header."
SYSTEM_CHANGED = " The `system` prompt differs from the one this block was created with."


def thinking_enabled(doc: dict) -> bool:
    thinking = doc.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") not in (None, "disabled")


def error(message: str) -> Reply:
    return Reply(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": message},
            "request_id": f"req_{uuid.uuid4().hex[:24]}",
        },
    )


def _blocks(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _tool_uses(message: Any) -> list[dict]:
    return [b for b in _blocks(message) if isinstance(b, dict) and b.get("type") == "tool_use"]


def _is_role(message: Any, role: str) -> bool:
    return isinstance(message, dict) and message.get("role") == role


def _loop_start(messages: list[Any]) -> int:
    """Just after the last user prompt: user turns holding tool results continue the loop."""
    start = index = 0
    while index < len(messages):
        end = index
        while end < len(messages) and _is_role(messages[end], "user"):
            end += 1
        if end == index:
            index += 1
            continue
        # Consecutive user messages are one turn to the API.
        results = [b for m in messages[index:end] for b in _blocks(m) if isinstance(b, dict)]
        if not any(b.get("type") == "tool_result" for b in results):
            start = end
        index = end
    return start


def _random_id(prefix: str) -> str:
    return prefix + base64.b32encode(os.urandom(15)).decode().lower()


def _opaque(size: int) -> str:
    return "Eq" + base64.b64encode(os.urandom(size)).decode()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


class Binding:
    """Claude Fable 5.1 and later: a thinking signature is bound to the prefix it was created under (the top-level
    `system`, the `tools`, every earlier message), and a block sent under another one is refused. Only the changed
    system prompt is named in the error: it is the one cause-naming tail seen."""

    def __init__(self) -> None:
        self.prefixes: dict[str, tuple[str, str, list[str]]] = {}  # signature -> (system, tools, messages) as JSON
        self._lock = threading.Lock()

    @staticmethod
    def applies(doc: dict, recorded: Recorded) -> bool:
        return str(doc.get("model", "")).startswith("claude-fable-5") or recorded.headers.get("x-fake-binding") == "1"

    @staticmethod
    def _prefix(doc: dict, messages: list[Any]) -> tuple[str, str, list[str]]:
        return _canonical(doc.get("system")), _canonical(doc.get("tools")), [_canonical(m) for m in messages]

    def check(self, doc: dict, recorded: Recorded) -> str | None:
        messages = doc.get("messages")
        if not self.applies(doc, recorded) or not isinstance(messages, list):
            return None
        for index, message in enumerate(messages):
            for position, block in enumerate(_blocks(message)):
                if not isinstance(block, dict) or block.get("type") != "thinking":
                    continue
                with self._lock:
                    bound = self.prefixes.get(str(block.get("signature")))
                prefix = self._prefix(doc, messages[:index])
                if bound is None or bound == prefix:
                    continue
                text = BOUND_ELSEWHERE.format(index=index, block=position)
                if BINDING_BETA not in recorded.headers.get("anthropic-beta", ""):
                    text += BINDING_NEEDS_BETA
                return text + (SYSTEM_CHANGED if bound[0] != prefix[0] else "")
        return None

    def bind(self, doc: dict, recorded: Recorded, message: dict) -> None:
        """Binds the thinking blocks of an answer to the prefix of the request that produced it."""
        if not self.applies(doc, recorded):
            return
        prefix = self._prefix(doc, list(doc.get("messages") or []))
        with self._lock:
            for block in message["content"]:
                if block["type"] == "thinking":
                    self.prefixes[block["signature"]] = prefix


class AnthropicDialect:
    name = "anthropic"

    def __init__(self) -> None:
        self.issued: dict[str, list[dict]] = {}  # tool_use id -> the thinking blocks issued with it, in order
        self.signatures: dict[str, str] = {}  # signature -> the thinking text it was issued for
        self.redacted: set[str] = set()  # redacted_thinking data issued
        self.models: dict[str, str] = {}  # signature or redacted data -> the model it was issued for
        self.binding = Binding()
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?")[0].rstrip("/").endswith("/v1/messages")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        problem = self.validate(doc) or self.binding.check(doc, recorded)
        if problem is not None:
            return error(problem)
        message = self.answer(doc, options, recorded.headers.get("x-fake-redacted"))
        self.binding.bind(doc, recorded, message)
        if doc.get("stream"):
            return Reply(200, events=stream_events(message, options))
        return Reply(200, message)

    # rules -----------------------------------------------------------------------------------
    def validate(self, doc: dict) -> str | None:
        messages = doc.get("messages")
        if not thinking_enabled(doc) or not isinstance(messages, list):
            return None
        for index, message in enumerate(messages):
            if not _is_role(message, "assistant"):
                continue
            for position, block in enumerate(_blocks(message)):
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "thinking":
                    signature = block.get("signature")
                    if signature not in self.signatures or self.signatures[signature] != block.get("thinking"):
                        return INVALID_SIGNATURE.format(index=index, block=position)
                    if self.models.get(signature) != doc.get("model"):  # a block another model signed
                        return INVALID_SIGNATURE.format(index=index, block=position)
                elif block.get("type") == "redacted_thinking" and (
                    block.get("data") not in self.redacted or self.models.get(block.get("data")) != doc.get("model")
                ):
                    return INVALID_DATA.format(index=index, block=position)
        last = max((i for i, m in enumerate(messages) if _is_role(m, "assistant")), default=None)
        if last is None or not _tool_uses(messages[last]):
            return None
        content = _blocks(messages[last])
        first = content[0].get("type") if isinstance(content[0], dict) else None
        if first not in THINKING_TYPES:
            return MISSING_THINKING.format(index=last, found=first)
        issued = self.issued.get(str(_tool_uses(messages[last])[0].get("id")))
        if issued is None:
            return None
        sent = [
            (position, b)
            for position, b in enumerate(content)
            if isinstance(b, dict) and b.get("type") in THINKING_TYPES
        ]
        for number, expected in enumerate(issued):
            if number >= len(sent) or sent[number][1] != expected:
                position = sent[number][0] if number < len(sent) else sent[-1][0] + 1
                return MODIFIED.format(index=last, block=position)
        if len(sent) > len(issued):
            return MODIFIED.format(index=last, block=sent[len(issued)][0])
        return None

    # answers ---------------------------------------------------------------------------------
    def answer(self, doc: dict, options: Options, redacted: str | None) -> dict:
        messages = doc.get("messages") or []
        loop = messages[_loop_start(messages) :]
        done_steps = sum(1 for m in loop if _is_role(m, "assistant") and _tool_uses(m))
        if messages and _is_role(messages[-1], "user") and done_steps < options.steps:
            content, stop_reason = self._tool_turn(doc, options, redacted, done_steps), "tool_use"
        else:
            words = [FINAL_ANSWER] + [" More."] * (options.events or 0)
            content, stop_reason = [{"type": "text", "text": "".join(words)}], "end_turn"
        return {
            "id": _random_id("msg_01"),
            "type": "message",
            "role": "assistant",
            "model": str(doc.get("model", "")),
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _tool_turn(self, doc: dict, options: Options, redacted: str | None, step: int) -> list[dict]:
        tools = [t.get("name") for t in doc.get("tools") or [] if isinstance(t, dict)]
        name = next((t for t in tools if isinstance(t, str) and t), "list_directory")
        thinking: list[dict] = []
        if thinking_enabled(doc):
            if redacted != "1":
                # Quotes, a newline and non-ASCII text: the block must come back exactly as issued.
                text = f'The user asks what is in a directory (step {step + 1}). I should call `{name}` — "ok" ✓.\n\n'
                text += options.say or ""
                thinking.append({"type": "thinking", "thinking": text, "signature": _opaque(96)})
            if redacted in ("1", "both"):
                thinking.append({"type": "redacted_thinking", "data": _opaque(160)})
        text = [{"type": "text", "text": options.content}] if options.content else []
        uses = [
            {"type": "tool_use", "id": _random_id("toolu_01"), "name": name, "input": {"path": f"dir{i}"}}
            for i in range(options.parallel)
        ]
        with self._lock:
            for block in thinking:
                if block["type"] == "thinking":
                    self.signatures[block["signature"]] = block["thinking"]
                    self.models[block["signature"]] = doc.get("model")
                else:
                    self.redacted.add(block["data"])
                    self.models[block["data"]] = doc.get("model")
            for use in uses:
                self.issued[use["id"]] = [dict(block) for block in thinking]
        return thinking + text + uses


def stream_events(message: dict, options: Options) -> list[bytes]:
    """The SSE events that carry `message`, in the order the API sends them."""
    events = []

    def emit(data: dict) -> None:
        events.append(sse_event(data, data["type"]))

    emit({"type": "message_start", "message": {**message, "content": [], "stop_reason": None}})
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "redacted_thinking":
            emit(_start(index, block))  # whole in the start event, no deltas
        elif kind == "tool_use":
            emit(_start(index, {**block, "input": {}}))
        elif kind == "thinking":
            emit(_start(index, {"type": "thinking", "thinking": "", "signature": ""}))
        else:
            emit(_start(index, {"type": "text", "text": ""}))
        if index == 0:
            events.append(sse_event({"type": "ping"}, "ping"))
        if kind == "thinking":
            for piece in re.findall(r"\S+\s*|\s+", block["thinking"]):
                emit(_delta(index, {"type": "thinking_delta", "thinking": piece}))
            emit(_delta(index, {"type": "signature_delta", "signature": block["signature"]}))
        elif kind == "text":
            for piece in re.findall(r"\S+\s*|\s+", block["text"]):
                emit(_delta(index, {"type": "text_delta", "text": piece}))
        elif kind == "tool_use":
            arguments = json.dumps(block["input"])
            emit(_delta(index, {"type": "input_json_delta", "partial_json": ""}))
            for start in range(0, len(arguments), 5):
                emit(_delta(index, {"type": "input_json_delta", "partial_json": arguments[start : start + 5]}))
        emit({"type": "content_block_stop", "index": index})
    events += [sse_event({"type": "ping"}, "ping") for _ in range(options.events or 0)]
    emit(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        }
    )
    emit({"type": "message_stop"})
    return events


def _start(index: int, block: dict) -> dict:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict) -> dict:
    return {"type": "content_block_delta", "index": index, "delta": delta}
