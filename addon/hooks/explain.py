"""The addon that explains an LLM provider's 4xx answers, and forgets reasoning a provider refused.

For every 4xx on LLM traffic it names the rule broken, the message or part the
error points at and the tool call there, says whether the cache held what was
missing and whether the proxy had repaired the request (or, with repair off,
what it would have done), and what the user can do. An error that names no
place (Copilot's bare "invalid request body") is located by the wire format's
own checks of the request as sent. When the provider refuses a value the proxy itself inserted (a signature
or reasoning item that came back corrupted, say), the cache entries it came
from are dropped, so one bad value does not break every later turn.
"""

from __future__ import annotations

import re
from typing import Any

from mitmproxy import http

from .. import dialects
from .. import wire as formats
from ..answer.provenance import Origin, foreign_lookup
from ..cache import StoreUnavailable
from ..diagnosis import GENERIC_RULES, PLACEHOLDER_RULES, RULE_ADVICE, RULES, UNKNOWN, Diagnosis, classify
from ..request.plans import INSERTING, RepairPlan
from ..request.signing import SIGNED_REMEDY
from ..shared import jsoncodec
from ..shared.events import Diagnosed
from ..shared.failopen import FailOpen
from ..shared.flow_meta import flow_meta
from ..shared.limits import MAX_DECODED_BYTES, MAX_ERROR_BODY_BYTES
from ..shared.records import RepairAction, Violation, display_call_id, summarize_actions
from ..shared.redact import masked_logger, redact_url
from ..wire import CacheView, RepairContext, WireFormat
from ..wire.base import call_lookup_keys, usable_keys
from ..wire.content_encoding import message_body, message_prefix
from .annotate import add_comment
from .runtime import Runtime

logger = masked_logger(__name__)

# Errors that say a value sent was wrong (not absent): if the proxy sent it, its cache entry is bad.
REFUSED_VALUE = ("invalid", "foreign", "not_found", "duplicate")
_LOCATION_INDEX = re.compile(r"^\w+\[(\d+)\]")
_MAX_FINDINGS = 6
_MENDED = "the client's request, mended by the proxy, broke "


def _parsed(body: bytes | http.Request) -> Any:
    """A JSON body (a request's, decoded within the bound), or None."""
    try:
        return jsoncodec.loads(message_body(body, MAX_DECODED_BYTES) if isinstance(body, http.Request) else body)
    except ValueError:  # not JSON, or not decodable within the bound
        return None


def locate(diagnosis: Diagnosis, wire_format: WireFormat, doc: Any) -> int | None:
    """The index into the request's top-level list that the error points at."""
    items = doc.get(wire_format.items_key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return diagnosis.index
    return wire_format.item_named(items, diagnosis.index, diagnosis.position, diagnosis.item_ids)


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
) -> str:
    """What the user can do about it, given what the proxy knew and did.

    `would_repair` describes what the proxy would have changed at the place of the error had llm_repair been on;
    `kind` is the kind of problem when it is known better than the diagnosis says (the format's own check found
    what a generic error text does not name); `signed` names what signed the request's body, which kept the proxy from
    changing it."""
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
    at = _LOCATION_INDEX.match(violation.location)
    return int(at.group(1)) if at else None


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


class ErrorExplainer:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def response(self, flow: http.HTTPFlow) -> None:
        meta = flow_meta(flow)
        if meta is None or flow.response is None or not self.runtime.ready:
            return
        if flow.response.status_code < 400:
            self.runtime.recall_plan(flow.id)  # only an error answer is explained with it: forget it
            return
        # The next turn is read whole: what was remembered may be what the provider refused, or depend on it.
        self.runtime.history.forget_scope(meta.get("scope", ""))
        with FailOpen(flow.id, "error diagnosis", self.runtime.events):
            self._explain(flow, meta)

    def _explain(self, flow: http.HTTPFlow, meta: dict[str, Any]) -> None:
        assert flow.response is not None and self.runtime.settings is not None
        settings = self.runtime.settings
        # Error texts are a few KB: the start of the answer is all that is read of it.
        diagnosis = classify(flow.response.status_code, message_prefix(flow.response, MAX_ERROR_BODY_BYTES))
        wire_format = formats.by_name(meta["format"])
        doc = _parsed(flow.request)
        index = locate(diagnosis, wire_format, doc)
        findings: list[Violation] = []
        mended: list[Violation] = []
        finding = None
        if index is None and not diagnosis.item_ids and diagnosis.rule != UNKNOWN and doc is not None:
            # The error names no place: the format's own checks find what it may be about.
            findings, mended = self._findings(flow, meta, diagnosis, doc)
            finding = pick_finding(findings, diagnosis)
            index = _finding_index(finding) if finding is not None else None
        # What the problem is: the rule's kind, or, for a text that names no cause, the kind of what was found.
        kind = RULES[finding.rule][0] if finding is not None and finding.rule in RULES else diagnosis.kind
        calls = wire_format.calls_at(doc, index)
        plan = self.runtime.recall_plan(flow.id)
        applied = meta.get("repaired") is True
        here = [a for a in plan.actions if index is None or a.index == index] if plan is not None else []
        sites = [a for a in here if a.kind in INSERTING] if applied else []
        repaired_here = bool(sites)
        # Repair off: what the proxy would have done at this place, as far as it fixes this kind of problem (for a
        # text that names no cause, and nothing found: anything it would have done).
        unapplied = [] if applied else here
        if not (diagnosis.rule in GENERIC_RULES and finding is None):
            unapplied = [a for a in unapplied if a.kind in _FIXED_BY.get(kind, ())]
        healed = self._heal(meta, diagnosis, plan, sites) if plan is not None and kind in REFUSED_VALUE else 0
        cache_had = self._cache_had(meta, calls, diagnosis) if diagnosis.rule != UNKNOWN else None
        rule = finding.rule if finding is not None else diagnosis.rule
        advice = advise(
            diagnosis,
            cache_had=cache_had,
            repaired_here=repaired_here,
            healed=healed,
            repair_on=settings.repair,
            placeholder_applies=wire_format.signature_placeholder
            and rule in PLACEHOLDER_RULES
            and settings.signature_placeholder == "off",
            would_repair=summarize_actions(unapplied) if unapplied else "",
            kind=kind,
            signed=meta.get("signed"),
        )
        if kind in REFUSED_VALUE:
            advice = self._foreign_here(meta, plan, doc, index) or advice
        location = f"{wire_format.items_key}[{index}]" if index is not None else None
        call_ids = [display_call_id(c[0]) for c in calls if c[0]]
        function = diagnosis.function or next((c[1] for c in calls if isinstance(c[1], str) and c[1]), None)
        as_sent = [v.describe() for v in findings[:_MAX_FINDINGS]]
        mended_text = [f"{_MENDED}{v.describe()}" for v in mended[:_MAX_FINDINGS]]
        url = redact_url(flow.request.url)
        named = ", ".join(call_ids) + (f", function {function}" if finding is not None and function else "")
        where = f" at {location}" + (f" (tool call {named})" if call_ids else "") if location else ""
        found = f"; as sent, the request breaks {'; '.join(as_sent)}" if as_sent else ""
        found += f"; {'; '.join(mended_text)}" if mended_text else ""
        if diagnosis.rule == UNKNOWN:
            line = f"llm {flow.response.status_code} from {url}, not a known reasoning error: {diagnosis.message[:300]}"
        else:
            line = f"llm {flow.response.status_code} from {url}: {diagnosis.summary}{where}{found}; {advice}"
        logger.warning(line)
        add_comment(flow, line)
        meta["diagnosis"] = {
            "rule": diagnosis.rule,
            "location": location,
            "tool_call_ids": call_ids,
            "healed": healed,
            "findings": as_sent + mended_text,
        }
        self.runtime.events.write(
            Diagnosed(
                flow_id=flow.id,
                host=meta["host"],
                url=url,
                wire_format=wire_format.name,
                status=flow.response.status_code,
                rule=diagnosis.rule,
                summary=diagnosis.summary,
                problem=kind,
                field=diagnosis.field,
                provider=diagnosis.provider,
                location=location,
                tool_call_ids=call_ids,
                item_ids=diagnosis.item_ids,
                function=function,
                cache_had=cache_had,
                repaired=repaired_here,
                healed=healed,
                findings=as_sent + mended_text,
                cause=diagnosis.cause,
                advice=advice,
                message=diagnosis.message,
            )
        )

    def _context(self, flow: http.HTTPFlow, meta: dict[str, Any], diagnosis: Diagnosis) -> RepairContext:
        host, path, model = flow.request.pretty_host.lower(), flow.request.path, meta.get("request_model")
        for name in (diagnosis.provider, diagnosis.wrapped_by):  # an error in a gateway's envelope, from another host
            dialect = dialects.named(name)
            if dialect is not None and dialect.host and not dialect.serves(host, path, model or ""):
                host = dialect.host
                break
        return RepairContext(path=path, model=model, host=host)

    def _findings(
        self, flow: http.HTTPFlow, meta: dict[str, Any], diagnosis: Diagnosis, doc: Any
    ) -> tuple[list[Violation], list[Violation]]:
        """The rules the request breaks as it was sent upstream, by the format's own checks; and, when the proxy
        repaired it, the ones the client's request broke that the repair mended (only from the copy kept for flow
        files, `original_request`: none is made for this)."""
        wire_format = formats.by_name(meta["format"])
        context = self._context(flow, meta, diagnosis)
        original = meta.get("original_request") if meta.get("repaired") is True else None
        try:
            found = wire_format.check(doc, context)
            client_doc = _parsed(original) if isinstance(original, bytes) else None
            client = wire_format.check(client_doc, context) if client_doc is not None else []
        except Exception as e:  # noqa: BLE001 - the findings are an extra: the diagnosis stands without them
            logger.warning("llm could not check the request for what the error does not name: %r", e)
            return [], []
        sent = {(v.rule, v.location) for v in found}
        return found, [v for v in client if (v.rule, v.location) not in sent]

    def _foreign_here(self, meta: dict[str, Any], plan: RepairPlan | None, doc: Any, index: int | None) -> str | None:
        """What the proxy knows of a refused value at the place the error names: that it saw it issued for another
        model, host or account (removal off, or the value had to stay), and what to do. `doc` is this explanation's
        own parse of the request, which is done with it: the removal may change it."""
        store = self.runtime.store
        if store is None or doc is None or index is None:
            return None
        kept = [note for at, note in (plan.foreign_kept if plan is not None else []) if at == index]
        if kept:
            return kept[0]
        if self.runtime.settings is None or self.runtime.settings.remove_foreign:
            return None
        try:
            removable, _ = formats.by_name(meta["format"]).remove_foreign(doc, foreign_lookup(store, Origin.of(meta)))
        except StoreUnavailable:
            return None
        here = [action for action in removable if action.index == index]
        if not here:
            return None
        return (
            f"the proxy saw the {', '.join(here[0].fields)} there {here[0].reason}; with llm_remove_foreign=true "
            "(the default) it removes such values"
        )

    def _cache_had(
        self, meta: dict[str, Any], calls: list[tuple[str | None, str | None, Any]], diagnosis: Diagnosis
    ) -> bool | None:
        store = self.runtime.store
        model = meta.get("request_model")
        if store is None or not (calls or diagnosis.item_ids):
            return None
        keys = [key for call in calls for key in call_lookup_keys(model, *call)] + list(diagnosis.item_ids)
        keys = usable_keys(keys, by_content=meta.get("by_content", True))
        try:
            cache = CacheView(store.get_many(meta["scope"], keys), model)
        except StoreUnavailable:
            return None  # unknown: the cache cannot be asked now
        return any(cache.call(*call) for call in calls) or any(cache.record(i) for i in diagnosis.item_ids)

    def _heal(self, meta: dict[str, Any], diagnosis: Diagnosis, plan: RepairPlan, sites: list[RepairAction]) -> int:
        """Drops the cache entries whose values the provider refused in this request; how many went."""
        store = self.runtime.store
        entries = plan.cache_entries()
        if store is None or not entries:
            return 0
        named = set(diagnosis.item_ids)
        refused = {site.response_id for site in sites}
        doomed = [e for e in entries if e.response_id in refused or named & set(e.keys) or e.item in named]
        # One entry per captured turn, whatever the number of keys it is stored under.
        try:
            removed = sum(1 for entry in doomed if store.delete(meta["scope"], entry.keys))
        except StoreUnavailable as e:
            logger.warning("llm could not drop the cache entries the provider refused: %s", e)
            return 0
        if removed:
            logger.warning("llm dropped %d cache entr%s the provider refused", removed, "y" if removed == 1 else "ies")
        return removed
