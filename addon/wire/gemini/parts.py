"""What a Gemini part holds, and the names the rest of the folder reads it by: a part's thought signature (under
either spelling), its function call, whether it is answer text; a model content; a model's name in the path; an
answer's text key."""

from __future__ import annotations

import hashlib
from typing import Any

from ...shared.records import CONTENT_KEY_PREFIXES

NAME = "gemini_native"
SIGNATURE = "thoughtSignature"
SIGNATURE_SNAKE = "thought_signature"
SIGNATURE_KEYS = (SIGNATURE, SIGNATURE_SNAKE)
FUNCTION_CALL_KEYS = ("functionCall", "function_call")
FUNCTION_RESPONSE_KEYS = ("functionResponse", "function_response")
# Record field saying which answer text part carried a text signature: "first" or "last".
SIGNED_TEXT_PART = "signedTextPart"
TEXT_KEY_PREFIX = CONTENT_KEY_PREFIXES[1]  # "gemini-text:"
METHODS = (":generateContent", ":streamGenerateContent")


def path_model(path: str) -> str | None:
    """The model named in a `…/models/{model}:method` path."""
    route = path.split("?", 1)[0]
    head, colon, _ = route.rpartition(":")
    _, found, model = head.rpartition("/models/")
    if not colon or not found or not model or "/" in model:
        return None
    return model


def text_key(answer: str) -> str:
    """The cache key of a signed answer: its answer text, hashed (the record itself is bound to the model)."""
    return TEXT_KEY_PREFIX + hashlib.sha256(answer.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def part_signature(part: dict[str, Any]) -> str | None:
    """The part's thought signature as it is cached and restored: the first of its signature keys to hold a string."""
    for key in SIGNATURE_KEYS:
        value = part.get(key)
        if isinstance(value, str):
            return value
    return None


def shown_signature(part: dict[str, Any]) -> tuple[str, Any] | None:
    """The part's thought signature as a transcript shows it, with the key it came under: the first of its signature
    keys to hold anything but null or the empty string (a value of another type is shown as its JSON)."""
    for key in SIGNATURE_KEYS:
        value = part.get(key)
        if value is not None and value != "":
            return key, value
    return None


def has_signature(part: dict[str, Any]) -> bool:
    """Whether the client put any value in a signature field (null counts as none)."""
    return any(part.get(key) is not None for key in SIGNATURE_KEYS)


def function_call(part: dict[str, Any]) -> dict[str, Any] | None:
    for key in FUNCTION_CALL_KEYS:
        call = part.get(key)
        if isinstance(call, dict):
            return call
    return None


def is_model_content(content: Any) -> bool:
    """A content of the model's, with its parts."""
    return isinstance(content, dict) and content.get("role") == "model" and isinstance(content.get("parts"), list)


def is_answer_text(part: Any) -> bool:
    return isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("thought") is not True


def call_parts(call: dict[str, Any]) -> tuple[str | None, str | None, Any]:
    """A function call's id, name and arguments (absent arguments are the empty object)."""
    call_id = call.get("id") if isinstance(call.get("id"), str) else None
    name = call.get("name") if isinstance(call.get("name"), str) else None
    arguments = call.get("args")
    return call_id, name, {} if arguments is None else arguments
