"""Checking captured traffic without a network: a flow file, a HAR file or exported fixtures.

Every LLM exchange is replayed in order through the same claim, repair and
capture code the proxy runs, with a cache of its own: each request is checked
against the provider rules as the client sent it, repaired as the proxy would,
and checked again; each response feeds the cache for the requests after it.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mitmproxy import http

from ..answer.keep import remember_issuer
from ..answer.provenance import Origin
from ..answer.tap import read_recorded
from ..cache import CacheLimits, MemoryStore
from ..diagnosis import Diagnosis, classify
from ..request.claim import UnreadableBody, claim_request, request_model
from ..request.notes import silent_provider
from ..request.plans import INSERTING, plan_repair
from ..request.signing import SIGNED_REMEDY, body_signer
from ..shared import jsoncodec
from ..shared.flow_meta import RETRY_OF, recovered_of
from ..shared.limits import MAX_DECODED_BYTES, MAX_ERROR_BODY_BYTES
from ..shared.records import ReasoningRecord, RepairAction, Violation, display_call_id
from ..shared.redact import redact_json, redact_text, redact_url
from ..shared.scope import caller_identity, scope_of
from ..transcripts.client_sent import client_sent_body
from ..wire import RepairContext, WireFormat
from ..wire.content_encoding import Undecodable, message_body, message_prefix
from ..wire.event_stream import is_aws_event_stream
from ..wire.sse import is_event_stream


@dataclass
class ExchangeCheck:
    number: int
    url: str  # redacted
    wire_format: str
    model: str | None
    live_repaired: bool = False  # the recording proxy had already repaired it; the check uses what the client sent
    signed: str | None = None  # what signed its body (addon/request/signing.py): the proxy forwards it as sent
    unreadable: str | None = None  # why the request body could not be checked
    beyond_tool: bool = False  # the body is JSON (or may be) that this tool could not follow: nested too deeply, say
    violations: list[Violation] = field(default_factory=list)  # rules the request breaks as sent
    actions: list[RepairAction] = field(default_factory=list)  # what the addon does to it
    diff: str = ""
    remaining: list[Violation] = field(default_factory=list)  # rules it still breaks after repair
    status: int | None = None
    diagnosis: Diagnosis | None = None
    calls: list[str] = field(default_factory=list)  # tool calls the answer made
    captured: list[str] = field(default_factory=list)  # reasoning fields read from the answer
    # The provider, when it answers a request that lacks state it issued all the same (only worse)
    silent_provider: str | None = None
    recovered: str | None = None  # what the recording proxy did to let it go on without reasoning (llm_recover)

    @property
    def dropped(self) -> list[RepairAction]:
        """State the provider issued that the request as sent lacks."""
        return [action for action in self.actions if action.kind in INSERTING]

    @property
    def fails_as_sent(self) -> bool:
        return bool(self.violations or (self.dropped and self.silent_provider is None))

    @property
    def loses_reasoning(self) -> bool:
        """Answered as sent, but without reasoning the provider issued and reads back."""
        return bool(self.dropped and self.silent_provider is not None and not self.violations)

    @property
    def fails_after_repair(self) -> bool:
        return bool(self.remaining)


def request_diff(before: object, after: object) -> str:
    """A unified diff of two request bodies, pretty-printed with their key order kept, credentials masked."""
    before, after = redact_json(before), redact_json(after)
    sides = (jsoncodec.pretty(doc).decode().splitlines(keepends=True) for doc in (before, after))
    lines = difflib.unified_diff(*sides, "as sent", "repaired", n=2)
    # A string may hold a line separator JSON leaves unescaped (U+2028): splitlines cuts there too.
    return redact_text("".join(line if line.endswith("\n") else line + "\n" for line in lines))


def _claim_as_sent(flow: http.HTTPFlow) -> tuple[WireFormat, bytes, bool] | None:
    """The wire format of an LLM request, its body as the client sent it and whether that is the copy a proxy
    that repaired it live kept; None for other traffic. Raises UnreadableBody when either body cannot be read."""
    claimed = claim_request(flow.request)
    if claimed is None:
        return None
    try:
        kept = client_sent_body(flow)
    except Undecodable as e:
        raise UnreadableBody(f"request body {e}") from None
    return (claimed[0], kept, True) if kept is not None else (*claimed, False)


def _records(wire_format_reader, response: http.Response) -> list[ReasoningRecord]:
    body = message_body(response, MAX_DECODED_BYTES)
    if not body:
        return []
    headers = response.headers
    read_recorded(wire_format_reader, body, sse=is_event_stream(headers), aws_frames=is_aws_event_stream(headers))
    return wire_format_reader.records(complete=True)


@dataclass(slots=True)
class CheckedExchange:
    """One exchange as the check replayed it, with the documents it read: what the client sent and what the proxy
    sends (the repaired copy; the same document when nothing needed repair). None where the body was not JSON."""

    flow: http.HTTPFlow
    check: ExchangeCheck
    sent: Any = None
    repaired: Any = None


def check_flows(flows: Iterable[http.HTTPFlow], *, placeholder: str = "off") -> list[ExchangeCheck]:
    """Replays the LLM exchanges among `flows`, in order; other traffic is skipped."""
    return [checked.check for checked in checked_exchanges(flows, placeholder=placeholder)]


def checked_exchanges(
    flows: Iterable[http.HTTPFlow], *, placeholder: str = "off", diffs: bool = True
) -> Iterator[CheckedExchange]:
    """`check_flows`, one exchange at a time, with the documents each check read (`diffs`: with the text diff of
    each repair, which the HTML report, showing its own, goes without)."""
    store = MemoryStore(CacheLimits(max_age=math.inf, max_entries=10**9))
    number = 0
    for flow in flows:
        if not isinstance(flow, http.HTTPFlow) or RETRY_OF in flow.metadata:
            continue  # a second sending (hooks/retry.py) is told of on the flow it was sent for
        try:
            claimed = _claim_as_sent(flow)
        except UnreadableBody as e:
            number += 1
            url = redact_url(flow.request.pretty_url)
            yield CheckedExchange(flow, ExchangeCheck(number, url, "?", None, unreadable=str(e), beyond_tool=True))
            continue
        if claimed is None:
            continue
        wire_format, body, live = claimed
        number += 1
        check = ExchangeCheck(
            number=number,
            url=redact_url(flow.request.pretty_url),
            wire_format=wire_format.name,
            model=request_model(wire_format, flow.request.path, body, None),
            live_repaired=live,
            recovered=recovered_of(flow),
        )
        checked = CheckedExchange(flow, check)
        try:
            checked.sent, checked.repaired = _check_exchange(check, flow, wire_format, body, store, placeholder, diffs)
        except Exception as e:  # noqa: BLE001 - one exchange the tool cannot follow must not end the others
            check.unreadable = f"could not be checked ({type(e).__name__}: {redact_text(str(e))[:200]})"
            check.beyond_tool = True
        yield checked


def _check_exchange(
    check: ExchangeCheck,
    flow: http.HTTPFlow,
    wire_format: WireFormat,
    body: bytes,
    store: MemoryStore,
    placeholder: str,
    diffs: bool = True,
) -> tuple[Any, Any]:
    """Checks one exchange and feeds its answer to the replay's cache; returns the documents it read (what the
    client sent, and the repaired copy), None for a body that is not JSON."""
    identity = caller_identity(flow.request)
    scope = scope_of(flow.request, identity)
    doc = repaired = None
    try:
        doc = jsoncodec.loads(body)
    except ValueError as e:
        check.unreadable = f"request body is {jsoncodec.why_not_read(e)}"
        check.beyond_tool = isinstance(e, jsoncodec.TooDeep)  # valid JSON this tool cannot follow
    else:
        check.model = request_model(wire_format, flow.request.path, body, doc)
        context = RepairContext(path=flow.request.path, model=check.model, host=flow.request.pretty_host.lower())
        check.violations = wire_format.check(doc, context)
        repaired = jsoncodec.loads(body)  # a second parse copies a document faster than deepcopy does
        plan = plan_repair(
            wire_format,
            flow.request,
            repaired,
            check.model,
            store,
            placeholder,
            scope,
            remove_foreign=True,
            named_account=identity.derived,
        )
        check.actions = plan.actions
        check.signed = body_signer(flow.request)
        check.silent_provider = silent_provider(plan.context, plan.actions)
        # A signed body goes on as it was: what it breaks as sent, it still breaks through the proxy.
        check.remaining = check.violations if check.signed else wire_format.check(repaired, plan.context)
        check.diff = request_diff(doc, repaired) if plan.actions and diffs else ""
        if not plan.actions:
            repaired = doc
    if flow.response is None:
        return doc, repaired
    check.status = flow.response.status_code
    if check.status >= 400:
        check.diagnosis = classify(check.status, message_prefix(flow.response, MAX_ERROR_BODY_BYTES))
        return doc, repaired
    origin = Origin(str(scope), check.model, identity.derived)
    for record in _records(wire_format.reader(), flow.response):
        record = record.model_copy(update={"request_model": check.model})
        remember_issuer(store, origin, record, wire_format)
        if record.keys():
            store.put(origin.scope, record.keys(), record)
        check.calls += [
            f"{call.name}({display_call_id(call.id)})" if call.id else call.name for call in record.tool_calls
        ]
        check.captured += [name for name in record.fields if name not in check.captured]
        for call in record.tool_calls:
            check.captured += [name for name in call.fields if name not in check.captured]
    return doc, repaired


def _indent(text: str, prefix: str = "      ") -> str:
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def render(checks: list[ExchangeCheck], *, diffs: bool = True) -> str:
    """The report a person reads: each exchange, then the tool-call chain, then a verdict."""
    out: list[str] = []
    for check in checks:
        status = f"HTTP {check.status}" if check.status is not None else "no response recorded"
        out.append(f"#{check.number} POST {check.url}  [{check.wire_format}, model {check.model or '?'}] -> {status}")
        if check.live_repaired:
            out.append("    (the recording proxy repaired this request live; checked as the client sent it)")
        if check.unreadable:
            out.append(f"    not checked: {check.unreadable}")
            continue
        if check.loses_reasoning:
            provider = check.silent_provider
            out.append(f"    as sent: {provider} answers it, without the reasoning it issued (its drops are silent)")
        elif not check.fails_as_sent:
            out.append("    as sent: breaks no known rule")
        else:
            out.append("    as sent: would fail")
            out += [f"      - {v.describe()}" for v in check.violations]
        if check.fails_as_sent or check.loses_reasoning:
            out += [
                f"      - drops {', '.join(a.fields)} the provider returned "
                f"({a.location}{', tool call ' + display_call_id(a.tool_call_id) if a.tool_call_id else ''})"
                for a in check.dropped
            ]
        if check.diagnosis is not None:
            d = check.diagnosis
            out.append(f"    the provider answered: {d.rule} - {d.summary}")
            out.append(f'      "{d.message[:300]}"')
        if check.actions and check.signed:
            out.append(f"    through the proxy: sent as it was (signed with {check.signed}, which covers its body)")
            out.append("    unsigned, the proxy would have:")
            out += [f"      - {a.describe()}" for a in check.actions]
            if diffs and check.diff:
                out.append(_indent(check.diff).rstrip("\n"))
            out.append(f"    ({SIGNED_REMEDY})")
        elif check.actions:
            out.append("    through the proxy:")
            out += [f"      - {a.describe()}" for a in check.actions]
            if diffs and check.diff:
                out.append(_indent(check.diff).rstrip("\n"))
            verdict = "still fails" if check.remaining else "breaks no known rule"
            out.append(f"    after repair: {verdict}")
            out += [f"      - {v.describe()}" for v in check.remaining]
        elif check.remaining:
            out.append("    the addon cannot fix this: nothing cached for it")
        if check.recovered:
            out.append(f"    the recording proxy recovered it: {check.recovered}")
        if check.calls or check.captured:
            calls = f"calls {', '.join(check.calls)}" if check.calls else "calls no tool"
            captured = f"; reasoning captured: {', '.join(check.captured)}" if check.captured else ""
            out.append(f"    the answer {calls}{captured}")
        out.append("")
    out.append("Tool-call chain:")
    out += [f"  {line}" for line in chain(checks)]
    failing = [c.number for c in checks if c.fails_as_sent]
    still = [c.number for c in checks if c.fails_after_repair]
    unchecked = [c.number for c in checks if c.beyond_tool]
    losing = [c.number for c in checks if c.loses_reasoning]
    out.append("")
    out.append(
        f"{len(checks)} LLM request(s); {len(failing)} would fail as sent{_numbers(failing)}; "
        + (f"{len(losing)} would lose reasoning silently{_numbers(losing)}; " if losing else "")
        + f"{len(still)} would still fail through the proxy{_numbers(still)}"
        + (f"; {len(unchecked)} could not be checked{_numbers(unchecked)}." if unchecked else ".")
    )
    return redact_text("\n".join(out) + "\n")


def _numbers(numbers: list[int]) -> str:
    return f" (#{', #'.join(map(str, numbers))})" if numbers else ""


def chain(checks: list[ExchangeCheck]) -> list[str]:
    """One line per exchange: what went back to the provider and what came out."""
    lines = []
    for check in checks:
        sent_back = sorted({display_call_id(a.tool_call_id) for a in check.actions if a.tool_call_id})
        fix = f"signed with {check.signed}, so the proxy cannot restore it" if check.signed else "the proxy restores it"
        restored = f" (client dropped state for {', '.join(sent_back)}; {fix})" if sent_back else ""
        if check.status is not None and check.status >= 400:
            outcome = f"HTTP {check.status} {check.diagnosis.rule if check.diagnosis else ''}".rstrip()
        elif check.calls:
            outcome = "calls " + ", ".join(check.calls)
        elif check.status is not None:
            outcome = "answer"
        else:
            outcome = "no response"
        lines.append(f"#{check.number} {check.model or '?'} -> {outcome}{restored}")
    return lines
