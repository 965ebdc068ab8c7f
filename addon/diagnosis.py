"""Explaining a provider's error response: which rule the request broke, and where it points.

`classify(status, body)` reads an error body as a provider (or a gateway in front of one) sent it, finds every
error text in it (`error_messages`), and matches the innermost texts first against the known reasoning round-trip
errors (the providers' documentation and the issues each rule names), the errors a target gives for reasoning state
another model, account or conversation issued ("foreign" state), and a few neighbouring tool-pairing errors. Numbers
and ids are taken exactly as the text gives them; the message kept is redacted. Nothing here raises: an unreadable
body is an "unknown" diagnosis.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from . import jsoncodec
from .redact import redact_text

# Error bodies are small; anything past this is an echoed request or noise, not the error.
MAX_SCAN = 512 * 1024
MAX_MESSAGE = 1000
# Redacting the head only is enough: the message is cut to MAX_MESSAGE afterwards.
_REDACT_HEAD = 4 * MAX_MESSAGE
_MAX_DEPTH = 24
_MAX_TEXTS = 64
_MAX_ITEMS = 256
_MAX_EMBEDDED_TRIES = 8

# "foreign": the error says the value was issued for another model, account, caller or conversation.
Kind = Literal[
    "missing", "invalid", "foreign", "orphaned", "duplicate", "not_found", "schema", "unsupported", "unknown"
]


class Diagnosis(BaseModel):
    rule: str
    summary: str
    provider: str
    kind: Kind
    field: str | None = None
    message: str = ""
    index: int | None = None
    position: int | None = None
    block: int | None = None
    item_ids: list[str] = Field(default_factory=list)
    function: str | None = None
    wrapped_by: str | None = None
    cause: str | None = None  # what the error says changed (Anthropic's block binding: "system prompt")


# --------------------------------------------------------------------------------------
# finding the error texts


@dataclass(frozen=True)
class _Context:
    wrappers: tuple[str, ...] = ()  # gateways around the text, outermost first
    provider_name: str | None = None  # OpenRouter's metadata.provider_name


@dataclass(frozen=True)
class _Text:
    text: str
    context: _Context
    envelope: dict | None  # the object whose message this is (code, param, status)


# Keys whose string value is an error text in the envelopes seen (OpenAI, Anthropic, Google, OpenRouter, gateways).
_TEXT_KEYS = ("message", "msg", "detail", "details", "error", "error_message")
_JSON_START = re.compile(r"[{\[]")
_LITELLM_PREFIX = re.compile(r"\s*litellm\.\w+")
_COPILOT_BODY_CODE = "invalid_request_body"


def _decode(body: Any) -> str:
    if isinstance(body, str):
        return body[:MAX_SCAN]
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body[:MAX_SCAN]).decode("utf-8", "replace")
    return ""


_NOT_JSON = object()


def _parse(text: str) -> Any:
    """The JSON value of a whole text, or _NOT_JSON."""
    stripped = text.strip()
    if not stripped:
        return _NOT_JSON
    try:
        return jsoncodec.loads(stripped)
    except (ValueError, RecursionError):
        return _NOT_JSON


def _embedded(text: str) -> Any:
    """A JSON object inside a text: the whole text, or after a prefix such as "Upstream error: " or "400 - "."""
    whole = _parse(text)
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
        self.texts: list[_Text] = []
        self.seen: set[str] = set()

    def full(self) -> bool:
        return len(self.texts) >= _MAX_TEXTS

    def add_text(self, text: str, context: _Context, envelope: dict | None, depth: int) -> None:
        if self.full() or depth > _MAX_DEPTH or not text.strip() or text in self.seen:
            return
        self.seen.add(text)
        if _LITELLM_PREFIX.match(text):
            context = _Context(context.wrappers + ("litellm",), context.provider_name)
        self.texts.append(_Text(text, context, envelope))
        inner = _embedded(text)
        if inner is not None:
            self.walk(inner, context, depth + 1)

    def walk(self, value: Any, context: _Context, depth: int) -> None:
        if self.full() or depth > _MAX_DEPTH:
            return
        if isinstance(value, str):
            self.add_text(value, context, None, depth)
        elif isinstance(value, list):
            for item in value[:_MAX_ITEMS]:
                self.walk(item, context, depth + 1)
        elif isinstance(value, dict):
            self._walk_object(value, context, depth)

    def _walk_object(self, value: dict, context: _Context, depth: int) -> None:
        metadata = value.get("metadata")
        raw = metadata.get("raw") if isinstance(metadata, dict) else None
        if isinstance(raw, str):
            name = metadata.get("provider_name")
            context = _Context(context.wrappers + ("openrouter",), name if isinstance(name, str) else None)
        if value.get("code") == _COPILOT_BODY_CODE:
            context = _Context(context.wrappers + ("copilot",), context.provider_name)
        # The object's own texts first (outer), then what is nested in it (inner).
        for key in _TEXT_KEYS:
            text = value.get(key)
            if isinstance(text, str):
                self.add_text(text, context, value, depth)
        if isinstance(raw, str):
            self.add_text(raw, context, value, depth + 1)
        for key, nested in list(value.items())[:_MAX_ITEMS]:
            if isinstance(nested, (dict, list)) and not (key == "metadata" and isinstance(raw, str)):
                self.walk(nested, context, depth + 1)


def _collect(text: str, doc: Any) -> list[_Text]:
    """The error texts of a body, outermost first; `doc` is the body's JSON value (or _NOT_JSON)."""
    collector = _Collector()
    if isinstance(doc, (dict, list)):
        collector.walk(doc, _Context(), 0)
    elif isinstance(doc, str):
        collector.add_text(doc, _Context(), None, 0)
    elif doc is _NOT_JSON:
        collector.add_text(text.strip(), _Context(), None, 0)
    return collector.texts


def error_messages(body: bytes | str) -> list[str]:
    """Every error message text in a body, innermost last.

    Walks JSON (objects, arrays such as Gemini's `[{"error":…}]`, `error.message`, `error.metadata.raw`, messages
    that are themselves JSON or hold JSON after a prefix like "Upstream error: "), falling back to the raw text
    when the body is not JSON.
    """
    try:
        text = _decode(body)
        return [found.text for found in _collect(text, _parse(text))]
    except Exception:  # noqa: BLE001 - a diagnosis helper must never break the response path
        return []


# --------------------------------------------------------------------------------------
# rules


@dataclass(frozen=True)
class _Rule:
    rule: str
    provider: str
    kind: Kind
    field: str | None
    # A lower-case phrase every text the rule matches holds (whitespace collapsed): skips the regex cheaply.
    needle: str
    pattern: re.Pattern[str]
    summary: str
    generic: bool = False  # only when no specific rule matched any text
    refine: Callable[[re.Match[str], dict[str, Any]], None] | None = None


def _rx(*parts: str) -> re.Pattern[str]:
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL)


# Optional backticks around a name: some copies of a text lose them.
_B = "`?"
_Q = "['\"]"
# "function call `default_api:name`" or, with the backticks lost, "function call default_api:name" (the name may
# even run into the next word: "…-serverin the 12. content block").
_FUNCTION = r"function\s+call\s+(?:`(?P<fq>[^`]{1,300})`|(?P<fb>[^\s`]{1,300}?))"
_ANTHROPIC_AT = r"(?:messages\.(?P<index>\d+)\.content\.(?P<block>\d+)"
_IDS = r"(?P<ids>[\w:\-\[\]]+(?:\s*,\s*[\w:\-\[\]]+)*)"

_GEMINI_POSITION = _rx(_FUNCTION, r"\s*,\s*position\s+(?P<pos>\d+)")
_PATH_INDEX = re.compile(r"(?:contents|messages|input)\.?\[(\d+)\]")
_PATH_PART = re.compile(r"\.(?:parts|content)\.?\[(\d+)\]")
_SCHEMA_LOCATION = _rx(r"Location:\s*(?P<loc>\S+)")
_SCHEMA_PROPERTY = re.compile(r"/properties/([^/\s.,]+)")
_MESSAGE_AT = re.compile(r"^messages?\[(\d+)\]")
_DEFAULT_API = "default_api:"


def _gemini_position(match: re.Match[str], found: dict[str, Any]) -> None:
    detail = _GEMINI_POSITION.search(match.string, match.end())
    if detail is not None:
        found.update(_groups(detail))


def _path(match: re.Match[str], found: dict[str, Any]) -> None:
    path = match.group("path")
    index = _PATH_INDEX.search(path)
    part = _PATH_PART.search(path)
    found["index"] = int(index.group(1)) if index else None
    found["block"] = int(part.group(1)) if part else None


def _schema_field(match: re.Match[str], found: dict[str, Any]) -> None:
    location = _SCHEMA_LOCATION.search(match.string, match.end())
    names = _SCHEMA_PROPERTY.findall(location.group("loc")) if location else []
    found["field"] = names[-1] if names else None


# Anthropic's block binding names what changed in a tail sentence: "The `system` prompt differs from the one this
# block was created with." (anomalyco/opencode #48637). Only that one is quoted; the same shape is read for the others.
_BINDING_CAUSE = _rx(
    r"(?:^|[.!]\s+)(?P<cause>[^.]{1,160}?)\s+differs?\s+from\s+the\s+ones?\s+(?:this|the)\s+block\s+was\s+created\s+with"
)
_ARTICLE = re.compile(r"^(?:the|an?)\s+", re.IGNORECASE)


def _binding_cause(match: re.Match[str], found: dict[str, Any]) -> None:
    tail = _BINDING_CAUSE.search(match.string, match.end())
    if tail is not None:
        cause = " ".join(_ARTICLE.sub("", tail.group("cause").strip()).replace("`", "").split())
        found["cause"] = cause or None


_SIGNATURE_MISSING = "a function call of the current turn was sent back without the thought signature issued with it"
_REASONING_CONTENT_MISSING = "an assistant tool-call message was sent back without its reasoning_content"

_RULES: tuple[_Rule, ...] = (
    # Google: Gemini API, Vertex AI and their OpenAI-compatible endpoints (PROTOCOLS.md 4(d), 5(d))
    _Rule(
        "gemini_signature_missing",
        "gemini",
        "missing",
        "thought_signature",
        "thought",
        _rx(r"function\s+call\s+is\s+missing\s+a\s*thought_?signature\s+in\s+function_?call\s+parts"),
        _SIGNATURE_MISSING,
        refine=_gemini_position,
    ),
    _Rule(
        "vertex_signature_missing",
        "vertex",
        "missing",
        "thought_signature",
        "content block",
        _rx(
            _FUNCTION,
            r"\s*in\s+the\s+(?P<pos>\d+)\.?\s*content\s+block\s+is\s+missing\s*a\s*",
            _B,
            "thought_?signature",
        ),
        _SIGNATURE_MISSING,
    ),
    _Rule(
        "signature_not_base64",
        "gemini",
        "invalid",
        "thought_signature",
        "base64",
        _rx(
            r"Invalid\s+value\s+at\s+'(?P<path>[^']{0,200}thought_?signature[^']{0,100})'[^\n]{0,400}?",
            r"Base64\s+decoding\s+failed",
        ),
        "a thought signature is not valid base64 (its alphabet or padding was changed on the way back)",
        refine=_path,
    ),
    _Rule(
        "signature_invalid",
        "gemini",
        "invalid",
        "thought_signature",
        "thought signature",
        _rx(r"thought\s+signature\s+is\s+not\s+valid|corrupted\s+thought\s+signature|invalid\s+thought\s+signature"),
        "a thought signature was sent back that the model did not issue for that part (altered, truncated, or "
        "from another response or model)",
    ),
    _Rule(
        "gemini_turn_order",
        "gemini",
        "invalid",
        "contents",
        "turn comes immediately after",
        _rx(
            r"function\s+call\s+turn\s+comes\s+immediately\s+after\s+a\s+user\s+turn\s+or\s+after\s+a\s+function\s+",
            r"response\s+turn|function\s+response\s+turn\s+comes\s+immediately\s+after\s+a\s+function\s+call\s+turn",
        ),
        "a function call turn does not follow a user or function response turn (or a function response turn "
        "does not follow a function call turn)",
    ),
    _Rule(
        "gemini_function_response_count",
        "gemini",
        "invalid",
        "functionResponse",
        "function response parts",
        _rx(
            r"number\s+of\s+function\s+response\s+parts\s+is\s+equal\s+to\s+the\s+number\s+of\s+function\s+call\s+parts"
        ),
        "the function response turn does not answer every function call of the turn before it",
    ),
    # OpenAI Responses API (PROTOCOLS.md 3(d))
    _Rule(
        "responses_reasoning_missing",
        "openai",
        "missing",
        "reasoning item",
        "'reasoning' item",
        _rx(
            r"Item\s+'(?P<id1>[^']{1,200})'\s+of\s+type\s+'[^']{1,100}'\s+was\s+provided\s+without\s+its\s+",
            r"required\s+'reasoning'\s+item:\s*'(?P<id2>[^']{1,200})'",
        ),
        "an output item was sent back without the reasoning item that must come right before it",
    ),
    _Rule(
        "responses_reasoning_orphaned",
        "openai",
        "orphaned",
        "reasoning item",
        "required following item",
        _rx(
            r"Item\s+'(?P<id1>[^']{1,200})'\s+of\s+type\s+'reasoning'\s+was\s+provided\s+without\s+its\s+",
            r"required\s+following\s+item",
        ),
        "a reasoning item was sent back without the item it produced right after it",
    ),
    _Rule(
        "responses_duplicate_item",
        "openai",
        "duplicate",
        "item",
        "duplicate item",
        _rx(r"Duplicate\s+item\s+found\s+with\s+id\s+'?(?P<id1>[\w\-]+)"),
        "an item the previous_response_id chain already holds was sent again",
    ),
    _Rule(
        "responses_item_not_found",
        "openai",
        "not_found",
        "item",
        "not found",
        _rx(r"Item\s+with\s+id\s+'(?P<id1>[^']{1,200})'\s+not\s+found"),
        "an item was sent by id only, but the server does not hold it (its response was not stored)",
    ),
    _Rule(
        "responses_previous_response_not_found",
        "openai",
        "not_found",
        "previous_response_id",
        "previous response",
        _rx(r"Previous\s+response\s+with\s+id\s+'(?P<id1>[^']{1,200})'\s+not\s+found"),
        "previous_response_id names a response the server does not hold",
    ),
    # code invalid_encrypted_content: "The encrypted content gAAA...DQ== could not be verified." (openai/codex #8145)
    # and the 2026 wording that names the item, "The encrypted content for item rs_… could not be verified. Reason:
    # Encrypted content could not be decrypted or parsed." (Wei-Shaw/sub2api #2863, openai/codex #17541)
    _Rule(
        "responses_encrypted_content_invalid",
        "openai",
        "invalid",
        "encrypted_content",
        "encrypted content",
        _rx(
            r"encrypted\s+content\b(?:\s+for\s+item\s+'?(?P<id1>(?:rs|cmp)_[\w\-]{1,200})'?)?",
            r".{0,300}?could\s+not\s+be\s+(?:verified|decrypted)",
        ),
        "a reasoning item's encrypted_content is not a value the server issued (altered, truncated, or from "
        "another organisation, model or deployment)",
    ),
    # xAI (docs.x.ai reasoning guide; hackerai-tech/hackerai PR #996): the same text for an edited blob and for one
    # from another xAI account or vendor.
    _Rule(
        "responses_encrypted_content_invalid",
        "xai",
        "invalid",
        "encrypted_content",
        "could not decrypt the provided",
        _rx(r"Could\s+not\s+decrypt\s+the\s+provided\s+", _B, "encrypted_content", _B),
        "a reasoning item's encrypted_content could not be decrypted (edited, or issued to another xAI account or "
        "by another provider)",
    ),
    _Rule(
        "tool_result_missing",
        "openai",
        "missing",
        "tool result",
        "no tool output found",
        _rx(r"No\s+tool\s+output\s+found\s+for\s+function\s+call\s+(?P<ids>[\w\-]+)"),
        "a function call has no function_call_output with its call_id",
    ),
    _Rule(
        "tool_result_orphaned",
        "openai",
        "orphaned",
        "tool result",
        "no tool call found",
        _rx(r"No\s+tool\s+call\s+found\s+for\s+function\s+call\s+output\s+with\s+call_id\s+(?P<ids>[\w\-]+)"),
        "a function_call_output answers a call_id that no function call in the input has",
    ),
    # Anthropic Messages API (PROTOCOLS.md 6(d))
    _Rule(
        "anthropic_thinking_expected",
        "anthropic",
        "missing",
        "thinking block",
        "redacted_thinking",
        _rx(
            _ANTHROPIC_AT,
            r"\.type:\s*)?Expected\s+",
            _B,
            "thinking",
            _B,
            r"\s+or\s+",
            _B,
            "redacted_thinking",
            _B,
            r",\s*but\s+found\s+",
        ),
        "with thinking enabled, the final assistant message with tool use must start with its thinking block",
    ),
    _Rule(
        "anthropic_signature_missing",
        "anthropic",
        "missing",
        "signature",
        "field required",
        _rx(_ANTHROPIC_AT, r")\.thinking\.signature:\s*Field\s+required"),
        "a thinking block was sent back without its signature",
    ),
    # Claude Fable 5.1 and later bind a thinking block to the prefix it was created under (platform.claude.com
    # preserved-thinking docs, "fix bound to a different conversation"; the text as anomalyco/opencode #48637
    # quotes it). Before anthropic_signature_invalid: the text starts the same.
    _Rule(
        "anthropic_block_binding",
        "anthropic",
        "foreign",
        "signature",
        "bound to a different conversation",
        _rx(
            _ANTHROPIC_AT,
            r":\s*)?(?:Invalid\s+",
            _B,
            "signature",
            _B,
            r"\s+in\s+",
            _B,
            "thinking",
            _B,
            r"\s+block\.?\s+)?The\s+block\s+is\s+bound\s+to\s+a\s+different\s+conversation",
        ),
        "a thinking block was sent back under another prefix than the one it was created under (the system prompt, "
        "the tools or an earlier turn changed)",
        refine=_binding_cause,
    ),
    # Without the beta header, the binding controls are refused (Wei-Shaw/sub2api PR #6677).
    _Rule(
        "anthropic_block_binding_beta",
        "anthropic",
        "schema",
        "thinking.block_binding",
        "block_binding",
        _rx(r"thinking\.(?:\w+\.)?block_binding:\s*Extra\s+inputs\s+are\s+not\s+permitted"),
        "thinking.block_binding was sent without the anthropic-beta value that enables it "
        "(thinking-binding-controls-2026-08-01)",
    ),
    _Rule(
        "anthropic_signature_invalid",
        "anthropic",
        "invalid",
        "signature",
        "signature",
        _rx(_ANTHROPIC_AT, r":\s*)?Invalid\s+", _B, "signature", _B, r"\s+in\s+", _B, "thinking", _B, r"\s+block"),
        "a thinking block's signature is not the one issued for its text",
    ),
    _Rule(
        "anthropic_redacted_data_invalid",
        "anthropic",
        "invalid",
        "data",
        "redacted_thinking",
        _rx(_ANTHROPIC_AT, r":\s*)?Invalid\s+", _B, "data", _B, r"\s+in\s+", _B, "redacted_thinking", _B, r"\s+block"),
        "a redacted_thinking block's data is not a value the API issued",
    ),
    _Rule(
        "anthropic_thinking_modified",
        "anthropic",
        "invalid",
        "thinking block",
        "cannot be modified",
        _rx(
            _ANTHROPIC_AT,
            r":\s*)?",
            _B,
            "thinking",
            _B,
            r"\s+or\s+",
            _B,
            "redacted_thinking",
            _B,
            r"\s+blocks\s+in\s+the\s+latest\s+assistant\s+message\s+cannot\s+be\s+modified",
        ),
        "the thinking blocks of the latest assistant message differ from the ones in the original response",
    ),
    _Rule(
        "tool_result_orphaned",
        "anthropic",
        "orphaned",
        "tool result",
        "tool_use_id",
        _rx(
            _ANTHROPIC_AT,
            r":\s*)?unexpected\s+",
            _B,
            "tool_use_id",
            _B,
            r"\s+found\s+in\s+",
            _B,
            r"\w+",
            _B,
            r"\s+blocks:\s*",
            _IDS,
        ),
        "a tool_result block answers a tool_use id that the message before it does not have",
    ),
    _Rule(
        "tool_result_missing",
        "anthropic",
        "missing",
        "tool result",
        "ids were found without",
        _rx(
            r"messages\.(?P<index>\d+):\s*",
            _B,
            "tool_use",
            _B,
            r"\s+ids\s+were\s+found\s+without\s+",
            _B,
            "tool_result",
            _B,
            r"\s+blocks\s+immediately\s+after:\s*",
            _IDS,
        ),
        "a tool_use block has no tool_result block in the next message",
    ),
    _Rule(
        "content_empty",
        "anthropic",
        "schema",
        "content",
        "non-empty content",
        _rx(r"messages\.(?P<index>\d+):\s*all\s+messages\s+must\s+have\s+non-empty\s+content"),
        "a message other than the final assistant message has empty content",
    ),
    # DeepSeek's Anthropic-compatible endpoint (OEvortex/aether #31, hermes-agent #17992), in an OpenAI envelope
    _Rule(
        "deepseek_thinking_missing",
        "deepseek",
        "missing",
        "thinking block",
        "content[].thinking",
        _rx(r"The\s+", _B, r"content\[\]\.thinking", _B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
        "an assistant turn with tool use was sent back without its thinking block",
    ),
    # reasoning_content (PROTOCOLS.md 7(d))
    _Rule(
        "reasoning_content_missing",
        "deepseek",
        "missing",
        "reasoning_content",
        "reasoning_content",
        _rx(
            r"Missing\s+",
            _B,
            "reasoning_content",
            _B,
            r"\s+field\s+in\s+the\s+assistant\s+message",
            r"(?:\s+at\s+message\s+index\s+(?P<index>\d+))?",
        ),
        _REASONING_CONTENT_MISSING,
    ),
    _Rule(
        "reasoning_content_missing",
        "deepseek",
        "missing",
        "reasoning_content",
        "reasoning_content",
        _rx(r"The\s+", _B, "reasoning_content", _B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
        _REASONING_CONTENT_MISSING,
    ),
    _Rule(
        "reasoning_content_missing",
        "moonshot",
        "missing",
        "reasoning_content",
        "reasoning_content",
        _rx(
            r"thinking\s+is\s+enabled\s+but\s+reasoning_content\s+is\s+missing\s+in\s+assistant\s+tool\s+call\s+",
            r"message(?:\s+at\s+index\s+(?P<index>\d+))?",
        ),
        _REASONING_CONTENT_MISSING,
    ),
    # OpenAI chat completions, as OpenAI-compatible hosts repeat them
    _Rule(
        "tool_result_orphaned",
        "openai",
        "orphaned",
        "tool result",
        "must be a response to",
        _rx(
            r"messages\s+with\s+role\s+",
            _Q,
            "tool",
            _Q,
            r"\s+must\s+be\s+a\s+response\s+to\s+a\s+",
            r"prece{1,2}ding\s+message\s+with\s+",
            _Q,
            "tool_calls",
            _Q,
        ),
        "a tool message does not answer a tool call of the assistant message before it",
    ),
    _Rule(
        "tool_result_missing",
        "openai",
        "missing",
        "tool result",
        "must be followed by tool messages",
        _rx(
            r"assistant\s+message\s+with\s+",
            _Q,
            "tool_calls",
            _Q,
            r"\s+must\s+be\s+followed\s+by\s+tool\s+",
            r"messages\s+responding\s+to\s+each\s+",
            _Q,
            "tool_call_id",
            _Q,
            r"(?:.{0,80}?did\s+not\s+have\s+response\s+messages:\s*",
            _IDS,
            ")?",
        ),
        "an assistant message's tool calls are not each followed by a tool message",
    ),
    _Rule(
        "content_empty_array",
        "openai",
        "schema",
        "content",
        "empty array",
        _rx(r"Invalid\s+'(?P<path>[^']{0,200}content)':\s*empty\s+array"),
        "a message's content is an empty array",
        refine=_path,
    ),
    # Reasoning state another model, account or caller issued (foreign state)
    _Rule(
        "encrypted_content_foreign",
        "gateway",
        "foreign",
        "encrypted_content",
        "not issued to this caller",
        _rx(r"reasoning\s+", _B, "encrypted_content", _B, r"\s+was\s+not\s+issued\s+to\s+this\s+caller"),
        "a reasoning item's encrypted_content was issued to another caller of the gateway",
    ),
    # hackerai-tech/hackerai PR #1171 (the text is cut there, after "different model")
    _Rule(
        "encrypted_content_foreign",
        "openrouter",
        "foreign",
        "reasoning_details",
        "produced under a different model",
        _rx(
            r"encrypted\s+reasoning\s+or\s+compaction\s+content\s+that\s+was\s+produced\s+under\s+a\s+",
            r"different\s+model",
        ),
        "encrypted reasoning sent back was produced under another model",
    ),
    # OpenAI models on Bedrock (BerriAI/litellm #41793)
    _Rule(
        "encrypted_content_foreign",
        "bedrock",
        "foreign",
        "encrypted_content",
        "created for a different account or model",
        _rx(r"encrypted\s+reasoning\s+was\s+created\s+for\s+a\s+different\s+account\s+or\s+model"),
        "encrypted reasoning sent back was created for another account or model",
    ),
    # Bedrock Converse, a non-Claude model given Claude's reasoning text (UKGovernmentBEIS/inspect_ai #5217)
    _Rule(
        "reasoning_text_unsupported",
        "bedrock",
        "foreign",
        "reasoningContent.reasoningText.text",
        "reasoningcontent.reasoningtext.text",
        _rx(r"does(?:n['\u2019]t|\s+not)\s+support\s+the\s+reasoningContent\.reasoningText\.text\s+field"),
        "reasoning text another model produced was sent to a model that only takes its own encrypted reasoning",
    ),
    # DeepSeek's /anthropic endpoint has no redacted_thinking block, which only Anthropic issues (HTTP 422)
    _Rule(
        "redacted_thinking_unsupported",
        "deepseek",
        "foreign",
        "redacted_thinking",
        "unknown variant",
        _rx(
            r"(?:messages\[(?P<index>\d+)\]\.content(?:\[(?P<block>\d+)\])?:\s*)?unknown\s+variant\s+",
            _B,
            "redacted_thinking",
            _B,
        ),
        "a redacted_thinking block (which only Anthropic issues) was sent to DeepSeek",
    ),
    # Fireworks behind LiteLLM, given Claude's thinking_blocks (AndyMik90/Aperant #1988)
    _Rule(
        "thinking_blocks_not_permitted",
        "fireworks",
        "foreign",
        "thinking_blocks",
        "thinking_blocks",
        _rx(r"Extra\s+inputs\s+are\s+not\s+permitted,?\s+field:\s*'(?P<path>[^']{0,200}thinking_blocks)'"),
        "Claude's thinking_blocks were sent to a model that does not take them",
        refine=_path,
    ),
    # GitHub Copilot (PROTOCOLS.md 1(d))
    _Rule(
        "copilot_schema",
        "copilot",
        "schema",
        None,
        "failed to validate schema",
        _rx(r"invalid\s+request\s+body,\s*failed\s+to\s+validate\s+schema"),
        "the request body does not fit Copilot's schema",
        refine=_schema_field,
    ),
    _Rule(
        "unsupported_api_for_model",
        "copilot",
        "unsupported",
        "model",
        "responses api",
        _rx(r"model\s+\S+\s+is\s+not\s+supported\s+via\s+Responses\s+API"),
        "the model is not served on this API (Copilot serves Gemini on /chat/completions, not /responses)",
    ),
    # litellm #28053, pydantic-ai #8232: `{"code":"invalid_reasoning_effort","message":…}`
    _Rule(
        "reasoning_effort_unsupported",
        "copilot",
        "unsupported",
        "reasoning_effort",
        "does not support reasoning effort",
        _rx(r"model\s+\S+\s+does\s+not\s+support\s+reasoning\s+effort"),
        "the model does not take a reasoning effort",
    ),
    _Rule(
        "copilot_invalid_request_body",
        "copilot",
        "invalid",
        None,
        "invalid request body",
        _rx(r"^\s*invalid\s+request\s+body\s*\.?\s*$"),
        "Copilot refused the body without saying why (seen for a missing or altered reasoning_opaque, and for "
        '"content": [] on an assistant message)',
        generic=True,
    ),
    # OpenRouter (PROTOCOLS.md 2(d)): its own words in front of the upstream error
    _Rule(
        "openrouter_reasoning_details",
        "openrouter",
        "missing",
        "reasoning_details",
        "openrouter reasoning details",
        _rx(r"models\s+require\s+OpenRouter\s+reasoning\s+details\s+to\s+be\s+preserved"),
        "OpenRouter needs each assistant message's reasoning_details sent back unmodified",
        generic=True,
    ),
)

# Every rule id, with its kind and field (a rule id keeps one kind whichever provider's text it matches): the
# formats' static checks (`WireFormat.check`) name the rules a request breaks with these ids.
RULES: dict[str, tuple[Kind, str | None]] = {rule.rule: (rule.kind, rule.field) for rule in reversed(_RULES)}
# Rules whose text names no cause (Copilot's bare "invalid request body", OpenRouter's preamble).
GENERIC_RULES = frozenset(rule.rule for rule in _RULES if rule.generic)

# What the client must send back, named in the gateway's wire format, for the fields upstream texts name.
_GATEWAY_FIELDS = {
    ("copilot", "thought_signature"): "reasoning_opaque",
    ("openrouter", "thought_signature"): "reasoning_details",
    ("openrouter", "thinking block"): "reasoning_details",
    ("openrouter", "signature"): "reasoning_details",
}
# OpenRouter's metadata.provider_name, for an upstream text no rule knows.
_OPENROUTER_PROVIDERS = {
    "google": "vertex",
    "google vertex": "vertex",
    "google ai studio": "gemini",
    "anthropic": "anthropic",
    "amazon bedrock": "bedrock",
    "moonshot ai": "moonshot",
    "deepseek": "deepseek",
    "openai": "openai",
    "azure": "azure",
}
_ITEM_FIELDS = {"rs": "reasoning item", "fc": "function_call item", "msg": "message item"}
_PARAM_INDEX = re.compile(r"^(?:messages|input|contents)\.?\[(\d+)\]")


def _groups(match: re.Match[str]) -> dict[str, Any]:
    """Index, position, block, function and ids from a match's named groups."""
    groups = {k: v for k, v in match.groupdict().items() if v is not None}
    found: dict[str, Any] = {}
    if "index" in groups:
        found["index"] = int(groups["index"])
    if "pos" in groups:
        found["position"] = int(groups["pos"])
        found["index"] = found["position"] - 1
    if "block" in groups:
        found["block"] = int(groups["block"])
    name = groups.get("fq") or groups.get("fb")
    if name:
        found["function"] = name[len(_DEFAULT_API) :] if name.startswith(_DEFAULT_API) else name
    ids = [groups[k] for k in ("id1", "id2") if k in groups]
    for value in (groups.get("ids") or "").split(","):
        value = value.strip()
        at = _MESSAGE_AT.match(value)
        if at:  # Qwen names the unanswered message instead of the call ids: "message[15].role"
            found.setdefault("index", int(at.group(1)))
        elif value:
            ids.append(value)
    if ids:
        found["item_ids"] = ids
    return found


def _item_field(item_id: str) -> str:
    return _ITEM_FIELDS.get(item_id.split("_", 1)[0], "item")


def _match(rule: _Rule, found_text: _Text, folded: str) -> Diagnosis | None:
    if rule.needle not in folded:
        return None
    match = rule.pattern.search(found_text.text)
    if match is None:
        return None
    found = _groups(match)
    if rule.refine is not None:
        rule.refine(match, found)
    field = found.pop("field", rule.field)
    if rule.field == "item" and found.get("item_ids"):
        field = _item_field(found["item_ids"][0])
    wrapped_by = next((w for w in found_text.context.wrappers if w != rule.provider), None)
    field = _GATEWAY_FIELDS.get((wrapped_by, field), field) if wrapped_by else field
    if found.get("index") is None:
        found["index"] = _param_index(found_text.envelope)
    return Diagnosis(
        rule=rule.rule,
        summary=rule.summary,
        provider=rule.provider,
        kind=rule.kind,
        field=field,
        message=_clean(found_text.text),
        wrapped_by=wrapped_by,
        **found,
    )


def _param_index(envelope: dict | None) -> int | None:
    """OpenAI-style envelopes point at the message in `param` ("messages.[6].role")."""
    param = envelope.get("param") if envelope else None
    at = _PARAM_INDEX.match(param) if isinstance(param, str) else None
    return int(at.group(1)) if at else None


def _clean(text: str) -> str:
    return redact_text(text.strip()[:_REDACT_HEAD])[:MAX_MESSAGE]


def _unknown_provider(found_text: _Text | None, doc_is_anthropic: bool) -> str:
    """Who sent an unrecognised text, only from what the body says outright."""
    if found_text is None:
        return "anthropic" if doc_is_anthropic else "unknown"
    context, envelope = found_text.context, found_text.envelope or {}
    if context.wrappers and context.wrappers[0] == "openrouter":
        name = (context.provider_name or "").strip().lower()
        return _OPENROUTER_PROVIDERS.get(name, "openrouter")
    if "copilot" in context.wrappers:
        return "copilot"
    if "provider returned error" in found_text.text.lower():  # OpenRouter's own words, without its metadata
        return "openrouter"
    if doc_is_anthropic:
        return "anthropic"
    status = envelope.get("status")
    if isinstance(status, str) and status.isupper() and "_" in status:  # google.rpc codes: "INVALID_ARGUMENT"
        return "gemini"
    return "unknown"


def _classify(status: int, body: bytes | str) -> Diagnosis:
    text = _decode(body)
    doc = _parse(text)
    texts = _collect(text, doc)
    innermost_first = list(reversed(texts))
    folded = [" ".join(found.text.lower().split()) for found in innermost_first]
    for generic in (False, True):
        for found_text, folded_text in zip(innermost_first, folded):
            for rule in _RULES:
                if rule.generic is generic:
                    diagnosis = _match(rule, found_text, folded_text)
                    if diagnosis is not None:
                        return diagnosis
    innermost = innermost_first[0] if innermost_first else None
    provider = _unknown_provider(innermost, isinstance(doc, dict) and doc.get("type") == "error")
    wrappers = innermost.context.wrappers if innermost else ()
    return Diagnosis(
        rule="unknown",
        summary=f"no known rule matches this HTTP {status} error",
        provider=provider,
        kind="unknown",
        message=_clean(innermost.text if innermost else text),
        index=_param_index(innermost.envelope) if innermost else None,
        wrapped_by=next((w for w in wrappers if w != provider), None),
    )


def classify(status: int, body: bytes | str) -> Diagnosis:
    """The best matching rule for an error response; rule "unknown" (with the text) when nothing matches.

    The innermost text that a specific rule matches wins; generic texts (Copilot's bare "invalid request body",
    OpenRouter's "reasoning details" preamble) only when no specific rule matched any text. A text that came
    inside a gateway's envelope (OpenRouter's metadata.raw, Copilot's `invalid_request_body` code, a LiteLLM
    exception) names that gateway in `wrapped_by`.
    """
    try:
        return _classify(status, body)
    except Exception:  # noqa: BLE001 - a diagnosis helper must never break the response path
        return Diagnosis(
            rule="unknown",
            summary=f"no known rule matches this HTTP {status} error",
            provider="unknown",
            kind="unknown",
            message=_clean(_decode(body)) if isinstance(body, (str, bytes)) else "",
        )
