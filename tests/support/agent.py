"""A coding agent's conversation as OpenCode sends it through an OpenAI-compatible endpoint.

A system prompt, the same tools in every request, streamed answers, and tool
results sent back until the model answers in text. Like OpenCode before its
fix for DeepSeek V4 (anomalyco/opencode #24083), it keeps the text and tool
calls of each answer but drops its `reasoning_content`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai

SYSTEM = (
    "You are opencode, an interactive CLI tool that helps users with software engineering tasks. "
    "Use the tools available to you to read and change files in the user's project."
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Reads a file from the local filesystem.",
            "parameters": {
                "type": "object",
                "properties": {
                    "filePath": {"type": "string", "description": "The absolute path to the file to read"},
                    "offset": {"type": "number", "description": "The line number to start reading from"},
                    "limit": {"type": "number", "description": "The number of lines to read"},
                },
                "required": ["filePath"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write",
            "description": "Writes a file to the local filesystem.",
            "parameters": {
                "type": "object",
                "properties": {
                    "filePath": {"type": "string", "description": "The absolute path to the file to write"},
                    "content": {"type": "string", "description": "The content to write to the file"},
                },
                "required": ["filePath", "content"],
                "additionalProperties": False,
            },
        },
    },
]
TASK = "Read README.md and write a one-paragraph summary of it to SUMMARY.md."
TOOL_RESULTS = {"read": "# Demo project\n\nA small library that formats dates.", "write": "Wrote file successfully."}


@dataclass
class Session:
    messages: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[int] = field(default_factory=list)
    answer: str | None = None


def add_chunk(chunk: Any, content: list[str], calls: dict[int, dict[str, Any]]) -> None:
    """Puts one streamed chat completions chunk (as the openai SDK gives it) into the answer's text and calls."""
    if not chunk.choices:
        return
    delta = chunk.choices[0].delta
    content.append(delta.content or "")
    for call in delta.tool_calls or []:
        slot = calls.setdefault(call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        slot["id"] = slot["id"] or call.id or ""
        if call.function is not None:
            slot["function"]["name"] += call.function.name or ""
            slot["function"]["arguments"] += call.function.arguments or ""


def run_session(
    base_url: str,
    api_key: str,
    *,
    model: str = "deepseek-reasoner",
    turns: int = 5,
    query: dict | None = None,
    task: str = TASK,
) -> Session:
    """Runs the agent loop until a text answer, an error, or `turns` requests; returns what happened."""
    llm = openai.OpenAI(
        base_url=base_url, api_key=api_key, max_retries=0, timeout=30, default_headers={"x-fake-steps": "2"}
    )
    session = Session(messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}])
    for _ in range(turns):
        try:
            stream = llm.chat.completions.create(
                model=model,
                messages=session.messages,
                tools=TOOLS,
                stream=True,
                stream_options={"include_usage": True},
                max_tokens=32000,
            )
            content: list[str] = []
            calls: dict[int, dict[str, Any]] = {}
            for chunk in stream:
                add_chunk(chunk, content, calls)
        except openai.APIStatusError as e:
            session.statuses.append(e.status_code)
            return session
        session.statuses.append(200)
        text = "".join(content)
        if not calls:
            session.answer = text
            return session
        tool_calls = [calls[i] for i in sorted(calls)]
        session.messages.append({"role": "assistant", "content": text, "tool_calls": tool_calls})
        for call in tool_calls:
            result = TOOL_RESULTS.get(call["function"]["name"], "ok")
            session.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return session
