"""What becomes of an answer's reasoning once the tap has read it: which records go into the cache, which cannot,
and why. The capture hook asks this and says what it returns; nothing here reports."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..cache import ReasoningStore, StoreUnavailable
from ..shared.records import ReasoningRecord
from ..wire import WireFormat
from .provenance import Origin, issued_values, record_origins
from .storable import storable
from .tap import TapResult


def remember_issuer(store: ReasoningStore, origin: Origin, record: ReasoningRecord, wire_format: WireFormat) -> None:
    """Notes which host, account and model issued the signed values of an answer, with tool calls or without: a
    request that sends one to another model gets it removed (addon/answer/provenance.py)."""
    values = issued_values(record, wire_format.signed_fields)
    if values:
        record_origins(store, origin, values)


@dataclass(frozen=True, slots=True)
class KeptRecord:
    """One turn of an answer and what became of it."""

    record: ReasoningRecord  # as captured, with the request's model and the time of capture
    stored: bool
    note: str | None = None  # why it was not stored, where it has keys to be stored under
    refused: bool = False  # it could not be stored at all (storable said no): said as a skip too


@dataclass
class KeptAnswer:
    """What became of one answer's reasoning, with what there is to say about it, in the order it is said."""

    records: list[KeptRecord] = field(default_factory=list)
    unavailable: str | None = None  # the cache failed: what its records hold is logged, not stored

    # What was left and why, said after the records: events that were not read, an answer cut off before any tool
    # call, a cache that could not be reached.
    skipped_after: list[str] = field(default_factory=list)


def keep_answer(
    store: ReasoningStore,
    scope: str,
    origin: Origin,
    request_model: str | None,
    wire_format: WireFormat,
    result: TapResult,
    cut_off_by: str,
) -> KeptAnswer:
    """Stores the reasoning an answer carried (a read answer's TapResult), and says what became of each turn;
    `cut_off_by`: what ended an answer that was cut short."""
    kept = KeptAnswer()
    over = result.over
    for record in result.records:
        record = record.model_copy(update={"request_model": request_model, "captured_at": time.time()})
        keys = record.keys()
        if kept.unavailable is None:
            try:
                remember_issuer(store, origin, record, wire_format)
            except StoreUnavailable as e:
                kept.unavailable = str(e)
        stored, note, refused = False, None, False
        if keys and over is not None:
            note = f"not cached: {over}"
        elif keys:
            storable_record, note = storable(record, wire_format)
            if storable_record is None:
                refused = True
            elif kept.unavailable is None:
                try:
                    store.put(scope, keys, storable_record)
                    stored = True
                except StoreUnavailable as e:
                    kept.unavailable = str(e)
        kept.records.append(KeptRecord(record, stored, note, refused))
    if result.unreadable:
        # Such events reach the client as they came, but whatever reasoning they carried is lost: without this line
        # the log would not say why nothing (or less) was captured.
        kept.skipped_after.append(
            f"{result.unreadable} stream event(s) not valid JSON (cut short or not UTF-8); not read"
        )
    if not result.complete and not kept.records:
        # A cut-off answer is only read once its tool calls began; one cut before leaves no other trace.
        kept.skipped_after.append(f"answer cut off before any tool call ({cut_off_by}); nothing cached")
    if kept.unavailable is not None:
        kept.skipped_after.append(
            f"reasoning cache unavailable, this answer's reasoning is logged but not cached: {kept.unavailable}"
        )
    return kept
