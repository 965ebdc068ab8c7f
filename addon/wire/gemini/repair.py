"""Gemini's repair: every thought signature a request's model contents lack put back from the cache (on the call it
belongs to, or on the first or last answer text part), and Google's placeholder on a current-turn call nothing was
cached for (see format.py); and how the repair, the check and the lookup read a request's contents."""

from __future__ import annotations

import base64
from typing import Any

from ...shared import jsoncodec
from ...shared.records import ReasoningRecord, RepairAction
from ..base import CacheView, CallHit, RepairContext
from .parts import (
    FUNCTION_RESPONSE_KEYS,
    SIGNATURE,
    SIGNATURE_SNAKE,
    SIGNED_TEXT_PART,
    call_parts,
    function_call,
    has_signature,
    is_answer_text,
    is_model_content,
    part_signature,
    path_model,
    text_key,
)

# Google's documented dummy signature; the Gemini API has taken it base64-encoded, Vertex AI as the literal text.
PLACEHOLDER_PHRASE = "skip_thought_signature_validator"
PLACEHOLDER_BASE64 = base64.b64encode(PLACEHOLDER_PHRASE.encode()).decode()
# Part keys that only a snake_case request uses; such a request gets `thought_signature` on its text parts.
_SNAKE_PART_KEYS = frozenset({"function_call", "function_response", SIGNATURE_SNAKE, "inline_data", "file_data"})


def _is_ordinary_user(content: Any) -> bool:
    """A user content with something other than function results: where the current turn begins."""
    if not isinstance(content, dict) or content.get("role") == "model":
        return False
    parts = content.get("parts")
    if not isinstance(parts, list):
        return False
    return any(isinstance(p, dict) and not any(k in p for k in FUNCTION_RESPONSE_KEYS) for p in parts)


def current_turn_start(contents: list[Any]) -> int:
    """The index after the most recent user content with an ordinary part: Gemini validates from there on."""
    for index in range(len(contents) - 1, -1, -1):
        if _is_ordinary_user(contents[index]):
            return index + 1
    return 0


def answer_text(parts: list[Any]) -> str:
    return jsoncodec.join_text([part["text"] for part in parts if is_answer_text(part)])


def call_positions(parts: list[Any]) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(position, part, functionCall) of every function call part."""
    found = []
    for position, part in enumerate(parts):
        call = function_call(part) if isinstance(part, dict) else None
        if call is not None:
            found.append((position, part, call))
    return found


def uses_snake_case(contents: list[Any]) -> bool:
    return any(
        isinstance(part, dict) and not _SNAKE_PART_KEYS.isdisjoint(part)
        for content in contents
        if isinstance(content, dict) and isinstance(content.get("parts"), list)
        for part in content["parts"]
    )


def signature_key(part: dict[str, Any], snake: bool) -> str:
    """The spelling to write a signature in: the part's own, else the request's."""
    if SIGNATURE_SNAKE in part:
        return SIGNATURE_SNAKE
    if SIGNATURE in part or "functionCall" in part:
        return SIGNATURE
    return SIGNATURE_SNAKE if snake or "function_call" in part else SIGNATURE


def placeholder_value(context: RepairContext) -> str | None:
    """What to send for a signature nothing was cached for, or None when no placeholder is wanted."""
    model = context.model or path_model(context.path) or ""
    if "gemini-3" not in model or context.placeholder == "off":
        return None
    if context.placeholder == "auto":
        return PLACEHOLDER_PHRASE if "/projects/" in context.path.split("?", 1)[0] else PLACEHOLDER_BASE64
    return context.placeholder


def repair_contents(contents: list[Any], cache: CacheView, context: RepairContext) -> list[RepairAction]:
    """Puts back every cached signature a model content lacks, then a placeholder on each current-turn call that
    still lacks one (when the setting asks for it)."""
    snake = uses_snake_case(contents)
    actions: list[RepairAction] = []
    for index, content in enumerate(contents):
        if is_model_content(content):
            actions += _restore(index, content["parts"], cache, snake)
    placeholder = placeholder_value(context)
    if placeholder is None:
        return actions
    for index, position, part, call in unsigned_current_calls(contents):
        key = signature_key(part, snake)
        part[key] = placeholder
        actions.append(
            RepairAction(
                kind="placeholder",
                location=f"contents[{index}].parts[{position}]",
                index=index,
                fields=[key],
                tool_call_id=call_parts(call)[0],
                degraded=True,
            )
        )
    return actions


def unsigned_current_calls(contents: list[Any]) -> list[tuple[int, int, dict[str, Any], dict[str, Any]]]:
    """(content index, part position, part, functionCall) of each current-turn step whose first call is unsigned:
    what Gemini 3 refuses."""
    found = []
    for index in range(current_turn_start(contents), len(contents)):
        content = contents[index]
        calls = call_positions(content["parts"]) if is_model_content(content) else []
        if calls and not has_signature(calls[0][1]):
            found.append((index, *calls[0]))
    return found


def _restore(index: int, parts: list[Any], cache: CacheView, snake: bool) -> list[RepairAction]:
    actions: list[RepairAction] = []
    # A signature goes on one part only, even when two calls share name and arguments (one fingerprint).
    present = {part_signature(part) for part in parts if isinstance(part, dict)} - {None}
    first_hit: CallHit | None = None
    calls = call_positions(parts)
    for position, part, call in calls:
        call_id, name, arguments = call_parts(call)
        hit = cache.call(call_id, name, arguments)
        if hit is None:
            continue
        first_hit = first_hit or hit
        signature = hit.call.fields.get(SIGNATURE)
        if not isinstance(signature, str) or has_signature(part) or signature in present:
            continue
        key = signature_key(part, snake)
        part[key] = signature
        present.add(signature)
        actions.append(
            RepairAction(
                kind="restored",
                location=f"contents[{index}].parts[{position}]",
                index=index,
                fields=[key],
                tool_call_id=call_id or hit.call.id or None,
                response_id=hit.record.response_id,
                via=hit.via,
            )
        )
    if first_hit is not None:
        record = first_hit.record
    elif not calls and (answer := answer_text(parts)):
        record = cache.record(text_key(answer))
    else:
        record = None
    if record is not None:
        actions += _restore_text(index, parts, record, present, snake)
    return actions


def _restore_text(
    index: int, parts: list[Any], record: ReasoningRecord, present: set[str | None], snake: bool
) -> list[RepairAction]:
    signature = record.fields.get(SIGNATURE)
    if not isinstance(signature, str) or signature in present:
        return []
    if any(isinstance(p, dict) and function_call(p) is None and has_signature(p) for p in parts):
        return []
    answers = [position for position, part in enumerate(parts) if is_answer_text(part)]
    if not answers:
        return []
    position = answers[0] if record.fields.get(SIGNED_TEXT_PART) == "first" else answers[-1]
    key = signature_key(parts[position], snake)
    parts[position][key] = signature
    return [
        RepairAction(
            kind="restored",
            location=f"contents[{index}].parts[{position}]",
            index=index,
            fields=[key],
            response_id=record.response_id,
        )
    ]
