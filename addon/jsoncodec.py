"""JSON in and out, fast where it can be and exact where it must be.

orjson parses and writes several times faster than the standard library, which
matters on multi-megabyte chat histories. It refuses a few inputs the standard
library takes (integers wider than 64 bits, lone surrogates); those fall back.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ValueError when it is not JSON."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def join_text(parts: list[str]) -> str:
    """Concatenates streamed string fragments.

    A provider that escapes astral characters as surrogate pairs can split a pair
    across two chunks; joined, the two halves become the character they encode.
    """
    text = "".join(parts)
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON that keeps key order and string values exactly."""
    try:
        return orjson.dumps(obj)
    except TypeError:
        return json.dumps(obj, separators=(",", ":")).encode()


# A "model" key whose string value is not itself inside a JSON string.
_MODEL_FIELD = re.compile(rb'(?<!\\)"model"\s*:\s*"((?:[^"\\]|\\.)*)"')


def sniff_model(body: bytes) -> str | None:
    """The model a request names, read without parsing the body.

    Only answers when every "model" key in the body holds the same string, so a
    nested "model" (a tool schema property, say) can never be mistaken for it.
    """
    values = set(_MODEL_FIELD.findall(body))
    if len(values) != 1:
        return None
    try:
        model = loads(b'"' + values.pop() + b'"')
    except ValueError:
        return None
    return model if isinstance(model, str) else None
