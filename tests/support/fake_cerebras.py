"""Fake Cerebras chat completions (`POST /cerebras/v1/chat/completions`, standing for
`https://api.cerebras.ai/v1/chat/completions`).

A reasoning model's thinking comes as `reasoning` on the message (`delta.reasoning` streamed) and is taken back under
that name; an assistant message that carries `reasoning_content` at all is refused, for every model, one line per
such message (https://github.com/QwenLM/qwen-code/issues/11045, https://github.com/vercel/ai/issues/15042), HTTP 400:

    {"message": "messages.2.assistant.reasoning_content: property 'messages.2.assistant.reasoning_content' is
     unsupported", "type": "invalid_request_error", "param": "validation_error", "code": "wrong_api_format"}

(https://github.com/Kilo-Org/kilocode/issues/10375; the lines joined by a newline as
https://github.com/Alishahryar1/free-claude-code/issues/1136 shows them). The path prefix routes requests here
instead of to the chat fake. Tool call ids and the rest of the answer are the fake's own.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from .fake_provider import Options, Recorded, Reply, sse_event

UNSUPPORTED = (
    "messages.{index}.assistant.reasoning_content: property 'messages.{index}.assistant.reasoning_content' is "
    "unsupported"
)
FINAL_ANSWER = "The directory holds two files."


def refusal(messages: list[Any]) -> Reply | None:
    lines = [
        UNSUPPORTED.format(index=index)
        for index, message in enumerate(messages)
        if isinstance(message, dict) and message.get("role") == "assistant" and "reasoning_content" in message
    ]
    if not lines:
        return None
    body = {"message": "\n".join(lines), "type": "invalid_request_error", "param": "validation_error"}
    return Reply(400, {**body, "code": "wrong_api_format"})


class CerebrasDialect:
    name = "cerebras"

    def matches(self, path: str) -> bool:
        route = path.split("?")[0].rstrip("/")
        return route.startswith("/cerebras/") and route.endswith("/chat/completions")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        messages = doc.get("messages") or []
        refused = refusal(messages)
        if refused is not None:
            return refused
        model = str(doc.get("model", ""))
        last = messages[-1] if messages else {}
        tools = [t.get("function", {}).get("name") for t in doc.get("tools") or [] if isinstance(t, dict)]
        if isinstance(last, dict) and last.get("role") == "user" and tools:
            reasoning = f"The user wants a listing. I will call {tools[0]}."
            calls = [
                {
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {"name": tools[0], "arguments": json.dumps({"path": f"dir{i}"})},
                }
                for i in range(options.parallel)
            ]
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "reasoning": reasoning,
                "tool_calls": calls,
            }
            deltas = [{"role": "assistant", "reasoning": piece} for piece in re.findall(r"\S+\s*", reasoning)]
            deltas += [{"tool_calls": [{**call, "index": i}]} for i, call in enumerate(calls)]
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": FINAL_ANSWER, "reasoning": "Summarise the listing."}
            deltas = [{"role": "assistant", "reasoning": "Summarise the listing."}]
            deltas += [{"content": piece} for piece in re.findall(r"\S+\s*", FINAL_ANSWER)]
            finish = "stop"
        head = {"id": f"chatcmpl-{uuid.uuid4()}", "created": int(time.time()), "model": model}
        if not doc.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return Reply(200, {**head, "object": "chat.completion", "choices": [choice]})
        chunks = [
            {
                **head,
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
            }
            for delta in deltas
        ]
        chunks[-1]["choices"][0]["finish_reason"] = finish
        return Reply(200, events=[sse_event(chunk) for chunk in chunks] + [sse_event("[DONE]")])
