"""The JSONL event log: one pydantic model per kind of event, one line each."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, Field

from . import jsoncodec
from .limits import MAX_LOG_LINE_BYTES, MAX_LOGGED_TEXT_CHARS, cut_text, short_digest
from .limits import utf8_size as _utf8_size
from .private_files import make_private_dir, open_private
from .records import SIGNATURE_IN_ID, ReasoningRecord, RepairAction, display_call_id, split_call_id
from .redact import masked_logger, redact_json, redact_text
from .settings import Settings

logger = masked_logger(__name__)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class Event(BaseModel):
    ts: str = Field(default_factory=_now)
    kind: str
    flow_id: str | None = None


class FlowEvent(Event):
    host: str
    url: str  # redacted
    wire_format: str


class FieldSummary(BaseModel):
    """A captured value as logged: text in full, opaque values only by length and hash."""

    length: int
    sha256: str
    text: str | None = None
    value: str | None = None


class ToolCallSummary(BaseModel):
    id: str
    name: str
    aliases: list[str] = []
    fields: dict[str, FieldSummary] = {}


class Started(Event):
    kind: Literal["started"] = "started"
    version: str
    runtime: str = ""  # "mitmproxy 12.2.3, Python 3.13.0"
    settings: dict[str, Any]


class Captured(FlowEvent):
    kind: Literal["captured"] = "captured"
    response_id: str | None
    request_model: str | None
    response_model: str | None
    tool_calls: list[ToolCallSummary]
    fields: dict[str, FieldSummary]
    streamed: bool
    complete: bool
    stored: bool
    note: str | None = None  # why it was not stored, or what was masked before it was


class Repaired(FlowEvent):
    """What was changed in one request. A client that drops state drops it on every turn, so each turn needs the
    earlier turns' repairs again: those this process logged before are only counted (`repair_log.RepairMemory`)."""

    kind: Literal["repaired"] = "repaired"
    applied: bool  # False when llm_repair=false: what would have been done
    cache_hits: int
    actions: list[RepairAction]  # the repairs made for the first time in this conversation, in full
    again: int = 0  # repairs made again, as on an earlier turn: counted, not listed
    again_by_kind: dict[str, int] = {}
    total: int  # every repair made to the request: len(actions) + again
    # The provider that would have answered without the state put back, only worse (it drops reasoning silently);
    # None where it would have refused the request.
    silent_provider: str | None = None


class Diagnosed(FlowEvent):
    """A provider's 4xx on LLM traffic, explained."""

    kind: Literal["diagnosed"] = "diagnosed"
    status: int
    rule: str
    summary: str
    problem: str  # missing / invalid / foreign / orphaned / duplicate / not_found / schema / unsupported / unknown
    field: str | None = None
    provider: str | None = None
    location: str | None = None
    tool_call_ids: list[str] = []
    item_ids: list[str] = []
    function: str | None = None
    cache_had: bool | None = None  # whether the cache held what the error says is missing (None: cannot tell)
    repaired: bool = False  # whether the proxy had repaired this request at the place the error points at
    healed: int = 0  # cache entries dropped because the provider refused their value
    # When the error names no place: the provider rules the request breaks as sent (and, when the proxy repaired
    # it, those it broke as the client sent it), found by the format's own checks.
    findings: list[str] = []
    cause: str | None = None  # what the error says changed ("system prompt", for Anthropic's block binding)
    advice: str
    message: str  # the provider's text, redacted


class Recovered(FlowEvent):
    """A request the provider would refuse, or refused, for its reasoning state, sent on in the closest form the
    provider accepts (llm_recover): that turn goes on without the reasoning that could not be put back."""

    kind: Literal["recovered"] = "recovered"
    how: Literal["before", "retry"]  # changed before it was sent, or sent once more after the provider's 4xx
    rule: str  # the diagnosis rule the request broke, or would have
    removed: list[str]  # what was removed or turned off, by place ("messages[3].content[0]: thinking")
    first_status: int | None = None  # retry: the provider's first answer
    first_error: str | None = None  # retry: the provider's text, redacted
    status: int | None = None  # retry: the status of the answer the client got

    def summary(self) -> str:
        return recovery_summary(self.how, self.rule, self.removed, self.first_status)


def recovery_summary(how: str, rule: str, removed: list[str], first_status: int | None) -> str:
    """A recovery for a person, from the event or the flow's entry that keeps it (`meta["recovered"]`)."""
    when = f"sent again after its {first_status}" if how == "retry" else "changed before sending"
    return f"{when} ({rule}): {'; '.join(removed) or 'nothing removed'}; that turn went on without that reasoning"


class Skipped(Event):
    """Traffic the addon looked at and left alone, with the reason."""

    kind: Literal["skipped"] = "skipped"
    url: str
    reason: str


class Failure(Event):
    kind: Literal["failure"] = "failure"
    stage: str
    error: str


def summarize_fields(
    fields: Mapping[str, Any], text_fields: frozenset[str], include_opaque: bool
) -> dict[str, FieldSummary]:
    summaries = {}
    for name, value in fields.items():
        text = value if isinstance(value, str) else jsoncodec.dumps(value).decode()
        digest = short_digest(text)
        summaries[name] = FieldSummary(
            length=len(text),
            sha256=digest,
            # Readable text is logged up to a bound (its length and hash say what it was), masked before it is cut.
            text=cut_text(redact_text(text), MAX_LOGGED_TEXT_CHARS) if name in text_fields else None,
            value=text if include_opaque and name not in text_fields else None,
        )
    return summaries


def summarize_record(
    record: ReasoningRecord, text_fields: frozenset[str], include_opaque: bool
) -> tuple[dict[str, FieldSummary], list[ToolCallSummary]]:
    """The record's turn fields and its tool calls, as the event log shows them."""
    calls = []
    for call in record.tool_calls:
        fields = dict(call.fields)
        signature = split_call_id(call.id)[1]
        if signature is not None:  # decoded from a LiteLLM id, so it is logged like any opaque value
            fields["id.__thought__"] = signature
        calls.append(
            ToolCallSummary(
                id=call.id if include_opaque else display_call_id(call.id),
                name=call.name,
                aliases=list(call.aliases),
                fields=summarize_fields(fields, text_fields, include_opaque),
            )
        )
    return summarize_fields(record.fields, text_fields, include_opaque), calls


def loggable_actions(actions: list[RepairAction], include_opaque: bool) -> list[RepairAction]:
    """Repair actions for the log: ids that carry a signature are shortened unless opaque values are logged."""
    if include_opaque or not any(SIGNATURE_IN_ID in (a.tool_call_id or "") + "".join(a.fields) for a in actions):
        return actions
    return [
        replace(
            action,
            tool_call_id=display_call_id(action.tool_call_id) if action.tool_call_id else None,
            fields=[display_call_id(name) for name in action.fields],
        )
        for action in actions
    ]


def _shrink(value: Any, text_cap: int, list_cap: int) -> Any:
    if isinstance(value, str):
        return cut_text(value, text_cap)
    if isinstance(value, list):
        kept = [_shrink(item, text_cap, list_cap) for item in value[:list_cap]]
        return kept + [f"…[cut: {len(value) - list_cap} more]"] if len(value) > list_cap else kept
    if isinstance(value, dict):
        return {key: _shrink(item, text_cap, list_cap) for key, item in value.items()}
    return value


def fit_line(event: Event, limit: int = MAX_LOG_LINE_BYTES) -> str:
    """The event as one JSON line of at most `limit` bytes, masked by the redactor: an event too big for that has
    its longest texts and lists cut (each saying how long it was) and a `cut` entry with the size the whole line
    would have had.

    Each value is masked before it is written (a text quoting JSON, `{"api_key": "..."}`, is seen as it is, not
    escaped inside the line) and before it is cut (a cut could leave too little of a key to be recognised)."""
    doc = redact_json(event.model_dump(mode="json", exclude_none=True))
    line = jsoncodec.dumps(doc).decode()
    size = _utf8_size(line)
    if size <= limit:
        return line
    text_cap, list_cap = 1024, 64
    while text_cap >= 16:
        line = jsoncodec.dumps({**_shrink(doc, text_cap, list_cap), "cut": {"bytes": size}}).decode()
        if _utf8_size(line) <= limit:
            return line
        text_cap, list_cap = text_cap // 4, max(1, list_cap // 4)
    return jsoncodec.dumps(
        {"ts": event.ts, "kind": event.kind, "flow_id": event.flow_id, "cut": {"bytes": size}}
    ).decode()


class EventLog:
    """Appends events to a JSONL file created owner-only; never raises into a hook.

    The file is bounded: once it reaches `max_bytes` it becomes `<name>.1` (the
    older `.1` becomes `.2`, and so on up to `backups`; the oldest is dropped),
    so the log never takes more than about (backups + 1) x max_bytes. Several
    proxies may share one log: a writer whose file another one rotated puts at
    most one more line into that backup, then finds the file moved and reopens it.

    A rotation that fails (something sits at `<name>.1`) or a file that cannot be
    reopened is reported once; the log goes on in the file it has (or reopens it)
    and tries again every `RETRY_SECONDS`.

    Each event is also handed to the `listeners` (the metrics count them), whether or not the log is written: a
    listener that raises is left out of that event, never the log or the hook.
    """

    RETRY_SECONDS = 60.0

    def __init__(
        self,
        path: Path | None,
        # The defaults of llm_log_max_size and llm_log_backups.
        max_bytes: int = Settings.model_fields["log_max_bytes"].default,
        backups: int = Settings.model_fields["log_backups"].default,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._clock = clock
        self._file: TextIO | None = None
        self._inode = 0
        self._failed = False  # a write failed, and it was said
        self._trouble: str | None = None  # why rotating or reopening fails, once said; None when all is well
        self._retry_at = 0.0
        self._closed = path is None
        self.listeners: list[Callable[[Event], None]] = []
        if path is not None:
            make_private_dir(path.parent)
            self._open()

    def _open(self) -> None:
        assert self.path is not None
        fd = open_private(self.path, os.O_WRONLY | os.O_APPEND)
        self._file = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
        self._inode = os.fstat(fd).st_ino

    def write(self, event: Event) -> None:
        for listener in self.listeners:
            try:
                listener(event)
            except Exception as e:  # a count missed; the event is still logged
                logger.debug("llm event listener %r failed on %s: %s", listener, event.kind, e)
        if self._closed:
            return
        try:
            if self._file is None and not self._reopen():
                return  # before the line is built: while the file cannot be reopened, nothing is spent on events
            line = fit_line(event)
            assert self._file is not None
            self._file.write(line + "\n")
            if os.fstat(self._file.fileno()).st_size >= self.max_bytes and self._clock() >= self._retry_at:
                self._rotate()
        except (OSError, ValueError) as e:
            if not self._failed:
                logger.warning("llm event log %s: cannot write (%s); further failures are not reported", self.path, e)
            self._failed = True

    def _rotate(self) -> None:
        assert self.path is not None and self._file is not None
        backups = [self.path.with_name(f"{self.path.name}.{n}") for n in range(1, self.backups + 1)]
        # Each file moves one place down: the log to .1, .1 to .2, ...; what falls off the end is gone.
        moves = list(zip([self.path, *backups[:-1]], backups))
        try:
            with contextlib.suppress(FileNotFoundError):  # another process may be rotating the same log
                if os.stat(self.path).st_ino == self._inode:
                    for newer, older in reversed(moves):
                        with contextlib.suppress(FileNotFoundError):
                            os.replace(newer, older)
                    if not backups:
                        self.path.unlink()
        except OSError as e:
            # The file is still ours and still open: go on writing to it, and try again later.
            self._report_trouble(f"cannot rotate ({e}); writing on to {self.path.name}")
            return
        self._file.close()
        self._file = None
        self._reopen()

    def _reopen(self) -> bool:
        if self._clock() < self._retry_at and self._trouble is not None:
            return False
        try:
            self._open()
        except OSError as e:
            self._report_trouble(f"cannot reopen ({e}); events are dropped until it can")
            return False
        if self._trouble is not None:
            logger.warning("llm event log %s: writing and rotating again", self.path)
            self._trouble = None
        self._retry_at = 0.0
        return True

    def _report_trouble(self, trouble: str) -> None:
        if self._trouble is None:
            logger.warning("llm event log %s: %s; tried again every %gs", self.path, trouble, self.RETRY_SECONDS)
        self._trouble = trouble
        self._retry_at = self._clock() + self.RETRY_SECONDS

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._closed = True
