"""One LLM exchange as the report shows it: what the client sent, what the proxy sent (or would send), the answer
or the diagnosis of the error, token usage and timings.

Everything here is read from a flow through the offline check (`checked_exchanges`), so a capture made without the
proxy shows what the proxy would have done, and one made through it shows what it did.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from ... import wire as formats
from ...diagnosis import Diagnosis
from ...shared import jsoncodec
from ...shared.cost import Cost, exchange_cost
from ...shared.flow_meta import flow_meta
from ...shared.limits import MAX_DECODED_BYTES
from ...shared.redact import is_credential_header
from ...transcripts import MessageMemo, conversation
from ...transcripts.client_sent import client_sent_body
from ...transcripts.diff import Changes, compare
from ...transcripts.flows import NotTranscribed, transcribe_answer
from ...wire.content_encoding import message_body
from ...wire.conversation import Answer, Conversation
from ..check import CheckedExchange
from ..fixtures import REQUEST_HEADERS, clean_url, kept_headers


@dataclass(slots=True)
class Timings:
    started: str | None = None  # ISO 8601, UTC
    first_byte_ms: float | None = None  # request sent to the first byte of the answer
    total_ms: float | None = None  # request sent to the end of the answer
    addon_ms: float | None = None  # the proxy's own time on the request and the answer, when it recorded it


@dataclass(slots=True)
class Turn:
    number: int
    flow_id: str
    method: str
    url: str  # redacted
    wire_format: str
    model: str | None = None
    status: int | None = None
    client_sent: Conversation | None = None  # None when the body could not be read
    sent: Conversation | None = None  # what went (live repair) or would go (offline check) upstream
    changes: Changes | None = None  # `sent` against `client_sent`, when they differ
    live_repaired: bool = False
    answer: Answer | None = None
    cost: Cost | None = None  # None: not known (no usage, or a model or provider genai-prices does not price)
    diagnosis: Diagnosis | None = None
    culprit: str | None = None  # the place the error points at ("messages[3]")
    advice: str | None = None  # what to do about the error, as the live proxy said (its diagnosis knew the cache)
    findings: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)  # what the proxy did or would do, described
    violations: list[str] = field(default_factory=list)  # rules the request breaks as the client sent it
    remaining: list[str] = field(default_factory=list)  # rules it still breaks after repair
    unreadable: str | None = None
    timings: Timings = field(default_factory=Timings)
    headers: list[tuple[str, str]] = field(default_factory=list)  # for copy-as-cURL: credentials as placeholders
    body: Any = None  # the document the proxy sent, for copy-as-cURL (redacted later, with the rest of the report)
    comment: str = ""
    recovered: str | None = None  # what the proxy did to let it go on without reasoning (llm_recover)
    since: Changes | None = None  # against the previous turn of its conversation (filled by grouping)
    conversation: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def repaired(self) -> bool:
        return bool(self.actions)

    @property
    def failed(self) -> bool:
        return self.status is not None and self.status >= 400


CREDENTIAL_PLACEHOLDER = "$API_KEY"


def curl_headers(request: http.Request) -> list[tuple[str, str]]:
    """The headers a copied cURL command sends: the fixture allowlist, and each credential as a placeholder to be
    filled in from the environment (a bearer token keeps its scheme)."""
    headers = list(kept_headers(request.headers, REQUEST_HEADERS).items())
    for name, value in request.headers.items():
        if is_credential_header(name) and name.lower() not in ("cookie",):
            scheme = value.split(" ", 1)[0] + " " if " " in value.strip() else ""
            headers.append((name.lower(), f"{scheme}{CREDENTIAL_PLACEHOLDER}"))
    return headers


def _timings(flow: http.HTTPFlow) -> Timings:
    request, response = flow.request, flow.response
    timings = Timings()
    sent = request.timestamp_end or request.timestamp_start
    if request.timestamp_start:
        timings.started = datetime.datetime.fromtimestamp(request.timestamp_start, datetime.timezone.utc).isoformat()
    if response is not None and sent:
        if response.timestamp_start:
            timings.first_byte_ms = round((response.timestamp_start - sent) * 1000, 1)
        if response.timestamp_end:
            timings.total_ms = round((response.timestamp_end - sent) * 1000, 1)
    meta = flow_meta(flow) or {}
    spent = meta.get("addon_ms")
    if isinstance(spent, dict):
        values = [v for v in spent.values() if isinstance(v, (int, float))]
        timings.addon_ms = round(sum(values), 3) if values else None
    return timings


def turn_of(checked: CheckedExchange, memo: MessageMemo | None = None) -> Turn:
    flow, check = checked.flow, checked.check
    path = flow.request.path
    client_sent = sent = sent_doc = None
    changes = None
    notes: list[str] = []
    if checked.sent is not None:
        client_sent = conversation(check.wire_format, checked.sent, path, memo)
        if check.live_repaired:  # what went upstream is the flow's own request
            sent_doc = _live_sent(flow, checked)
        else:
            sent_doc = checked.repaired
        sent = client_sent if sent_doc is checked.sent else conversation(check.wire_format, sent_doc, path, memo)
        if sent is not client_sent:
            changes = compare(client_sent.messages, sent.messages)
    answer = None
    if flow.response is not None and flow.response.status_code < 400 and check.wire_format != "?":
        try:
            answer = transcribe_answer(flow, formats.by_name(check.wire_format))
        except NotTranscribed as e:
            notes.append(f"answer not read: {e}")
    cost = None
    if answer is not None:
        started = flow.request.timestamp_start
        cost = exchange_cost(
            answer.usage,
            answer.model or check.model,  # the answer's is the one that was billed ("gpt-5-2025-08-07" for "gpt-5")
            wire_format=check.wire_format,
            api_url=flow.request.pretty_url,
            when=datetime.datetime.fromtimestamp(started, datetime.timezone.utc) if started else None,
        )
    meta = flow_meta(flow) or {}
    live_diagnosis = meta.get("diagnosis") if isinstance(meta.get("diagnosis"), dict) else {}
    culprit = live_diagnosis.get("location")
    diagnosis = check.diagnosis
    if culprit is None and diagnosis is not None and diagnosis.index is not None and sent is not None:
        culprit = _place(sent, diagnosis.index)
    return Turn(
        number=check.number,
        flow_id=flow.id,
        method=flow.request.method,
        url=clean_url(flow.request.pretty_url),
        wire_format=check.wire_format,
        model=check.model,
        status=check.status if check.status is not None else (flow.response.status_code if flow.response else None),
        client_sent=client_sent,
        sent=sent,
        changes=changes,
        live_repaired=check.live_repaired,
        answer=answer,
        cost=cost,
        diagnosis=diagnosis,
        culprit=culprit,
        advice=live_diagnosis.get("advice") if isinstance(live_diagnosis.get("advice"), str) else None,
        findings=[str(f) for f in live_diagnosis.get("findings") or []],
        actions=[action.describe() for action in check.actions],
        violations=[v.describe() for v in check.violations],
        remaining=[v.describe() for v in check.remaining],
        unreadable=check.unreadable,
        timings=_timings(flow),
        headers=curl_headers(flow.request),
        body=sent_doc,
        comment=flow.comment or "",
        recovered=check.recovered,
        notes=notes,
    )


def _live_sent(flow: http.HTTPFlow, checked: CheckedExchange) -> Any:
    """What a proxy that repaired the request live sent on: the flow's own request. A flow made from a fixture
    holds the client's body there too (a fixture keeps only what the client sent): the check's repair stands in."""
    try:
        body = message_body(flow.request, MAX_DECODED_BYTES)
        if body == client_sent_body(flow):
            return checked.repaired
        return jsoncodec.loads(body)
    except ValueError:
        return checked.repaired


def _place(sent: Conversation, index: int) -> str | None:
    """The `where` of the message at a list position a diagnosis names (system prompts are not in the list)."""
    listed = [m for m in sent.messages if m.where.endswith("]")]
    return listed[index].where if 0 <= index < len(listed) else None
