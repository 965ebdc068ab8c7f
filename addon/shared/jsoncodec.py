"""JSON in and out, fast where it can be and exact where it must be.

msgspec parses and orjson writes several times faster than the standard library,
which matters on multi-megabyte chat histories. They refuse a few inputs the
standard library takes (lone surrogates, NaN); those fall back.

A request body the proxy writes back after a repair is read and written with
msgspec instead (`loads_exact`, `dumps_request`): it hands each float's own text
to a hook and reads integers of any width exactly, so every number the client
sent goes back as it was written, at about orjson's speed.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec
import orjson


class TooDeep(ValueError):
    """Valid JSON nested deeper than a parser can follow: to the proxy, a body it cannot read."""

    def __init__(self) -> None:
        super().__init__("JSON nested too deeply to parse")


def why_not_read(error: ValueError) -> str:
    """What a body that `loads` refused is, for a person: "not valid JSON", or nested too deeply."""
    return str(error) if isinstance(error, TooDeep) else "not valid JSON"


_DOCUMENT_DECODER = msgspec.json.Decoder()


def loads(data: bytes | bytearray | str) -> Any:
    """Parse JSON; raises ValueError when it is not JSON (or nested too deeply to parse).

    msgspec rather than orjson: as fast, and it builds a long string straight from the input, where orjson
    holds one more copy of it while parsing (a 50 MB answer text peaked at 50 MB more)."""
    try:
        return _DOCUMENT_DECODER.decode(data)
    except (msgspec.DecodeError, ValueError, RecursionError):
        try:
            return json.loads(data)
        except RecursionError:  # a valid document thousands of levels deep
            raise TooDeep from None


def join_text(parts: list[str]) -> str:
    """Concatenates streamed string fragments.

    A provider that escapes astral characters as surrogate pairs can split a pair
    across two chunks; joined, the two halves become the character they encode.
    """
    return valid_text("".join(parts))


def valid_text(text: str) -> str:
    """`text` as UTF-8 can hold it: a surrogate pair becomes the character it encodes, a lone surrogate (which
    Python's JSON reader lets through, and no writer takes) becomes U+FFFD."""
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


def as_key(value: Any) -> Any:
    """A JSON value as part of a dict key: scalars as they are, arrays and objects (unhashable) by their repr."""
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def pretty(obj: Any) -> bytes:
    """JSON for a person to read: indented by two, key order kept, ending in a line break."""
    try:
        return orjson.dumps(obj, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:  # lone surrogates, integers wider than 64 bits
        return json.dumps(obj, indent=2, ensure_ascii=True).encode() + b"\n"


class ExactNumber:
    """A number kept as the client wrote it, because reading it as a float and writing that again would
    change it: 1e400 (infinity), 1.50, 1E5, 1e-07, -0, NaN. Repair never looks inside numbers."""

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


class NotWritable(ValueError):
    """A document that cannot be written as JSON exactly as it was read."""


def _exact_float(text: str) -> Any:
    value = float(text)
    return value if _REQUEST_ENCODER.encode(value) == text.encode() else ExactNumber(text)


def _exact_int(text: str) -> Any:
    # "-0" would come back as 0; past 4,000 digits int() refuses the text (CPython's guard against slow parses).
    return ExactNumber(text) if text == "-0" or len(text) > 4000 else int(text)


def _raw_number(value: Any) -> Any:
    if isinstance(value, ExactNumber):
        return msgspec.Raw(value.text.encode())
    raise NotImplementedError


_REQUEST_DECODER = msgspec.json.Decoder(float_hook=_exact_float)
_REQUEST_ENCODER = msgspec.json.Encoder(enc_hook=_raw_number)
# Every fast parser reads "-0" as the integer 0: a body with one takes the standard library's path.
_NEGATIVE_ZERO = re.compile(rb"-0(?![\d.eE])")


def _has_negative_zero(data: bytes | bytearray) -> bool:
    """Whether the body holds the number -0 (not -0.5, not "-0" in a string): after `:`, `,` or `[` and any white
    space, or as the whole document."""
    for match in _NEGATIVE_ZERO.finditer(data):
        at = match.start() - 1
        while at >= 0 and data[at] in b" \t\r\n":
            at -= 1
        if at < 0 or data[at] in b":,[":
            return True
    return False


def loads_exact(data: bytes | bytearray) -> Any:
    """Parse a request body that may be written back with `dumps_request`: a number that would not come back
    as it was sent is kept as its text (`ExactNumber`), integers of any width as they are. Raises ValueError
    when it is not JSON (or nested too deeply to parse)."""
    try:
        if not _has_negative_zero(data):
            try:
                return _REQUEST_DECODER.decode(data)
            except (msgspec.DecodeError, ValueError):
                pass  # what msgspec refuses (NaN, a lone surrogate, 5,000 digits) the standard library may take
        # Here every float is kept as its text: if this body is written back by the standard library (it holds a
        # lone surrogate), its floats would otherwise take Python's spelling, and with them it cannot be at all.
        return json.loads(bytes(data), parse_float=ExactNumber, parse_int=_exact_int, parse_constant=ExactNumber)
    except RecursionError:  # a valid document thousands of levels deep
        raise TooDeep from None


def encode_exact(value: Any) -> bytes | None:
    """A value read with `loads_exact` as `dumps_request` writes it inside a document whose every part msgspec can
    write; None when msgspec cannot (a lone surrogate), and the document is written by the standard library."""
    try:
        return _REQUEST_ENCODER.encode(value)
    except (TypeError, UnicodeEncodeError):
        return None


def dumps_request(doc: Any) -> bytes:
    """A request body read with `loads_exact`, written back compactly: key order, strings and numbers exact."""
    written = encode_exact(doc)
    if written is not None:
        return written
    # msgspec refuses lone surrogates, which the standard library writes as escapes.
    try:
        return json.dumps(doc, separators=(",", ":")).encode()
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
    value = values.pop()
    if b"\\" not in value and value.isascii():  # what a JSON parse gives, without one (JSON may refuse the rest)
        text = value.decode("ascii")
        if text.isprintable():  # not a control character, which JSON refuses unescaped
            return text
    try:
        model = loads(b'"' + value + b'"')
    except ValueError:
        return None
    return model if isinstance(model, str) else None
