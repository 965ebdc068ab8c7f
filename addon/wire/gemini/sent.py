"""The thought signatures a Gemini request sends back, held against what the proxy captured for their parts: what an
error that refuses a signature ("Corrupted thought signature.", Vertex AI's "Thought signature is not valid.") is
judged by, since neither names the part.

A function call's signature is found in the cache through its call (by id, or by name and arguments), as the repair
finds it; an answer text part's through its content's calls, or the content's answer text."""

from __future__ import annotations

from typing import Any

from ..base import CacheView, RecordReader, SentValue
from .parts import SIGNATURE, call_parts, function_call, is_model_content, part_signature, text_key
from .repair import answer_text, call_positions


def _call_value(index: int, position: int, part: dict[str, Any], cache: CacheView) -> SentValue | None:
    value = part_signature(part)
    call = function_call(part)
    if value is None or call is None:
        return None
    call_id, name, arguments = call_parts(call)
    hit = cache.call(call_id, name, arguments)
    captured = hit.call.fields.get(SIGNATURE) if hit is not None else None
    return SentValue(
        index=index,
        location=f"contents[{index}].parts[{position}]",
        label=f"function call `{name}`" if name else "function call",
        value=value,
        captured=captured if isinstance(captured, str) else None,
        item_ids=(call_id,) if call_id else (),
        call_id=call_id,
        function=name,
    )


def _text_signature(parts: list[Any], cache: CacheView) -> str | None:
    """The text signature the capture kept for a model content: found through its calls, or its answer text."""
    hits = (cache.call(*call_parts(call)) for _, _, call in call_positions(parts))
    record = next((hit.record for hit in hits if hit is not None), None)
    if record is None and (answer := answer_text(parts)):
        record = cache.record(text_key(answer))
    captured = record.fields.get(SIGNATURE) if record is not None else None
    return captured if isinstance(captured, str) else None


def _text_value(index: int, position: int, value: str, captured: str | None) -> SentValue:
    return SentValue(
        index=index,
        location=f"contents[{index}].parts[{position}]",
        label="answer text part",
        value=value,
        captured=captured,
    )


def _content_values(index: int, parts: list[Any], cache: CacheView) -> list[SentValue]:
    found: list[SentValue] = []
    text_signed = [
        isinstance(part, dict) and function_call(part) is None and part_signature(part) is not None for part in parts
    ]
    text_captured = _text_signature(parts, cache) if any(text_signed) else None
    for position, part in enumerate(parts):
        if text_signed[position]:
            found.append(_text_value(index, position, part_signature(part), text_captured))
        elif isinstance(part, dict) and (value := _call_value(index, position, part, cache)) is not None:
            found.append(value)
    return found


def sent_values(contents: list[Any], keys: list[str], model: str | None, records: RecordReader) -> list[SentValue]:
    """Each thought signature the model contents send back, in order, with the one the proxy captured for its part;
    `keys` are the cache keys the contents can be found under."""
    if not any(is_model_content(content) for content in contents):
        return []
    cache = CacheView(records(keys) if keys else {}, model)
    found: list[SentValue] = []
    for index, content in enumerate(contents):
        if is_model_content(content):
            found += _content_values(index, content["parts"], cache)
    return found
