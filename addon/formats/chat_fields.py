"""The reasoning state that OpenAI-style chat completions carry, and how each kind is gathered.

Providers extend the assistant message (and its tool calls) with fields of
their own; each kind is assembled from stream fragments in its own way:

* text fields are sent in pieces and concatenated: Copilot's `reasoning_text`
  and `reasoning_opaque`, `reasoning_content` of DeepSeek, Kimi and GLM;
* whole fields arrive once and are kept as sent: the older Gemini
  OpenAI-compatible `thought_signature` and `extra_content` on the message;
* OpenRouter's `reasoning_details` is an array whose entries arrive as
  fragments sharing a type and an index (a signature can come last, alone);
* tool calls carry state of their own: the Gemini OpenAI-compatible
  `extra_content.google.thought_signature`, LiteLLM's
  `provider_specific_fields`, and LiteLLM's `call_…__thought__<signature>` ids.
"""

from __future__ import annotations

from typing import Any

from ..records import split_call_id

TEXT_FIELDS = ("reasoning_text", "reasoning_opaque", "reasoning_content")
WHOLE_FIELDS = ("thought_signature", "extra_content")
DETAILS_FIELD = "reasoning_details"
MESSAGE_FIELDS = (*TEXT_FIELDS, *WHOLE_FIELDS, DETAILS_FIELD)
# Tool call fields; "function." names a field inside the call's `function` object.
CALL_FIELDS = (
    "extra_content",
    "provider_specific_fields",
    "function.thought_signature",
    "function.provider_specific_fields",
)
_DETAIL_IDENTITY = ("type", "index", "format", "id")


def merge_detail_fragments(details: list[dict[str, Any]], fragments: list[Any]) -> None:
    """Folds streamed `reasoning_details` fragments into whole entries, in order of appearance.

    Fragments of one entry share `type` and `index` (an encrypted entry and a
    summary can both have index 0); their strings are concatenated, so a text
    split over many chunks and a signature sent last both end up whole.
    """
    for fragment in fragments:
        if not isinstance(fragment, dict):
            continue
        entry = next(
            (d for d in details if d.get("type") == fragment.get("type") and d.get("index") == fragment.get("index")),
            None,
        )
        if entry is None:
            details.append(dict(fragment))
            continue
        for key, value in fragment.items():
            if key in _DETAIL_IDENTITY:
                if entry.get(key) is None:
                    entry[key] = value
            elif isinstance(value, str) and isinstance(entry.get(key), str):
                entry[key] += value
            elif value is not None:
                entry[key] = value


def call_field(call: dict[str, Any], name: str) -> Any:
    if name.startswith("function."):
        function = call.get("function")
        return function.get(name[len("function.") :]) if isinstance(function, dict) else None
    return call.get(name)


def set_call_field(call: dict[str, Any], name: str, value: Any) -> None:
    if name.startswith("function."):
        function = call.setdefault("function", {})
        if isinstance(function, dict):
            function[name[len("function.") :]] = value
    else:
        call[name] = value


def litellm_short_id(call_id: str) -> str | None:
    """The id a client is left with after stripping LiteLLM's signature suffix (None if it has none)."""
    short, signature = split_call_id(call_id)
    return short if signature is not None else None


def is_missing(name: str, value: Any) -> bool:
    """Whether a request lacks a field: absent, null, or (for arrays) empty."""
    return value is None or (name == DETAILS_FIELD and value == [])
