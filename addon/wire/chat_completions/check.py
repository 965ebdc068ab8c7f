"""The rules a chat request breaks, as far as the request alone shows (checked before it is sent on)."""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.base import REASONING_CONTENT_MISSING, TOOL_RESULT_ORPHANED
from ...dialects.mistral import MESSAGE_FIELD_NOT_PERMITTED
from ...dialects.openai import CONTENT_EMPTY_ARRAY
from ...shared.records import Violation
from ..base import RepairContext
from .fields import call_field, is_missing
from .messages import current_turn, has_tool_calls, is_assistant, tool_calls


def refused_field_violations(messages: list[Any], context: RepairContext) -> list[Violation]:
    """The fields of assistant messages that the provider serving the request refuses the whole request for (another
    provider's reasoning field sent to Mistral)."""
    dialect = dialects.serving(context.host, context.path, context.model or "")
    refused = dialect.refused_message_fields(context.model or "") if dialect is not None else frozenset()
    if not refused or dialect is None:
        return []
    return [
        Violation(
            rule=MESSAGE_FIELD_NOT_PERMITTED,
            location=f"messages[{index}]",
            message=f"{name} on an assistant message, which {dialect.name} does not take",
        )
        for index, message in enumerate(messages)
        if is_assistant(message)
        for name in message
        if name in refused
    ]


def check_messages(messages: list[Any], context: RepairContext, doc: Any = None) -> list[Violation]:
    """The rules a chat request's messages break; `doc` is the whole request, whose options (thinking turned off,
    say) may change what its model requires."""
    violations = refused_field_violations(messages, context)
    model = context.model or ""
    required = dialects.requires_reasoning_content(model, doc)
    called: set[str] = set()
    for index, message in enumerate(messages):
        location = f"messages[{index}]"
        if isinstance(message, dict) and message.get("role") == "tool":
            if message.get("tool_call_id") not in called:
                violations.append(
                    Violation(
                        rule=TOOL_RESULT_ORPHANED,
                        location=location,
                        message="tool result answers no tool call of an earlier assistant message",
                        tool_call_id=message.get("tool_call_id"),
                    )
                )
            continue
        if not (is_assistant(message) and has_tool_calls(message)):
            continue
        called.update(str(call.get("id")) for call in tool_calls(message))
        if message.get("content") == []:
            text = "content is an empty array (Copilot: invalid request body; the API wants null or text)"
            violations.append(Violation(rule=CONTENT_EMPTY_ARRAY, location=location, message=text))
        if required and message.get("reasoning_content") is None:
            text = "assistant tool-call message without reasoning_content (required in thinking mode)"
            violations.append(Violation(rule=REASONING_CONTENT_MISSING, location=location, message=text))
    rule = dialects.chat_signature(context.host, context.path, model)
    for index in current_turn(messages) if rule else []:
        message = messages[index]
        calls = tool_calls(message)
        if not calls:  # tool_calls holds no call object at all
            continue
        first = calls[0]
        present = (
            call_field(first, "extra_content") is not None
            if rule.field == "extra_content"
            else not is_missing(rule.field, message.get(rule.field))
        )
        if not present:
            violations.append(
                Violation(
                    rule=rule.rule,
                    location=f"messages[{index}]",
                    message=f"current-turn function call without its thought signature ({rule.field} missing)",
                    tool_call_id=first.get("id"),
                )
            )
    return violations
