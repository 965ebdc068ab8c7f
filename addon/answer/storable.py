"""What of a captured answer may be stored: within the byte limits, and without a credential in it.

The cache keeps values to put them back byte for byte, so a value cannot simply be masked: a thinking block,
an encrypted reasoning item or a reasoning text that travels with a signature would no longer be what the
provider issued, and the next request would fail on it. A record with a credential (recognised by its shape) in
such a value is therefore not stored at all; a field the provider reads as plain text and does not verify
(`WireFormat.maskable_fields`, DeepSeek's `reasoning_content`) is stored masked instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..shared import jsoncodec
from ..shared.limits import MAX_RECORD_BYTES, MAX_VALUE_BYTES, MiB, utf8_size
from ..shared.records import ReasoningRecord
from ..shared.redact import holds_credential, redact_text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else jsoncodec.dumps(value).decode("utf-8", "surrogatepass")


def _mb(size: int) -> str:
    return f"{size / MiB:.1f} MiB"


def too_big(record: ReasoningRecord) -> str | None:
    """Why a record is over the limits (a value over MAX_VALUE_BYTES, its values together over MAX_RECORD_BYTES),
    if it is. The rest of a record (ids, names, digests) is small, and at most MAX_TOOL_CALLS calls' worth."""
    values = [*record.fields.items(), *((name, v) for call in record.tool_calls for name, v in call.fields.items())]
    size = 0
    for name, value in values:
        value_size = utf8_size(_text(value))
        if value_size > MAX_VALUE_BYTES:
            return f"its {name} is {_mb(value_size)}, over the {_mb(MAX_VALUE_BYTES)} limit per stored value"
        size += value_size
    if size > MAX_RECORD_BYTES:
        return f"its reasoning is {_mb(size)}, over the {_mb(MAX_RECORD_BYTES)} limit per stored answer"
    return None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a JSON value, decoded: a key after an escaped newline is still a key."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _holds_credential(value: Any) -> bool:
    return any(holds_credential(text) for text in _strings(value))


def without_secrets(record: ReasoningRecord, maskable: frozenset[str]) -> tuple[ReasoningRecord | None, str | None]:
    """The record as it may be stored, and what was done about a credential in it (None when there was none):
    the record itself, a copy with its maskable fields masked, or None when it must not be stored.

    A maskable field (plain text the provider does not verify) is stored masked by every rule of the redactor.
    Any other value is kept exactly or not at all, and withheld only for a credential recognised by its shape,
    so that a model reasoning about code (`self.api_key = api_key`) is still cached."""
    masked = {
        name: text
        for name, value in record.fields.items()
        if name in maskable and isinstance(value, str) and (text := redact_text(value)) != value
    }
    signed = [name for name, value in record.fields.items() if name not in masked and _holds_credential(value)]
    signed += sorted(
        {name for call in record.tool_calls for name, value in call.fields.items() if _holds_credential(value)}
    )
    if signed:
        return None, (
            f"its {', '.join(signed)} holds a credential; not cached, since it cannot be stored masked "
            "without changing what the provider issued"
        )
    if not masked:
        return record, None
    note = f"a credential-shaped string in its {', '.join(masked)} is stored masked"
    return record.model_copy(update={"fields": {**record.fields, **masked}}), note


def storable(record: ReasoningRecord, wire_format: Any) -> tuple[ReasoningRecord | None, str | None]:
    """The record as it may be stored (None: not at all) and a note on why or what changed (None: nothing)."""
    problem = too_big(record)
    if problem is not None:
        return None, f"{problem}; not cached"
    return without_secrets(record, wire_format.maskable_fields)
