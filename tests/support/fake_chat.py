"""Fake chat completions dialects: Copilot serving Gemini, DeepSeek thinking mode, a plain host.

Chosen by model name, as the real services would see them:

* "gemini-*" is GitHub Copilot serving Gemini: answers carry `reasoning_text`
  and `reasoning_opaque`; the next request must carry the opaque it issued on
  every assistant tool-call message of the current turn, and `content: []` is
  refused with Copilot's `invalid_request_body`.
* "deepseek-*" is DeepSeek thinking mode: answers carry `reasoning_content`;
  every assistant tool-call message sent back must carry it.
* anything else is a plain OpenAI-compatible host with no reasoning rules.
"""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

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


class ChatDialect:
    name = "chat"

    def __init__(self) -> None:
        self.issued: dict[str, dict[str, str]] = {}  # tool call id -> reasoning fields issued with it
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.split("?")[0].endswith("/chat/completions")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        error = self.validate(doc)
        if error is not None:
            return Reply(error[0], error[1])
        whole, chunks = self.answer(doc, options)
        if doc.get("stream"):
            return Reply(200, events=[sse_event(c) for c in chunks] + [sse_event("[DONE]")])
        return Reply(200, whole)

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
    def answer(self, doc: dict, options: Options) -> tuple[dict, list[dict]]:
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

    def _tool_turn(self, doc: dict, dialect: str, options: Options) -> tuple[dict, list[dict]]:
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

    def _final_turn(self, dialect: str, options: Options) -> tuple[dict, list[dict]]:
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


