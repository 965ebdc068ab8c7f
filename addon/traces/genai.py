"""One LLM exchange as OpenTelemetry's GenAI semantic conventions describe it: the span's name and attributes, its
messages in the conventions' JSON shape, and what the proxy did as span events. Pure functions of what the proxy
read (a `Conversation`, an `Answer`, the event log's events): no OpenTelemetry import here.

The conventions: https://github.com/open-telemetry/semantic-conventions-genai (docs/gen-ai/gen-ai-spans.md, and the
schemas gen-ai-input-messages.json, gen-ai-output-messages.json and gen-ai-system-instructions.json). The proxy has
no older form to keep, so it writes the current ones whether or not OTEL_SEMCONV_STABILITY_OPT_IN asks for them.

Content (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.system_instructions`) is written only when asked
(llm_otel_content), as the conventions advise. Every text goes through the redactor; opaque values (signatures,
encrypted reasoning) never appear, only their field, length and a short hash.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..shared import jsoncodec
from ..shared.events import Captured, Diagnosed, Event, Failure, Recovered, Repaired, Skipped, loggable_actions
from ..shared.records import display_call_id
from ..shared.redact import redact_json, redact_json_text, redact_text
from ..wire.conversation import Answer, Conversation, Message, Part, Usage

T = TypeVar("T")
Attributes = dict[str, Any]  # what OpenTelemetry takes: str, bool, int, float, or a list of one of them

# What a span may hold of an exchange's content: each content attribute is cut to this much JSON (the newest
# messages kept), and each text in it to PART_CHARS.
CONTENT_CHARS = 256 * 1024
PART_CHARS = 32 * 1024
EVENT_TEXT_CHARS = 1024  # each text of a span event (an advice, a provider's error text)
EVENT_LIST_ITEMS = 32  # each list of a span event (repairs, places)

# Our roles, and the Responses API's item types, as the conventions' roles (system, user, assistant, tool).
_ROLES = {
    "model": "assistant",  # Gemini
    "developer": "system",
    "reasoning": "assistant",
    "function_call": "assistant",
    "custom_tool_call": "assistant",
    "function_call_output": "tool",
    "custom_tool_call_output": "tool",
    "function": "tool",
}


@dataclass(slots=True)
class SpanEvent:
    name: str
    timestamp_ns: int
    attributes: Attributes = field(default_factory=dict)

    def size(self) -> int:
        """About the bytes it holds: its texts and a little for each value."""
        return 64 + len(self.name) + sum(len(k) + value_size(v) for k, v in self.attributes.items())


def value_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, (list, tuple)):
        return sum(value_size(v) for v in value) + 8 * len(value)
    return 8


def span_name(operation: str, model: str | None) -> str:
    """`{gen_ai.operation.name} {gen_ai.request.model}`, as the conventions name an inference span."""
    return f"{operation} {model}" if model else operation


# Usage.counts' kinds under the conventions' names.
_USAGE_NAMES = {
    "input": "gen_ai.usage.input_tokens",
    "output": "gen_ai.usage.output_tokens",
    "reasoning": "gen_ai.usage.reasoning.output_tokens",
    "cache_read": "gen_ai.usage.cache_read.input_tokens",
    "cache_write": "gen_ai.usage.cache_creation.input_tokens",
}


def usage_attributes(usage: Usage) -> Attributes:
    """The usage the provider reported, under the conventions' names; what it did not report is left out."""
    return {_USAGE_NAMES[kind]: value for kind, value in usage.counts() if value is not None}


def _cut(text: str) -> str:
    """A masked text cut to PART_CHARS (masked first: a cut could leave the start of a credential unmasked)."""
    return text if len(text) <= PART_CHARS else f"{text[:PART_CHARS]}…[{len(text) - PART_CHARS:,} more characters]"


def _text(text: str) -> str:
    return _cut(redact_text(text))


def _json_text(text: str) -> str:
    """A text that may be JSON (a tool's result), masked as the event log masks JSON: escapes and secret-naming keys
    such as a cookie's are seen through."""
    return _cut(redact_json_text(text))


def _arguments(text: str) -> Any:
    """A tool call's arguments as the JSON they are, decoded before they are masked; masked text when not JSON."""
    if not text:
        return None
    try:
        return redact_json(jsoncodec.loads(text.encode("utf-8", "surrogatepass")))
    except ValueError:
        return _text(text)


def _call_id(call_id: str | None) -> str | None:
    """A tool call id, without the signature some gateways carry inside it (LiteLLM's `__thought__`)."""
    return display_call_id(call_id) if call_id else call_id


def message_part(part: Part) -> dict[str, Any]:
    """A part in the conventions' shape (TextPart, ReasoningPart, ToolCallRequestPart, ToolCallResponsePart, or a
    GenericPart that says what it is without its value)."""
    if part.kind == "text":
        return {"type": "text", "content": _text(part.text)}
    if part.kind == "reasoning":
        return {"type": "reasoning", "content": _text(part.text)}
    if part.kind == "tool_call":
        return {
            "type": "tool_call",
            "id": _call_id(part.call_id),
            "name": _text(part.name or ""),
            "arguments": _arguments(part.text),
        }
    if part.kind == "tool_result":
        return {"type": "tool_call_response", "id": _call_id(part.call_id), "response": _json_text(part.text)}
    if part.kind == "opaque":  # a signature or encrypted reasoning: what and how long, never the value
        return {"type": "opaque", "field": part.field, "length": part.length, "sha256_16": part.digest}
    if part.kind == "media":
        return {"type": "media", "mime_type": part.name, "length": part.length}
    # A block or item no transcriber knows may hold encrypted state of a kind new to the proxy (a compaction item's
    # encrypted_content, a search result's): what it is and how long, never what it holds.
    return {"type": "other", "field": part.field, "length": len(part.text)}


def chat_message(message: Message, finish: str | None = None) -> dict[str, Any]:
    role = _ROLES.get(message.role, message.role)
    shaped: dict[str, Any] = {"role": role, "parts": [message_part(part) for part in message.parts]}
    if finish is not None:
        shaped["finish_reason"] = finish
    return shaped


def _is_instructions(message: Message) -> bool:
    """A system prompt a format carries beside its list of messages (Anthropic's and Bedrock's `system`, Gemini's
    `systemInstruction`, the Responses API's `instructions`), which the conventions keep apart from the history."""
    return message.role == "system" and "[" not in message.where


def _newest_that_fit(items: list[T], shape: Callable[[T], Any]) -> tuple[str, int]:
    """The JSON of the newest of `items` that fit in CONTENT_CHARS, each shaped (and masked) by `shape` only when it
    is reached, and how many older ones were left out: a long history costs what is kept of it, not all of it."""
    kept: list[bytes] = []
    size = 2
    for item in reversed(items):
        encoded = jsoncodec.dumps(shape(item))
        if kept and size + len(encoded) + 1 > CONTENT_CHARS:
            break
        kept.append(encoded)
        size += len(encoded) + 1
    kept.reverse()
    return (b"[" + b",".join(kept) + b"]").decode("utf-8", "replace"), len(items) - len(kept)


def content_attributes(sent: Conversation | None, answer: Answer | None) -> Attributes:
    """gen_ai.system_instructions, gen_ai.input.messages and gen_ai.output.messages, as JSON text (the SDK's span
    attributes hold no structures; the conventions allow JSON text there)."""
    found: Attributes = {}
    if sent is not None:
        instructions = [part for m in sent.messages if _is_instructions(m) for part in m.parts]
        if instructions:
            found["gen_ai.system_instructions"], _ = _newest_that_fit(instructions, message_part)
        history = [m for m in sent.messages if not _is_instructions(m)]
        found["gen_ai.input.messages"], left_out = _newest_that_fit(history, chat_message)
        if left_out:
            found["llm_proxy.input.messages_left_out"] = left_out
    if answer is not None and answer.messages:
        finish = answer.finish or ""
        found["gen_ai.output.messages"], _ = _newest_that_fit(answer.messages, lambda m: chat_message(m, finish))
    return found


def _short(text: str | None) -> str:
    text = redact_text(text or "")
    return text if len(text) <= EVENT_TEXT_CHARS else text[:EVENT_TEXT_CHARS] + "…"


def _strings(values: Iterable[Any]) -> list[str]:
    return [_short(str(value)) for value in itertools.islice(values, EVENT_LIST_ITEMS)]  # the rest never made


def span_event(event: Event, timestamp_ns: int) -> SpanEvent | None:
    """What the proxy did, as a span event (`llm_proxy.*`): captured, repaired, recovered, diagnosed, skipped, or
    failed open. None for an event that says nothing of one exchange."""
    if isinstance(event, Captured):
        fields = sorted({*event.fields, *(name for call in event.tool_calls for name in call.fields)})
        return SpanEvent(
            "llm_proxy.captured",
            timestamp_ns,
            {
                "llm_proxy.fields": fields,
                "llm_proxy.tool_calls": len(event.tool_calls),
                "llm_proxy.stored": event.stored,
                "llm_proxy.complete": event.complete,
                **({"llm_proxy.note": _short(event.note)} if event.note else {}),
            },
        )
    if isinstance(event, Repaired):
        return SpanEvent(
            "llm_proxy.repaired",
            timestamp_ns,
            {
                "llm_proxy.applied": event.applied,
                "llm_proxy.repairs": event.total,
                "llm_proxy.cache_hits": event.cache_hits,
                "llm_proxy.kinds": sorted({a.kind for a in event.actions} | set(event.again_by_kind)),
                # Ids shortened whatever llm_log_opaque says: a span never carries a signature.
                "llm_proxy.actions": _strings(action.describe() for action in loggable_actions(event.actions, False)),
            },
        )
    if isinstance(event, Recovered):
        attributes: Attributes = {
            "llm_proxy.how": event.how,
            "llm_proxy.rule": event.rule,
            "llm_proxy.removed": _strings(event.removed),
        }
        if event.first_status is not None:
            attributes["llm_proxy.first_status"] = event.first_status
        if event.first_error:
            attributes["llm_proxy.first_error"] = _short(event.first_error)
        return SpanEvent("llm_proxy.recovered", timestamp_ns, attributes)
    if isinstance(event, Diagnosed):
        attributes = {
            "llm_proxy.rule": event.rule,
            "llm_proxy.problem": event.problem,
            "llm_proxy.summary": _short(event.summary),
            "llm_proxy.advice": _short(event.advice),
            "llm_proxy.repaired": event.repaired,
        }
        culprit = [_short(v) for v in (event.location, event.field, event.function) if v]
        culprit += _strings(map(display_call_id, event.tool_call_ids)) + _strings(event.item_ids)
        if culprit:
            attributes["llm_proxy.culprit"] = culprit[:EVENT_LIST_ITEMS]
        if event.provider:
            attributes["llm_proxy.provider"] = event.provider
        return SpanEvent("llm_proxy.diagnosed", timestamp_ns, attributes)
    if isinstance(event, Skipped):
        return SpanEvent("llm_proxy.skipped", timestamp_ns, {"llm_proxy.reason": _short(event.reason)})
    if isinstance(event, Failure):
        return SpanEvent(
            "llm_proxy.failed_open",
            timestamp_ns,
            {"llm_proxy.stage": event.stage, "llm_proxy.error": _short(event.error)},
        )
    return None
