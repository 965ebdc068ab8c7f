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


def loads(data: bytes | bytearray | str) -> Any:
    """Parse JSON; raises ValueError when it is not JSON (or nested too deep to parse)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        try:
            return json.loads(data)
        except RecursionError as e:  # a valid document thousands of levels deep
            raise ValueError(f"JSON nested too deeply to parse: {e}") from None


class ExactNumber:
    """A number kept as the client wrote it, because parsing and writing it again would change it: an integer
    wider than 64 bits (orjson reads it as a float), 1e400 (infinity), 1.50, 1E5, -0, NaN.

    Repair never looks inside numbers; `dumps` writes the text back as it was.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ExactNumber) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"ExactNumber({self.text!r})"

    def __deepcopy__(self, memo: dict) -> ExactNumber:
        return self  # immutable


# A number token that orjson might not write back as it came: one with a fraction or an exponent, a long
# integer, or -0. Only these need checking; the other integers always come back the same. Matches inside
# strings too ("price: 1.50"), which only costs an exact parse that then finds nothing to keep.
_SUSPECT_NUMBER = re.compile(rb"[:,\[]\s*(-?(?:\d+(?:\.\d+)?[eE][-+]?\d+|\d+\.\d+|\d{19,}|0(?![\d.eE])))")
_I64_MIN, _U64_MAX = -(2**63), 2**64 - 1


def _survives(token: bytes) -> bool:
    """Whether orjson reads and writes this number token back byte for byte."""
    if token in (b"-0",):
        return False
    if token.lstrip(b"-").isdigit():
        return _I64_MIN <= int(token) <= _U64_MAX
    try:
        return orjson.dumps(float(token)) == token
    except (ValueError, OverflowError):
        return False


def _exact_float(text: str) -> Any:
    value = float(text)
    return value if orjson.dumps(value) == text.encode() else ExactNumber(text)


def _exact_int(text: str) -> Any:
    value = int(text)
    return value if _I64_MIN <= value <= _U64_MAX and text != "-0" else ExactNumber(text)


def loads_exact(data: bytes | bytearray) -> Any:
    """Parse a body that may be written back: every number that would not come back as it was sent (see
    `ExactNumber`) is kept as its text. Raises ValueError when it is not JSON (or nested too deep)."""
    if not any(not _survives(match.group(1)) for match in _SUSPECT_NUMBER.finditer(data)):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # what orjson refuses (NaN, a lone surrogate, great depth) the standard library may take
    try:
        return json.loads(bytes(data), parse_float=_exact_float, parse_int=_exact_int, parse_constant=ExactNumber)
    except RecursionError as e:
        raise ValueError(f"JSON nested too deeply to parse: {e}") from None


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


class NotWritable(ValueError):
    """A document that cannot be written as JSON exactly as it was read."""


def _exact_text(value: Any) -> Any:
    if isinstance(value, ExactNumber):
        return orjson.Fragment(value.text)
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps(obj: Any) -> bytes:
    """Compact UTF-8 JSON that keeps key order, string values and `ExactNumber`s exactly."""
    try:
        return orjson.dumps(obj, default=_exact_text)
    except TypeError:
        pass
    # orjson refuses lone surrogates, which the standard library writes as escapes.
    try:
        return json.dumps(obj, separators=(",", ":")).encode()
    except (TypeError, ValueError) as e:
        raise NotWritable(f"cannot be written back exactly: {e}") from None


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
