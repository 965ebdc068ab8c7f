"""What Python holds of a parsed value, counted from above: the bounds of what the proxy remembers (addon/request/history.py,
addon/cache/remembered.py) are bounds of the memory it holds, not of the bytes it was sent (three bytes of `[],`
parse to a list of some 60 bytes and its place in another)."""

from __future__ import annotations

from collections.abc import Collection
from sys import getsizeof
from typing import Any

from . import jsoncodec
from .records import ReasoningRecord, RepairAction

# What CPython takes for one parsed JSON value or key beside its characters, at most: the object and its place in the
# list or dict that holds it. 97 bytes at most on CPython 3.11 to 3.13 (a one-key object and its key, a number kept
# as written), measured by tests/test_resume.py.
VALUE_BYTES = 128
# A place in a list, dict or set beside the object in it, with the table's room to grow.
_SLOT_BYTES = 64
# A parsed cache record and each of its tool calls beside their strings and values (pydantic models: their fields,
# and which were set), and a repair beside its strings (with its share of the flow comment's tally): measured by
# tests/test_resume.py.
_RECORD_BYTES = 2048
_CALL_BYTES = 1536
_ACTION_BYTES = 384


def parsed_size(text: bytes) -> int:
    """At most the bytes `jsoncodec.loads_exact(text)` holds, read off the text without parsing it: a value or key for
    each `,`, `:`, `[` and `{` and one more, and each character of the text a byte (four where it is not all ASCII
    or holds a `\\u` escape: one character past U+FFFF makes CPython store each character of its string in four)."""
    marks = len(text) - len(text.translate(None, b",:[{"))
    # An escape (`\u4e00`, `\ud83d\ude00`) makes an ASCII text parse to a string of two or four bytes a character.
    wide = not text.isascii() or b"\\u" in text
    return (4 if wide else 1) * len(text) + VALUE_BYTES * (marks + 1)


def held_size(value: Any) -> int:
    """The bytes a parsed JSON value holds, walked: each object counted each time it is reached, so shared ones count
    more than once (a bound from above)."""
    size = getsizeof(value)
    todo = [value] if type(value) is dict or type(value) is list else []
    while todo:
        container = todo.pop()
        if type(container) is dict:
            size += sum(map(getsizeof, container))
            container = container.values()
        for item in container:
            size += getsizeof(item) + _SLOT_BYTES
            kind = type(item)
            if kind is dict or kind is list:
                todo.append(item)
            elif kind is jsoncodec.ExactNumber:
                size += getsizeof(item.text)
    return size


def strings_size(texts: Collection[str | None]) -> int:
    """The bytes the strings (ids, keys) of a list, dict or set hold, with their places in it."""
    return sum(map(getsizeof, texts)) + _SLOT_BYTES * len(texts)


def record_size(record: ReasoningRecord) -> int:
    """The bytes a parsed cache record holds, with its values and tool calls."""
    size = _RECORD_BYTES + held_size(record.fields) + strings_size(record.extra_keys)
    size += getsizeof(record.response_id) + getsizeof(record.request_model) + getsizeof(record.response_model)
    for call in record.tool_calls:
        size += _CALL_BYTES + getsizeof(call.id) + getsizeof(call.name)
        if call.aliases:
            size += strings_size(call.aliases)
        if call.fields:
            size += held_size(call.fields)
    return size


def action_size(action: RepairAction) -> int:
    """The bytes a repair holds, with its strings (the ids it names are the request's own, which it keeps)."""
    size = _ACTION_BYTES + getsizeof(action.location) + getsizeof(action.tool_call_id) + getsizeof(action.reason)
    return size + getsizeof(action.response_id) + strings_size(action.fields)
