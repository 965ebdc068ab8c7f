"""A chat request's messages as the repair, the removal of foreign values and the check read them."""

from __future__ import annotations

from typing import Any

from .fields import MESSAGE_FIELDS, THINKING_FIELD, message_lacks


def tool_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    calls = message.get("tool_calls")
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A request tool call's id, function name and arguments."""
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    name = function.get("name") if isinstance(function.get("name"), str) else None
    return call_id, name, function.get("arguments", "")


def is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant"


def has_tool_calls(message: dict[str, Any]) -> bool:
    return isinstance(message.get("tool_calls"), list) and bool(message["tool_calls"])


def has_reasoning(message: dict[str, Any]) -> bool:
    return any(not message_lacks(message, name) for name in (*MESSAGE_FIELDS, THINKING_FIELD))


def current_turn(messages: list[Any]) -> list[int]:
    """Indexes of the assistant tool-call messages after the last user message."""
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), default=-1)
    return [i for i in range(last_user + 1, len(messages)) if is_assistant(messages[i]) and has_tool_calls(messages[i])]


def block_to_message(messages: list[Any], position: int) -> int | None:
    """The chat message behind the N-th (1-based) content block Gemini was sent, as Copilot and OpenRouter turn a
    chat request into Gemini's contents: system messages go elsewhere and consecutive tool results merge into one
    block."""
    block = 0
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            continue
        if not (role == "tool" and previous == "tool"):
            block += 1
        previous = role
        if block == position:
            return index
    return None
