"""A chat request sent in the closest form its provider accepts when the reasoning it requires cannot be put back
(llm_recover).

Where a provider refuses an assistant tool-call message without `reasoning_content` (DeepSeek, Kimi), an empty one is
what it takes (its dialect says so, with its source: addon/dialects/deepseek.py, moonshot.py); thinking stays on for
the turn. Where Gemini's OpenAI-compatible endpoint wants a current-turn call's thought signature, Google's documented
dummy signature stands in for it (https://ai.google.dev/gemini-api/docs/thought-signatures, as
llm_signature_placeholder allows). For Copilot's `reasoning_opaque` no stand-in is known: the request goes as it is.
"""

from __future__ import annotations

from typing import Any

from ... import dialects
from ...dialects.base import REASONING_CONTENT_MISSING
from ...dialects.gemini import GEMINI_SIGNATURE_MISSING
from ...shared.records import RepairAction, Violation, place_index
from ..base import RepairContext
from ..gemini.repair import PLACEHOLDER_BASE64
from .check import check_messages
from .fields import MESSAGE_FIELDS
from .messages import call_parts, is_assistant, tool_calls

EMPTY_REASONING = "empty reasoning_content sent"
DUMMY_SIGNATURE = "Google's dummy thought signature sent"
_TAKEN_OUT_REFUSED = "reasoning the provider refused, taken out"
# A tool call's own reasoning state: the Gemini OpenAI-compatible signature, LiteLLM's fields.
_CALL_FIELDS = ("extra_content", "provider_specific_fields")


def take_out_reasoning(messages: list[Any], indexes: list[int]) -> list[RepairAction]:
    """Drops the reasoning fields of the assistant messages at `indexes`, and those of their tool calls."""
    actions = []
    for index in sorted(set(indexes)):
        message = messages[index] if 0 <= index < len(messages) else None
        if not is_assistant(message):
            continue
        fields = [name for name in MESSAGE_FIELDS if name in message]
        for name in fields:
            del message[name]
        for call in tool_calls(message):
            for name in _CALL_FIELDS:
                if name in call:
                    del call[name]
                    fields.append(f"tool_calls.{name}")
        if fields:
            calls = tool_calls(message)
            call_id = call_parts(calls[0])[0] if calls else None
            actions.append(
                RepairAction(
                    "recovered", f"messages[{index}]", index, fields, call_id, degraded=True, reason=_TAKEN_OUT_REFUSED
                )
            )
    return actions


def _placeholder(context: RepairContext) -> str | None:
    """The dummy signature llm_signature_placeholder allows on Gemini's OpenAI-compatible endpoint (the Gemini API,
    which takes it base64-encoded)."""
    if "gemini-3" not in (context.model or "") or context.placeholder == "off":
        return None
    return PLACEHOLDER_BASE64 if context.placeholder == "auto" else context.placeholder


def stand_in(messages: list[Any], violation: Violation, doc: Any, context: RepairContext) -> RepairAction | None:
    """What the provider takes at one place the check finds broken, put there; None where nothing is known."""
    index = place_index(violation.location)
    message = messages[index] if index is not None and index < len(messages) else None
    if not is_assistant(message):
        return None
    calls = tool_calls(message)
    if violation.rule == REASONING_CONTENT_MISSING and dialects.empty_reasoning_accepted(context.model or "", doc):
        message["reasoning_content"] = ""
        return RepairAction(
            "recovered",
            f"messages[{index}]",
            index,
            ["reasoning_content"],
            call_parts(calls[0])[0] if calls else None,
            degraded=True,
            reason=EMPTY_REASONING,
            rule=violation.rule,
        )
    placeholder = _placeholder(context)
    if violation.rule == GEMINI_SIGNATURE_MISSING and placeholder is not None and calls:
        calls[0]["extra_content"] = {"google": {"thought_signature": placeholder}}
        return RepairAction(
            "recovered",
            f"messages[{index}]",
            index,
            ["tool_calls.extra_content"],
            violation.tool_call_id,
            degraded=True,
            reason=DUMMY_SIGNATURE,
            rule=violation.rule,
        )
    return None


def recover_messages(
    doc: Any, messages: list[Any], context: RepairContext, refused: list[int] | None
) -> list[RepairAction]:
    """Takes the reasoning of the messages at `refused` out (None: of every message), then puts what the provider
    takes instead at each place the check finds reasoning missing, where something is known."""
    indexes = list(range(len(messages))) if refused is None else refused
    taken = take_out_reasoning(messages, indexes) if indexes else []
    violations = check_messages(messages, context, doc)
    recovered = [action for v in violations if (action := stand_in(messages, v, doc, context)) is not None]
    for action in taken:
        action.rule = recovered[0].rule if recovered else None
    return taken + recovered
