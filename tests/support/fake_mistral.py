"""Fake Mistral chat completions (served under `/mistral/`, so that it shares the fake provider with the others).

Answers as Magistral does (https://docs.mistral.ai/capabilities/reasoning; the shapes of the real captures in
tests/fixtures/mistral/): the assistant message's `content` is an array, a `thinking` chunk and then the answer's
`text` chunk, with `x-fake-parallel` tool calls on a tool turn (`x-fake-steps` of them before the final answer). A
stream sends the thinking as arrays of one-piece `thinking` chunks closed by one whose `thinking` is empty, the answer
as plain strings, each tool call whole in one chunk, and `data: [DONE]`.

Its rules, as Mistral's:

* its request schema is closed: a field of an assistant message it does not know (`reasoning_content`, say) is refused
  with HTTP 422 and a validation error per field;
* thinking chunks are not verified: an assistant tool-call message sent back without the one issued with its calls
  is answered all the same, with the model's earlier reasoning lost; the answer says so in an `x-fake-degraded:
  thinking-dropped` header, for tests to tell.
"""

from __future__ import annotations

import json
import os
import re
import string
import threading
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

FINAL_ANSWER = "The directory holds two files."
# Mistral's AssistantMessage takes these and nothing else (https://github.com/OpenMinis/OpenMinis/issues/87).
ASSISTANT_FIELDS = frozenset({"role", "content", "tool_calls", "prefix"})


def extra_forbidden(fields: list[tuple[int, str, Any]]) -> Reply:
    """Mistral's 422, in the envelope https://github.com/Gage-Technologies/mistral-go/issues/3 quotes."""
    detail = [
        {
            "type": "extra_forbidden",
            "loc": ["body", "messages", index, "assistant", name],
            "msg": "Extra inputs are not permitted",
            "input": value,
        }
        for index, name, value in fields
    ]
    body = {
        "object": "error",
        "message": {"detail": detail},
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    return Reply(422, body)


def _call_id() -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(alphabet[byte % len(alphabet)] for byte in os.urandom(9))


def _thinking(text: str) -> dict:
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


class MistralFake:
    name = "mistral"

    def __init__(self) -> None:
        self.issued: dict[str, dict] = {}  # tool call id -> the thinking chunk issued with it
        self._lock = threading.Lock()

    def matches(self, path: str) -> bool:
        return path.startswith("/mistral/") and path.split("?")[0].endswith("/chat/completions")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        messages = doc.get("messages") or []
        extra = [
            (index, name, value)
            for index, message in enumerate(messages)
            if isinstance(message, dict) and message.get("role") == "assistant"
            for name, value in message.items()
            if name not in ASSISTANT_FIELDS
        ]
        if extra:
            return extra_forbidden(extra)
        headers = {"mistral-correlation-id": str(uuid.uuid4())}
        if self.dropped(messages):
            headers["x-fake-degraded"] = "thinking-dropped"
        message = self.answer(doc, options)
        answer_id = uuid.uuid4().hex
        if doc.get("stream"):
            return Reply(200, events=stream_events(answer_id, str(doc.get("model")), message), headers=headers)
        choice = {"index": 0, "message": message, "finish_reason": "tool_calls" if message["tool_calls"] else "stop"}
        body = {
            "id": answer_id,
            "object": "chat.completion",
            "created": 1764296393,
            "model": doc.get("model"),
            "choices": [choice],
            "usage": {"prompt_tokens": 10, "total_tokens": 15, "completion_tokens": 5},
        }
        return Reply(200, body, headers=headers)

    def dropped(self, messages: list[Any]) -> bool:
        """Whether an assistant tool-call message came back without the thinking chunk issued with its calls."""
        for message in messages:
            calls = message.get("tool_calls") if isinstance(message, dict) else None
            if message.get("role") != "assistant" or not calls:
                continue
            with self._lock:
                issued = self.issued.get(str(calls[0].get("id")))
            content = message.get("content")
            if issued is not None and not (isinstance(content, list) and issued in content):
                return True
        return False

    def answer(self, doc: dict, options: Options) -> dict:
        messages = doc.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        steps = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant" and m.get("tool_calls"))
        if steps >= options.steps:
            thinking = _thinking("The listing came back with two files. I can answer.")
            return {
                "role": "assistant",
                "content": [thinking, {"type": "text", "text": FINAL_ANSWER}],
                "tool_calls": None,
            }
        # Quotes, a newline and non-ASCII text: the chunk must come back exactly as issued.
        thinking = _thinking(f'The user asks what is in a directory (step {steps + 1}).\nI should list it — "ok" ✓.')
        calls = [
            {
                "id": _call_id(),
                "type": "function",
                "function": {"name": "list_directory", "arguments": json.dumps({"path": f"dir{i}"})},
                "index": i,
            }
            for i in range(options.parallel)
        ]
        with self._lock:
            for call in calls:
                self.issued[call["id"]] = thinking
        text = [{"type": "text", "text": options.content}] if options.content else []
        return {"role": "assistant", "content": [thinking, *text], "tool_calls": calls}


def stream_events(answer_id: str, model: str, message: dict) -> list[bytes]:
    """The chunks that carry `message`, as Magistral streams them."""

    def chunk(delta: dict, finish: str | None = None, **extra: Any) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        doc = {"id": answer_id, "object": "chat.completion.chunk", "created": 1764296393, "model": model}
        return sse_event({**doc, "choices": [choice], **extra})

    events = [chunk({"role": "assistant", "content": ""})]
    for part in message["content"]:
        if part["type"] == "thinking":
            for piece in re.findall(r"\S+\s*|\s+", part["thinking"][0]["text"]):
                events.append(chunk({"content": [_thinking(piece)]}))
            events.append(chunk({"content": [{"type": "thinking", "thinking": []}]}))
        else:
            events += [chunk({"content": piece}) for piece in re.findall(r"\S+\s*|\s+", part["text"])]
    for call in message["tool_calls"] or []:
        events.append(chunk({"tool_calls": [call]}))
    usage = {"prompt_tokens": 10, "total_tokens": 15, "completion_tokens": 5}
    events.append(chunk({"content": ""}, "tool_calls" if message["tool_calls"] else "stop", usage=usage))
    events.append(sse_event("[DONE]"))
    return events
