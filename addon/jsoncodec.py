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


# What follows a "model" key: its string value.
_MODEL_VALUE = re.compile(rb'\s*:\s*"((?:[^"\\]|\\.)*)"')
_MODEL_KEY = b'"model"'


def sniff_model(body: bytes) -> str | None:
    """The model a request names, read without parsing the body.

    Only answers when every "model" key in the body holds the same string, so a
    nested "model" (a tool schema property, say) can never be mistaken for it.
    A quoted "model" inside a JSON string is escaped (\\"model\\") and skipped.
    """
    values = set()
    position = body.find(_MODEL_KEY)
    while position >= 0:
        if position == 0 or body[position - 1] != 0x5C:  # not preceded by a backslash
            match = _MODEL_VALUE.match(body, position + len(_MODEL_KEY))
            if match:
                values.add(match.group(1))
                if len(values) > 1:
                    return None
        position = body.find(_MODEL_KEY, position + 1)
    if len(values) != 1:
        return None
    try:
        model = loads(b'"' + values.pop() + b'"')
    except ValueError:
        return None
    return model if isinstance(model, str) else None
