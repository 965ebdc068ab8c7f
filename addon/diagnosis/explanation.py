"""Explaining a provider's 4xx answer to LLM traffic: what the request broke, where, and what to do about it.

`explain` takes what the response hook read (the error, the request's wire format and parsed body, what the hook noted
of the request, the plan of what the repair did, a read-only view of the cache, the settings) and decides everything
at once: the rule broken, the message or part the error points at and the tool call there (an error that names no
place, Copilot's bare "invalid request body", is located by the wire format's own checks of the request as sent),
whether the cache held what was missing, whether the proxy had repaired the request (or, with repair off, what it
would have done), and what the user can do. An error that refuses a signed or encrypted value the request sent back
is judged against what the proxy captured for that place: the value the text names (by item id, or by the ends of the
value it quotes), or else the one that differs from its capture, and whether the client sent it as issued, altered
it, or sent something the proxy never saw. When the provider refuses a value the proxy itself inserted (a signature
or reasoning item that came back corrupted, say), the result names the cache entries it came from, for the hook to
forget, so one bad value does not break every later turn.

Nothing here writes: the hook applies the result (forgets the entries, `Explanation.forgotten`) and reports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import dialects
from ..cache import StoreUnavailable
from ..request.plans import INSERTING, RepairPlan
from ..request.signing import SIGNED_REMEDY
from ..shared import jsoncodec
from ..shared.records import ReasoningRecord, RepairAction, Violation, display_call_id, place_index, summarize_actions
from ..shared.redact import masked_logger
from ..shared.settings import Settings
from ..wire import CacheView, RepairContext, WireFormat
from ..wire.base import ForeignLookup, SentValue, call_lookup_keys, usable_keys
from .matching import GENERIC_RULES, PLACEHOLDER_RULES, RULE_ADVICE, RULE_VERDICTS, RULES, classify
from .rules import UNKNOWN, Diagnosis, Kind
from .verdicts import VERDICT_ADVICE, Judgement, judge

logger = masked_logger(__name__)

# Errors that say a value sent was wrong (not absent): if the proxy sent it, its cache entry is bad.
REFUSED_VALUE = ("invalid", "foreign", "not_found", "duplicate")
_MAX_FINDINGS = 6
_MENDED = "the client's request, mended by the proxy, broke "

# A value issued for another model, deployment, account or conversation: the advice, in one place.
FOREIGN_ADVICE = (
    "the value was issued for another model, deployment, account or conversation; the proxy removes such values "
    "when it captured them (so the conversation must have gone through the proxy), otherwise start a new "
    "conversation or switch back to the model that issued them"
)
# What each kind of repair fixes: the repair-off advice names only what would have fixed the error.
_FIXED_BY = {
    "missing": (*INSERTING, "placeholder"),
    "schema": ("content_null", "merged"),
    "orphaned": ("removed",),
}

Call = tuple[str | None, str | None, Any]  # (id, name, arguments), as WireFormat.calls_at gives them


@dataclass(frozen=True, slots=True)
class ErrorResponse:
    status: int
    body: bytes  # the start of the answer: error texts are a few KB
    url: str  # the request's, redacted


@dataclass(frozen=True, slots=True)
class SentRequest:
    """What the request hook noted of the request the provider refused."""

    host: str  # as the client named it, lower case
    path: str
    model: str | None
    repaired: bool  # the proxy's repair was applied to it
    signed: str | None = None  # what signed its body, which kept the proxy from changing it
    client_body: bytes | None = None  # the body as the client sent it, when the proxy repaired it and kept a copy
    by_content: bool = True  # the cache may be asked by name and arguments (see wire.base.usable_keys)


@dataclass(frozen=True, slots=True)
class CacheReads:
    """What an explanation may read of the cache, in the request's scope. Either raises StoreUnavailable when the
    cache cannot be asked; nothing here changes it."""

    records: Callable[[list[str]], Mapping[str, ReasoningRecord]]  # the records stored under these keys
    foreign: ForeignLookup  # for each value the proxy saw issued elsewhere, why it is foreign to this request


def locate(diagnosis: Diagnosis, wire_format: WireFormat, doc: Any) -> int | None:
    """The index into the request's top-level list that the error points at."""
    items = doc.get(wire_format.items_key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return diagnosis.index
    return wire_format.item_named(items, diagnosis.index, diagnosis.position, diagnosis.item_ids)


def advise(
    diagnosis: Diagnosis,
    *,
    cache_had: bool | None,
    repaired_here: bool,
    healed: int,
    repair_on: bool,
    placeholder_applies: bool = False,
    would_repair: str = "",
    kind: str | None = None,
    signed: str | None = None,
    judged: str | None = None,
) -> str:
    """What the user can do about it, given what the proxy knew and did.

    `would_repair` describes what the proxy would have changed at the place of the error had llm_repair been on;
    `kind` is the kind of problem when it is known better than the diagnosis says (the format's own check found
    what a generic error text does not name); `signed` names what signed the request's body, which kept the proxy from
    changing it; `judged` is the advice for what the proxy found of the refused value, held against its capture."""
    kind = kind or diagnosis.kind
    if diagnosis.rule == UNKNOWN:
        return "not a known reasoning-state error; the provider's text is logged as it was"
    if healed and kind in REFUSED_VALUE:
        return (
            f"the provider refused a value the proxy put back; {healed} cache entr{'y' if healed == 1 else 'ies'} "
            "dropped, so later turns will not repeat it (retrying sends the request without it)"
        )
    if would_repair and signed:
        return (
            f"the request is signed with {signed}, which covers its body, so the proxy sent it as it was; it would "
            f"have {would_repair}: {SIGNED_REMEDY}"
        )
    if would_repair:
        return (
            f"repair is off (llm_repair=false), and the proxy would have {would_repair}: turn repair on "
            "(--set llm_repair=true)"
        )
    if judged:
        return judged
    own = RULE_ADVICE.get(diagnosis.rule)  # the rule's own remedy, for the problem it names
    if own is not None and kind == diagnosis.kind:
        return own(diagnosis.cause) if callable(own) else own
    if kind == "foreign":
        return FOREIGN_ADVICE
    if kind == "duplicate":
        return "the request re-sends items the server already holds (previous_response_id): drop them from input"
    if kind in REFUSED_VALUE:
        return (
            "the client sent a value the provider does not accept (re-encoded, edited, or from another conversation "
            "or model); the proxy never overwrites what the client sends: start a new conversation"
        )
    if kind == "missing":
        if repaired_here:
            return "the proxy put back what it had, yet the provider refused: report it with the flow (scripts/export)"
        if cache_had and not repair_on:
            return "the proxy has what is missing: turn repair on (--set llm_repair=true)"
        if cache_had:
            return "the proxy has what is missing but did not put it back: report it with the flow (scripts/export)"
        if cache_had is False:
            return (
                "the proxy never saw the answer that produced this tool call (sent before the proxy was in the path, "
                "through another proxy, with another credential or model, or expired from the cache): start a new "
                "conversation through the proxy"
                + (
                    "; with llm_signature_placeholder=auto the proxy lets it go on, degraded"
                    if placeholder_applies
                    else ""
                )
            )
    if kind == "orphaned":
        return "a reasoning item is left with nothing after it: the proxy removes such items when llm_repair is on"
    if kind == "schema":
        return "the body breaks the provider's schema; for content: [] the proxy sends null when llm_repair is on"
    if kind == "unsupported":
        return "this model is not served on this API: use the API the provider names"
    return "see the provider's message"


def _finding_index(violation: Violation) -> int | None:
    return place_index(violation.location)


def pick_finding(findings: list[Violation], diagnosis: Diagnosis) -> Violation | None:
    """The finding an error that names no place is about: one of its own rule, or of the same kind and field; for a
    text that names no cause at all, the first (a missing value first: the commonest cause)."""
    for violation in findings:
        if violation.rule == diagnosis.rule:
            return violation
    own = RULES.get(diagnosis.rule)
    for violation in findings:
        if own is not None and RULES.get(violation.rule) == own:
            return violation
    if diagnosis.rule in GENERIC_RULES and findings:
        return min(findings, key=lambda v: RULES.get(v.rule, ("unknown", None))[0] != "missing")
    return None


@dataclass(frozen=True)
class Explanation:
    """Everything said about one error response: what the provider refused, where, why, and what to do.

    `forget` names the cache entries whose values the provider refused; the advice counts those the cache held, which
    only forgetting them tells (`forgotten`)."""

    status: int
    url: str
    wire_format: str
    diagnosis: Diagnosis
    problem: Kind  # the rule's kind, or, for a text that names no cause, the kind of what the checks found
    location: str | None  # the item the error points at ("messages[3]")
    finding: Violation | None  # what the format's checks found there, for an error that names no place
    tool_call_ids: list[str]
    function: str | None
    # For an error that names no place: the rules the request breaks as it was sent, by the format's own checks, and
    # those the client's request broke that the repair mended.
    as_sent: list[str]
    mended: list[str]
    cache_had: bool | None  # whether the cache (once the refused entries are forgotten) holds what is missing
    repaired: bool  # the proxy had put state back at that place
    forget: list[tuple[str, ...]]  # the keys of each cache entry to forget
    # What the advice is made of besides.
    repair_on: bool
    placeholder_applies: bool
    would_repair: str  # what the proxy would have done there, with repair off
    signed: str | None
    foreign_note: str | None  # what the proxy knows of a refused value it saw issued elsewhere
    judgement: Judgement | None = None  # what the refused value is, held against the proxy's capture
    healed: int = 0  # how many of the entries to forget the cache held and forgot

    @property
    def findings(self) -> list[str]:
        return self.as_sent + self.mended

    @property
    def culprit(self) -> SentValue | None:
        return self.judgement.culprit if self.judgement is not None else None

    @property
    def item_ids(self) -> list[str]:
        """The items the error names, and the one the judgement found."""
        found = list(self.culprit.item_ids) if self.culprit is not None else []
        return list(dict.fromkeys([*self.diagnosis.item_ids, *found]))

    @property
    def judged_advice(self) -> str | None:
        """The advice for the verdict: the rule's own words for it, else those every provider shares."""
        verdict = self.judgement.verdict if self.judgement is not None else None
        if verdict is None:
            return None
        own = RULE_VERDICTS.get((self.diagnosis.rule, self.diagnosis.provider), {})
        return own.get(verdict) or VERDICT_ADVICE[verdict]

    def forgotten(self, healed: int) -> Explanation:
        """This explanation once `healed` of the entries to forget were dropped from the cache."""
        return dataclasses.replace(self, healed=healed)

    @property
    def advice(self) -> str:
        return self.foreign_note or advise(
            self.diagnosis,
            cache_had=self.cache_had,
            repaired_here=self.repaired,
            healed=self.healed,
            repair_on=self.repair_on,
            placeholder_applies=self.placeholder_applies,
            would_repair=self.would_repair,
            kind=self.problem,
            signed=self.signed,
            judged=self.judged_advice,
        )

    @property
    def line(self) -> str:
        """The one line a person reads: in the log, and as the flow's comment."""
        diagnosis = self.diagnosis
        if diagnosis.rule == UNKNOWN:
            return f"llm {self.status} from {self.url}, not a known reasoning error: {diagnosis.message[:300]}"
        function = self.function if self.finding is not None else None
        named = ", ".join(self.tool_call_ids) + (f", function {function}" if function else "")
        what = [self.culprit.label] if self.culprit is not None else []
        what += [f"tool call {named}"] if self.tool_call_ids else []
        where = f" at {self.location}" + (f" ({', '.join(what)})" if what else "") if self.location else ""
        found = f"; as sent, the request breaks {'; '.join(self.as_sent)}" if self.as_sent else ""
        found += f"; {'; '.join(self.mended)}" if self.mended else ""
        return f"llm {self.status} from {self.url}: {diagnosis.summary}{where}{found}; {self.advice}"

    def noted(self) -> dict[str, Any]:
        """What the flow's metadata keeps of it."""
        return {
            "rule": self.diagnosis.rule,
            "location": self.location,
            "tool_call_ids": self.tool_call_ids,
            "healed": self.healed,
            "findings": self.findings,
            "message": self.diagnosis.message,  # the provider's text, redacted
            "advice": self.advice,  # what to do: the report shows it beside the diagnosis
        }


def explain(
    error: ErrorResponse,
    wire_format: WireFormat,
    doc: Any,
    sent: SentRequest,
    plan: RepairPlan | None,
    cache: CacheReads | None,
    settings: Settings,
) -> Explanation:
    """The explanation of an error response to a request in `wire_format` whose parsed body is `doc` (None when it is
    not JSON). `doc` is this explanation's own: a look at what removing foreign values would do may change it."""
    diagnosis = classify(error.status, error.body)
    index = locate(diagnosis, wire_format, doc)
    judgement = _judgement(diagnosis, wire_format, doc, sent, cache)
    culprit = judgement.culprit if judgement is not None else None
    if index is None and culprit is not None:
        index = culprit.index  # the value the text quotes, or the one that alone differs from the capture
    findings: list[Violation] = []
    mended: list[Violation] = []
    finding = None
    if index is None and not diagnosis.item_ids and diagnosis.rule != UNKNOWN and doc is not None:
        # The error names no place: the format's own checks find what it may be about.
        findings, mended = _findings(wire_format, doc, sent, diagnosis)
        finding = pick_finding(findings, diagnosis)
        index = _finding_index(finding) if finding is not None else None
    # What the problem is: the rule's kind, or, for a text that names no cause, the kind of what was found.
    kind = RULES[finding.rule][0] if finding is not None and finding.rule in RULES else diagnosis.kind
    calls = wire_format.calls_at(doc, index)
    if culprit is not None and culprit.call_id is not None:
        calls = [call for call in calls if call[0] == culprit.call_id] or calls
    here = [a for a in plan.actions if index is None or a.index == index] if plan is not None else []
    sites = [a for a in here if a.kind in INSERTING] if sent.repaired else []
    # Repair off: what the proxy would have done at this place, as far as it fixes this kind of problem (for a
    # text that names no cause, and nothing found: anything it would have done).
    unapplied = [] if sent.repaired else here
    if not (diagnosis.rule in GENERIC_RULES and finding is None):
        unapplied = [a for a in unapplied if a.kind in _FIXED_BY.get(kind, ())]
    named = {*diagnosis.item_ids, *(culprit.item_ids if culprit is not None else ())}
    forget = _refused_entries(named, plan, sites) if plan is not None and kind in REFUSED_VALUE else []
    if judgement is not None and judgement.clients_own:
        forget = []
    if cache is None:
        forget = []
    forgotten = {key for keys in forget for key in keys}
    cache_had = _cache_had(cache, sent, calls, diagnosis, forgotten) if diagnosis.rule != UNKNOWN else None
    rule = finding.rule if finding is not None else diagnosis.rule
    foreign_note = _foreign_here(cache, settings, plan, wire_format, doc, index) if kind in REFUSED_VALUE else None
    return Explanation(
        status=error.status,
        url=error.url,
        wire_format=wire_format.name,
        diagnosis=diagnosis,
        problem=kind,
        location=_location(wire_format, index, culprit),
        finding=finding,
        tool_call_ids=_call_ids(calls, culprit),
        function=diagnosis.function
        or (culprit.function if culprit is not None else None)
        or next((c[1] for c in calls if isinstance(c[1], str) and c[1]), None),
        as_sent=[v.describe() for v in findings[:_MAX_FINDINGS]],
        mended=[f"{_MENDED}{v.describe()}" for v in mended[:_MAX_FINDINGS]],
        cache_had=cache_had,
        repaired=bool(sites),
        forget=forget,
        repair_on=settings.repair,
        placeholder_applies=wire_format.signature_placeholder
        and rule in PLACEHOLDER_RULES
        and settings.signature_placeholder == "off",
        would_repair=summarize_actions(unapplied) if unapplied else "",
        signed=sent.signed,
        foreign_note=foreign_note,
        judgement=judgement,
    )


def _location(wire_format: WireFormat, index: int | None, culprit: SentValue | None) -> str | None:
    """The place the error points at: the refused value's own ("contents[1].parts[0]"), else its item's."""
    if culprit is not None:
        return culprit.location
    return f"{wire_format.items_key}[{index}]" if index is not None else None


def _call_ids(calls: list[Call], culprit: SentValue | None) -> list[str]:
    """The tool calls at the place the error points at: the refused value's own, where it belongs to one."""
    if culprit is not None and culprit.call_id is not None:
        return [display_call_id(culprit.call_id)]
    return [display_call_id(c[0]) for c in calls if c[0]]


def _judgement(
    diagnosis: Diagnosis, wire_format: WireFormat, doc: Any, sent: SentRequest, cache: CacheReads | None
) -> Judgement | None:
    """For a rule whose refused value is judged: which value the request sent it is, and what it is against the
    proxy's capture. Without a cache only a value the request never asked for is judged (it needs none)."""
    if (diagnosis.rule, diagnosis.provider) not in RULE_VERDICTS or doc is None:
        return None

    def records(keys: list[str]) -> Mapping[str, ReasoningRecord]:
        return cache.records(usable_keys(keys, by_content=sent.by_content)) if cache is not None else {}

    try:
        judgement = judge(diagnosis, wire_format.sent_values(doc, sent.model, records))
    except StoreUnavailable:
        return None  # unknown: the cache cannot be asked now
    except Exception as e:  # noqa: BLE001 - the judgement is an extra: the diagnosis stands without it
        logger.warning("llm could not judge the value the error refuses: %r", e)
        return None
    if cache is None and judgement is not None and judgement.verdict != "not_asked":
        return None
    return judgement


def _context(sent: SentRequest, diagnosis: Diagnosis) -> RepairContext:
    host = sent.host
    for name in (diagnosis.provider, diagnosis.wrapped_by):  # an error in a gateway's envelope, from another host
        dialect = dialects.named(name)
        if dialect is not None and dialect.host and not dialect.serves(host, sent.path, sent.model or ""):
            host = dialect.host
            break
    return RepairContext(path=sent.path, model=sent.model, host=host)


def _findings(
    wire_format: WireFormat, doc: Any, sent: SentRequest, diagnosis: Diagnosis
) -> tuple[list[Violation], list[Violation]]:
    """The rules the request breaks as it was sent upstream, by the format's own checks; and, when the proxy
    repaired it, the ones the client's request broke that the repair mended (only from the copy kept for flow
    files: none is made for this)."""
    context = _context(sent, diagnosis)
    try:
        found = wire_format.check(doc, context)
        client_doc = _parsed(sent.client_body) if sent.client_body is not None else None
        client = wire_format.check(client_doc, context) if client_doc is not None else []
    except Exception as e:  # noqa: BLE001 - the findings are an extra: the diagnosis stands without them
        logger.warning("llm could not check the request for what the error does not name: %r", e)
        return [], []
    sent_rules = {(v.rule, v.location) for v in found}
    return found, [v for v in client if (v.rule, v.location) not in sent_rules]


def _parsed(body: bytes) -> Any:
    try:
        return jsoncodec.loads(body)
    except ValueError:
        return None


def _refused_entries(named: set[str], plan: RepairPlan, sites: list[RepairAction]) -> list[tuple[str, ...]]:
    """The keys of each cache entry whose value the provider refused in this request (the items `named` as refused,
    the places in `sites`): one entry per captured turn, whatever the number of keys it is stored under."""
    refused = {site.response_id for site in sites}
    return [
        tuple(entry.keys)
        for entry in plan.cache_entries()
        if entry.response_id in refused or named & set(entry.keys) or entry.item in named
    ]


def _cache_had(
    cache: CacheReads | None, sent: SentRequest, calls: list[Call], diagnosis: Diagnosis, forgotten: set[str]
) -> bool | None:
    """Whether the cache holds what the error says is missing, once the refused entries are gone from it."""
    if cache is None or not (calls or diagnosis.item_ids):
        return None
    keys = [key for call in calls for key in call_lookup_keys(sent.model, *call)] + list(diagnosis.item_ids)
    keys = usable_keys(keys, by_content=sent.by_content)
    try:
        found = cache.records(keys)
    except StoreUnavailable:
        return None  # unknown: the cache cannot be asked now
    view = CacheView({key: record for key, record in found.items() if key not in forgotten}, sent.model)
    return any(view.call(*call) for call in calls) or any(view.record(i) for i in diagnosis.item_ids)


def _foreign_here(
    cache: CacheReads | None,
    settings: Settings,
    plan: RepairPlan | None,
    wire_format: WireFormat,
    doc: Any,
    index: int | None,
) -> str | None:
    """What the proxy knows of a refused value at the place the error names: that it saw it issued for another
    model, host or account (removal off, or the value had to stay), and what to do."""
    if cache is None or doc is None or index is None:
        return None
    kept = [note for at, note in (plan.foreign_kept if plan is not None else []) if at == index]
    if kept:
        return kept[0]
    if settings.remove_foreign:
        return None
    try:
        removable, _ = wire_format.remove_foreign(doc, cache.foreign)
    except StoreUnavailable:
        return None
    here = [action for action in removable if action.index == index]
    if not here:
        return None
    return (
        f"the proxy saw the {', '.join(here[0].fields)} there {here[0].reason}; with llm_remove_foreign=true "
        "(the default) it removes such values"
    )
