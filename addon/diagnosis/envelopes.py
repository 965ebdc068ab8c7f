"""Finding the error texts in a provider's error body, through the envelopes gateways wrap them in.

Error bodies come as JSON objects (OpenAI, Anthropic, Google), arrays of them (Gemini's OpenAI-compatible endpoint),
texts that are themselves JSON or hold JSON after a prefix ("Upstream error: {…}"), or plain text. A text that came
inside a gateway's envelope is marked with that gateway: OpenRouter's `metadata.raw`, Copilot's
`invalid_request_body` code, a LiteLLM exception's "litellm.BadRequestError: …" prefix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..shared import jsoncodec

# Error bodies are small; anything past this is an echoed request or noise, not the error.
MAX_SCAN = 512 * 1024
_MAX_DEPTH = 24
_MAX_TEXTS = 64
_MAX_ITEMS = 256
_MAX_EMBEDDED_TRIES = 8


@dataclass(frozen=True)
class Context:
    wrappers: tuple[str, ...] = ()  # gateways around the text, outermost first
    provider_name: str | None = None  # OpenRouter's metadata.provider_name


@dataclass(frozen=True)
class FoundText:
    text: str
    context: Context
    envelope: dict | None  # the object whose message this is (code, param, status)


# Keys whose string value is an error text in the envelopes seen (OpenAI, Anthropic, Google, OpenRouter, gateways).
_TEXT_KEYS = ("message", "msg", "detail", "details", "error", "error_message")
_JSON_START = re.compile(r"[{\[]")
_LITELLM_PREFIX = re.compile(r"\s*litellm\.\w+")
_COPILOT_BODY_CODE = "invalid_request_body"


def decode(body: Any) -> str:
    if isinstance(body, str):
        return body[:MAX_SCAN]
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body[:MAX_SCAN]).decode("utf-8", "replace")
    return ""


NOT_JSON = object()


def parse(text: str) -> Any:
    """The JSON value of a whole text, or NOT_JSON."""
    stripped = text.strip()
    if not stripped:
        return NOT_JSON
    try:
        return jsoncodec.loads(stripped)
    except (ValueError, RecursionError):
        return NOT_JSON


def _embedded(text: str) -> Any:
    """A JSON object inside a text: the whole text, or after a prefix such as "Upstream error: " or "400 - "."""
    whole = parse(text)
    if isinstance(whole, (dict, list)):
        return whole
    # raw_decode, not jsoncodec.loads: the JSON may be followed by more text ("… (request id: …)").
    decoder = json.JSONDecoder()
    for tries, start in enumerate(_JSON_START.finditer(text)):
        if tries >= _MAX_EMBEDDED_TRIES:
            break
        try:
            value, _ = decoder.raw_decode(text, start.start())
        except (ValueError, RecursionError):
            continue
        # "contents[2]" parses as [2]: only an object (or a list of them, Gemini's array wrapper) is an envelope.
        if isinstance(value, dict) and value:
            return value
        if isinstance(value, list) and value and isinstance(value[0], dict):
            return value
    return None


class _Collector:
    def __init__(self) -> None:
        self.texts: list[FoundText] = []
        self.seen: set[str] = set()

    def full(self) -> bool:
        return len(self.texts) >= _MAX_TEXTS

    def add_text(self, text: str, context: Context, envelope: dict | None, depth: int) -> None:
        if self.full() or depth > _MAX_DEPTH or not text.strip() or text in self.seen:
            return
        self.seen.add(text)
        if _LITELLM_PREFIX.match(text):
            context = Context(context.wrappers + ("litellm",), context.provider_name)
        self.texts.append(FoundText(text, context, envelope))
        inner = _embedded(text)
        if inner is not None:
            self.walk(inner, context, depth + 1)

    def walk(self, value: Any, context: Context, depth: int) -> None:
        if self.full() or depth > _MAX_DEPTH:
            return
        if isinstance(value, str):
            self.add_text(value, context, None, depth)
        elif isinstance(value, list):
            for item in value[:_MAX_ITEMS]:
                self.walk(item, context, depth + 1)
        elif isinstance(value, dict):
            self._walk_object(value, context, depth)

    def _walk_object(self, value: dict, context: Context, depth: int) -> None:
        metadata = value.get("metadata")
        raw = metadata.get("raw") if isinstance(metadata, dict) else None
        if isinstance(raw, str):
            name = metadata.get("provider_name")
            context = Context(context.wrappers + ("openrouter",), name if isinstance(name, str) else None)
        if value.get("code") == _COPILOT_BODY_CODE:
            context = Context(context.wrappers + ("copilot",), context.provider_name)
        # The object's own texts first (outer), then what is nested in it (inner).
        for key in _TEXT_KEYS:
            text = value.get(key)
            if isinstance(text, str):
                self.add_text(text, context, value, depth)
        if isinstance(raw, str):
            self.add_text(raw, context, value, depth + 1)
        located = _located(value)
        if located is not None:
            self.add_text(located, context, value, depth + 1)
        for key, nested in list(value.items())[:_MAX_ITEMS]:
            if isinstance(nested, (dict, list)) and not (key == "metadata" and isinstance(raw, str)):
                self.walk(nested, context, depth + 1)


def _located(value: dict) -> str | None:
    """A validation error's text with the place it names, as FastAPI-style APIs (Mistral's) give them apart:
    `{"loc": ["body", "messages", 2, "assistant", "reasoning_content"], "msg": "Extra inputs are not permitted"}` is
    read as "body.messages.2.assistant.reasoning_content: Extra inputs are not permitted"."""
    loc, msg = value.get("loc"), value.get("msg")
    if not isinstance(msg, str) or not isinstance(loc, list) or not loc:
        return None
    if not all(isinstance(part, (str, int)) and not isinstance(part, bool) for part in loc[:_MAX_ITEMS]):
        return None
    return f"{'.'.join(str(part) for part in loc[:_MAX_ITEMS])}: {msg}"


def collect(text: str, doc: Any) -> list[FoundText]:
    """The error texts of a body, outermost first; `doc` is the body's JSON value (or NOT_JSON)."""
    collector = _Collector()
    if isinstance(doc, (dict, list)):
        collector.walk(doc, Context(), 0)
    elif isinstance(doc, str):
        collector.add_text(doc, Context(), None, 0)
    elif doc is NOT_JSON:
        collector.add_text(text.strip(), Context(), None, 0)
    return collector.texts


def error_messages(body: bytes | str) -> list[str]:
    """Every error message text in a body, innermost last.

    Walks JSON (objects, arrays such as Gemini's `[{"error":…}]`, `error.message`, `error.metadata.raw`, messages
    that are themselves JSON or hold JSON after a prefix like "Upstream error: "), falling back to the raw text
    when the body is not JSON.
    """
    try:
        text = decode(body)
        return [found.text for found in collect(text, parse(text))]
    except Exception:  # noqa: BLE001 - a diagnosis helper must never break the response path
        return []
