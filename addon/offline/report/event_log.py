"""A report from the event log alone, for a user who has nothing else: no bodies, so no conversation, but every
exchange the proxy saw with what it captured (tool calls, reasoning fields), repaired and diagnosed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, get_args

from pydantic import ValidationError

from ...diagnosis.rules import Diagnosis
from ...dialects.base import Kind
from ...shared import jsoncodec
from ...shared.events import Captured, Diagnosed, FieldSummary, Recovered, Repaired, Skipped
from ...shared.limits import MAX_LOG_LINE_BYTES
from ...wire.conversation import Answer, Message, Part
from .turns import Timings, Turn

# The longest line the proxy writes (events.fit_line), with room for a line break.
MAX_LINE_BYTES = MAX_LOG_LINE_BYTES + 1
_KINDS = {
    "captured": Captured,
    "repaired": Repaired,
    "diagnosed": Diagnosed,
    "skipped": Skipped,
    "recovered": Recovered,
}


def is_event_log(path: Path) -> bool:
    """Whether `path` is a JSONL event log: its first line an event (an object with a `kind`)."""
    if not path.is_file():
        return False
    with path.open("rb") as handle:
        first = handle.readline(1 << 20).strip()
    if not first.startswith(b"{"):
        return False
    try:
        return isinstance(jsoncodec.loads(first).get("kind"), str)
    except ValueError:
        return False


def _field_parts(fields: dict[str, FieldSummary], call_id: str | None) -> list[Part]:
    parts = []
    for name, summary in fields.items():
        if summary.text is not None:
            parts.append(Part("reasoning", text=summary.text, field=name, call_id=call_id))
        else:
            parts.append(
                Part(
                    "opaque",
                    field=name,
                    call_id=call_id,
                    value=summary.value,
                    known_length=summary.length,
                    known_digest=summary.sha256,
                )
            )
    return parts


def _answer(event: Captured) -> Answer:
    parts = _field_parts(event.fields, None)
    for call in event.tool_calls:
        parts.append(Part("tool_call", call_id=call.id, name=call.name))
        parts += _field_parts(call.fields, call.id)
    note = "" if event.complete else "the stream was cut short"
    return Answer(
        messages=[Message("assistant", parts, "captured", note=note)],
        model=event.response_model,
        streamed=event.streamed,
    )


def turns_from_event_log(path: Path) -> list[Turn]:
    """The exchanges an event log describes, in the order their first event was written."""
    by_flow: dict[str, Turn] = {}
    with path.open("rb") as handle:
        for line in _lines(handle):
            event = _event(line)
            if event is None or not event.flow_id:
                continue
            turn = by_flow.get(event.flow_id)
            if turn is None:
                turn = by_flow[event.flow_id] = _turn(len(by_flow) + 1, event)
            _apply(turn, event)
    return list(by_flow.values())


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    """The file's lines, each read no further than the proxy ever writes one: a longer line (not an event of
    the proxy's) is passed over without being held."""
    while line := handle.readline(MAX_LINE_BYTES + 1):
        if len(line) <= MAX_LINE_BYTES:
            yield line
            continue
        while line and not line.endswith(b"\n"):  # the rest of the long line
            line = handle.readline(MAX_LINE_BYTES)


def _event(line: bytes) -> Any:
    try:
        doc = jsoncodec.loads(line)
        model = _KINDS.get(doc.get("kind")) if isinstance(doc, dict) else None
        return model.model_validate(doc) if model is not None else None
    except (ValueError, ValidationError):
        return None


def _turn(number: int, event: Any) -> Turn:
    return Turn(
        number,
        event.flow_id,
        "POST",
        event.url,
        getattr(event, "wire_format", "?"),
        timings=Timings(started=event.ts),
        notes=["from the event log: request and answer bodies are not in it"],
    )


def _apply(turn: Turn, event: Any) -> None:
    if isinstance(event, Captured):
        turn.answer = _answer(event)
        turn.model = turn.model or event.request_model
        turn.status = turn.status or 200
    elif isinstance(event, Repaired):
        turn.actions = [action.describe() for action in event.actions]
        if event.again:
            turn.actions.append(f"and {event.again} repair(s) made again, as on an earlier turn")
        turn.live_repaired = event.applied
    elif isinstance(event, Diagnosed):
        turn.status = event.status
        turn.diagnosis = Diagnosis(
            rule=event.rule,
            summary=event.summary,
            provider=event.provider or "?",
            kind=event.problem if event.problem in get_args(Kind) else "unknown",
            field=event.field,
            message=event.message,
            cause=event.cause,
        )
        turn.culprit = event.location
        turn.findings = list(event.findings)
        turn.advice = event.advice
    elif isinstance(event, Recovered):
        turn.recovered = event.summary()
        turn.status = event.status or turn.status
    elif isinstance(event, Skipped):
        turn.notes.append(f"skipped: {event.reason}")
