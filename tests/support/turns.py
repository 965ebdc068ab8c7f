"""What the end-to-end tests and scripts/demo drive: an openai SDK client, tool definitions, and turns and histories
as editors send them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai

from tests.support.event_log import LogTail

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_directory",
            "description": "List the files in a directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}


def client(base_url: str, api_key: str, *, path: str = "/v1", **headers: str) -> openai.OpenAI:
    """An openai SDK client for `base_url` + `path`; keyword headers become `x-fake-*` options."""
    return openai.OpenAI(
        base_url=f"{base_url}{path}",
        api_key=api_key,
        max_retries=0,
        timeout=30,
        default_headers={f"x-fake-{k.replace('_', '-')}": v for k, v in headers.items()},
        http_client=httpx.Client(timeout=30),
    )


def first_turn(llm: openai.OpenAI, model: str, *, stream: bool) -> dict[str, Any]:
    """Runs turn 1 and returns the assistant message as the client received it."""
    if not stream:
        message = llm.chat.completions.create(model=model, messages=[QUESTION], tools=TOOLS).choices[0].message
        return message.model_dump(exclude_none=True) | (message.model_extra or {})
    content, extra, calls = [], {}, {}
    for chunk in llm.chat.completions.create(model=model, messages=[QUESTION], tools=TOOLS, stream=True):
        delta = chunk.choices[0].delta
        content.append(delta.content or "")
        for key, value in (delta.model_extra or {}).items():
            if isinstance(value, str):
                extra[key] = extra.get(key, "") + value
        for call in delta.tool_calls or []:
            slot = calls.setdefault(
                call.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}}
            )
            slot["id"] = slot["id"] or call.id
            if call.function is not None:
                slot["function"]["name"] += call.function.name or ""
                slot["function"]["arguments"] += call.function.arguments or ""
    return {
        "role": "assistant",
        "content": "".join(content) or None,
        "tool_calls": [calls[i] for i in sorted(calls)],
    } | extra


def history_as_sent(turn: dict[str, Any], *, drop: tuple[str, ...], content: Any) -> list[dict[str, Any]]:
    """Turn 2 as a client that drops reasoning fields sends it."""
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
        }
        for c in turn["tool_calls"]
    ]
    assistant = {"role": "assistant", "content": content, "tool_calls": calls}
    assistant |= {k: v for k, v in turn.items() if k.startswith("reasoning") and k not in drop}
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "a.txt\nb.txt"} for c in calls]
    return [QUESTION, assistant, *results]


def second_turn(llm: openai.OpenAI, model: str, messages: list[dict[str, Any]], *, stream: bool) -> str:
    if not stream:
        return llm.chat.completions.create(model=model, messages=messages, tools=TOOLS).choices[0].message.content
    return "".join(
        c.choices[0].delta.content or ""
        for c in llm.chat.completions.create(model=model, messages=messages, tools=TOOLS, stream=True)
    )


def logged_events(log: Path, kind: str, tool_call_id: str) -> list[dict[str, Any]]:
    """Events of one kind in a proxy's JSONL log that mention a tool call id, once there is one: a request's lines
    are written once its answer went on to the client (LogTail waits up to 60 s)."""
    return LogTail(log, whole=True).wait_for(kind, where=lambda event: tool_call_id in json.dumps(event))
