"""The addon that repairs LLM requests in flight from the reasoning cache."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mitmproxy import http

from ..cache import StoreUnavailable
from ..request import repair_log
from ..request.claim import UnreadableBody, claim_request, may_hold_foreign, request_model, whose
from ..request.notes import mismatch_note, silent_note, silent_provider
from ..request.plans import RepairPlan
from ..request.resume import Outcome, Reading, remember_whole, resume
from ..request.signing import SIGNED_REMEDY, body_signer
from ..shared import compat, jsoncodec
from ..shared.events import Recovered, Repaired, loggable_actions
from ..shared.failopen import after_sending, fail_open
from ..shared.flow_meta import META, PENDING, RETRY_OF, complete_meta
from ..shared.records import ActionTally, RepairAction, Violation, recovered_places, summarize_actions
from ..shared.redact import masked_logger, redact_url
from ..shared.scope import Caller, Identity, Scope
from ..wire import WireFormat
from .annotate import REPAIR_MARKER, add_comment, report_recovered, report_skip
from .runtime import Runtime

logger = masked_logger(__name__)

# Most (host, kind of credential) pairs the proxy says once that their scope ends when the credential rotates.
_ROTATING_NOTED = 256


@dataclass(slots=True)
class RequestReport:
    """What the request hook found to say about one request: gathered while it decides, said once at its end
    (`RequestRepair._report`), so that deciding and telling stay apart."""

    meta: dict[str, Any] | None  # the flow's entry (None: not LLM traffic the proxy reads)
    # Why the request, or part of it, was left as it came (made when there is one: most requests have none, and
    # this object is made on the way to every LLM answer's first event).
    skipped: list[str] | None = None
    comment: str | None = None  # for people, on the flow
    plan: RepairPlan | None = None  # what the repair did or would do: kept for the explainer of an error answer
    repaired: Callable[[], None] | None = None  # the repair's event and log line, said once the answer is in
    repaired_at_once: bool = False  # said as soon as the request is on its way instead (flows are kept)
    recovered: Recovered | None = None  # sent in the closest form the provider accepts (llm_recover)

    def skip(self, *reasons: str) -> None:
        self.skipped = [*(self.skipped or ()), *reasons]


class RequestRepair:
    # The repairs the event log has listed (later turns only count them), and the log they were listed in.
    _logged: repair_log.RepairMemory | None = None
    _logged_to: object = None

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._rotating_noted: set[tuple[str, str]] = set()

    def request(self, flow: http.HTTPFlow) -> None:
        # Every request of every client passes here on its way, an LLM answer's first event waiting on it: this
        # touches as little as it can, and a try costs nothing until something raises (FailOpen's job, without it).
        if flow.response is not None or not self.runtime.ready:
            return
        started = time.perf_counter()
        try:
            handled = self._request(flow)
            if handled is not None:
                meta, report = handled
                if report is not None:
                    self._report(flow, report)
                if meta is not None:  # the report shows the proxy's own time beside the provider's
                    meta["addon_ms"] = {"request": round((time.perf_counter() - started) * 1000, 3)}
        except Exception as e:
            fail_open(flow.id, "request repair", self.runtime.events, e)
        self.runtime.history.release()

    def response(self, flow: http.HTTPFlow) -> None:
        response = flow.response
        self.runtime.answered(flow.id, refused=response is not None and response.status_code >= 400)

    def error(self, flow: http.HTTPFlow) -> None:
        self.runtime.answered(flow.id, refused=False)
        self.runtime.recall_plan(flow.id)  # no answer will come to explain: what it holds of the request goes

    def _describe(self, meta: dict[str, Any], caller: Caller) -> tuple[Identity, Scope, bool]:
        """Writes whose request it is into its flow's entry: the scope its answer's reasoning is filed under."""
        settings = self.runtime.settings
        assert settings is not None
        identity, scope, by_content = whose(caller, settings.credential_headers, settings.anonymous_fallback)
        if identity.rotating is not None:
            self._note_rotating(scope.host, identity.rotating)
        meta.update(scope=str(scope), host=scope.host, by_content=by_content)
        if identity.derived:  # capture files the answer's values under a scope that names its account
            meta["named_account"] = True
        return identity, scope, by_content

    def _describe_later(
        self, flow: http.HTTPFlow, meta: dict[str, Any], wire_format: WireFormat, caller: Caller, body: bytes
    ) -> None:
        """`_describe` and the model, of a request that needed nothing; a flow whose entry cannot be written is left
        alone from then on, as one the request hook failed on."""
        try:
            self._describe(meta, caller)
            meta["request_model"] = request_model(wire_format, caller.text_path, body, None)
        except Exception:
            if flow.metadata.get(META) is meta:
                del flow.metadata[META]
            raise

    def _note_rotating(self, host: str, kind: str) -> None:
        """Says once per host and kind of credential that repair will not outlive the credential."""
        if (host, kind) in self._rotating_noted or len(self._rotating_noted) >= _ROTATING_NOTED:
            return
        self._rotating_noted.add((host, kind))
        logger.warning(
            "llm scope: requests to %s carry %s, which rotates and names no account the proxy can read: reasoning "
            "captured before it rotates cannot repair requests sent after (said once per host and kind)",
            host,
            kind,
        )

    def _report(self, flow: http.HTTPFlow, report: RequestReport) -> None:
        """Says what the hook decided about a request, in one place: mitmproxy's output, the event log, the flow."""
        events = self.runtime.events
        for reason in report.skipped or ():
            report_skip(flow, reason, events)
        if report.comment is not None:
            add_comment(flow, report.comment)
        if report.plan is not None:
            self.runtime.remember_plan(flow.id, report.plan)
        if report.recovered is not None and report.meta is not None:
            report_recovered(flow, report.meta, events, report.recovered)
        if report.repaired is not None:
            if report.repaired_at_once:  # the flow's entry is complete as soon as mitmproxy has it
                after_sending(flow.id, "repair log", events, report.repaired)
            else:
                self.runtime.say_when_answered(flow.id, "repair log", report.repaired)

    def _request(self, flow: http.HTTPFlow) -> tuple[dict[str, Any] | None, RequestReport | None] | None:
        """Reads and repairs an LLM request; returns the entry it left on the flow and what there is to say about
        it (None: nothing, the case of most requests, on the way to their answer's first event), or None for other
        traffic."""
        request = flow.request
        try:
            claimed = claim_request(request)
        except UnreadableBody as e:
            return None, RequestReport(None, skipped=[f"{e}; forwarded untouched"])
        if claimed is None:
            return None
        wire_format, body = claimed
        settings = self.runtime.settings
        assert settings is not None
        meta: dict[str, Any] = {"format": wire_format.name}
        flow.metadata[META] = meta
        caller = Caller.of(request)  # the request as it is here: addons after this one may change it
        # A second sending (hooks/retry.py) goes as it was made: a repair would put back what the provider refused.
        again = RETRY_OF in flow.metadata
        restore = not again and wire_format.may_need_repair(body)
        if not restore and (again or not (settings.remove_foreign and may_hold_foreign(wire_format, body))):
            # Nothing to put back or take out, and no turn of a conversation the history memory holds (those carry
            # the calls that made them be remembered): it goes on as it came, never parsed. Whose it is and the model
            # it names (what its answer's reasoning is filed under) are read once it is on its way, while the
            # provider answers, unless flows are kept: then the flow holds them as soon as mitmproxy has it.
            describe = functools.partial(self._describe_later, flow, meta, wire_format, caller, body)
            if self.runtime.keep_bodies():
                describe()
            else:
                meta[PENDING] = describe
                after_sending(flow.id, "request", self.runtime.events, functools.partial(complete_meta, meta))
            return meta, None
        report = RequestReport(meta)
        identity, scope, by_content = self._describe(meta, caller)
        store = self.runtime.store
        assert store is not None
        reading = Reading(
            wire_format,
            request,
            scope,
            store,
            settings.signature_placeholder,
            by_content,
            settings.remove_foreign,
            identity.derived,
            settings.recover,
        )
        try:
            outcome = resume(self.runtime.history, reading, body) or self._read_whole(report, reading, body, restore)
        except StoreUnavailable as e:
            meta.setdefault("request_model", request_model(wire_format, request.path, body, None))
            report.skip(f"reasoning cache unavailable, forwarded unrepaired: {e}")
            return meta, report
        if outcome is None:
            return meta, report
        plan = outcome.plan
        model = meta["request_model"] = outcome.model
        misses = len(plan.asked) - len(plan.cache.found.keys() & plan.asked) if plan.asked else 0
        if misses:  # the cache lookups that found nothing (the metrics' cache misses)
            meta["cache_misses"] = misses
        if outcome.doc is None:
            meta["resumed"] = True  # read from where the conversation's last request ended
        if plan.cache.mismatched:
            # One line a request, not one a tool call: after a model switch every later turn holds all the earlier.
            report.skip(mismatch_note(plan.cache.mismatched, model))
        if plan.foreign_kept:
            report.skip(*(note for _, note in plan.foreign_kept))
        if plan.unrecovered:
            report.skip(*map(unrecovered_note, plan.unrecovered))
        actions = plan.actions
        if not actions:
            if plan.foreign_kept:  # the provider will refuse what had to stay: its diagnosis says why
                report.plan = plan
            return meta, report
        signer = body_signer(request)
        if signer is not None:
            self._hold_back(report, plan, signer)
            return meta, report
        keep = self.runtime.keep_bodies()
        silent = silent_provider(plan.context, actions)
        note = f"; {silent_note(silent)}" if silent else ""
        if settings.repair:
            try:
                repaired = outcome.sent if outcome.sent is not None else jsoncodec.dumps_request(outcome.doc)
            except jsoncodec.NotWritable as e:
                report.skip(f"request body {e}; forwarded unrepaired")
                return meta, report
            if keep:  # so a flow file shows what the client sent, not only what was sent on
                meta["original_request"] = body
            compat.set_content(request, repaired)
            flow.marked = REPAIR_MARKER
            report.comment = "llm repaired: " + outcome.tally.describe() + note
            report.recovered = recovered_before(flow, scope.host, caller.url(), wire_format.name, outcome.fresh)
        # Repair off too: an error answer is then explained with what the proxy would have done.
        report.plan = plan
        if keep:
            meta["repairs"] = [action.describe() for action in actions]
        meta["repaired"] = settings.repair
        logged = self._sort_for_log(str(scope), settings.repair, outcome.fresh)
        logged.count_again(outcome.earlier_by_kind)
        # Said once the answer is in (Runtime.say_when_answered): read now what later addons or turns may change.
        events, cache_hits = self.runtime.events, len(plan.cache.found)

        def say_repaired() -> None:
            url = caller.url()  # of the request as the hook saw it
            events.write(
                Repaired(
                    flow_id=flow.id,
                    host=scope.host,
                    url=redact_url(url),
                    wire_format=wire_format.name,
                    applied=settings.repair,
                    cache_hits=cache_hits,
                    actions=loggable_actions(logged.new, settings.log_opaque),
                    again=logged.again,
                    again_by_kind=logged.again_by_kind,
                    total=logged.total,
                    silent_provider=silent,
                )
            )
            verb = "repaired" if settings.repair else "would repair (llm_repair=false)"
            logger.info("llm %s %s: %s%s", verb, redact_url(url), logged.summary(), note)

        report.repaired, report.repaired_at_once = say_repaired, keep
        return meta, report

    def _read_whole(self, report: RequestReport, reading: Reading, body: bytes, restore: bool) -> Outcome | None:
        """The outcome of a request read whole (None: nothing to do, or it cannot be read), remembered for the next
        turn; `restore`: the body may need reasoning put back (WireFormat.may_need_repair)."""
        wire_format, request, meta = reading.wire_format, reading.request, report.meta
        assert meta is not None
        try:
            doc = jsoncodec.loads_exact(body)
        except ValueError as e:
            meta["request_model"] = request_model(wire_format, request.path, body, None)
            report.skip(f"request body is {jsoncodec.why_not_read(e)}; forwarded unchanged")
            return None
        model = meta["request_model"] = request_model(wire_format, request.path, body, doc)
        plan = reading.plan(doc, model, restore=restore)
        tally = ActionTally().add(plan.actions)
        sent = remember_whole(self.runtime.history, reading, body, doc, model, plan, tally) if restore else None
        return Outcome(model, plan, sent.data if sent is not None else None, tally, plan.actions, doc=doc)

    def _hold_back(self, report: RequestReport, plan: RepairPlan, signer: str) -> None:
        """A request that needs repair but whose body a signature covers goes on byte for byte, saying what the
        proxy would have done and how the client can let it."""
        reason = (
            f"request signed with {signer}, which covers its body: forwarded byte for byte, unrepaired; the proxy "
            f"would have {summarize_actions(plan.actions)}; {SIGNED_REMEDY}"
        )
        report.skip(reason)
        report.comment = f"llm not repaired: {reason}"
        assert report.meta is not None
        report.meta.update(repaired=False, signed=signer)
        report.plan = plan  # an error answer is explained with what would have been done

    def _sort_for_log(self, scope: str, applied: bool, actions: list[RepairAction]) -> repair_log.SortedRepairs:
        """The repairs new to the event log, and the count of those it listed on earlier turns."""
        if self._logged is None or self._logged_to is not self.runtime.events:  # a log opened afresh lists anew
            self._logged, self._logged_to = repair_log.RepairMemory(), self.runtime.events
        return self._logged.sort(scope, applied, actions)


def recovered_before(
    flow: http.HTTPFlow, host: str, url: str, wire_format: str, actions: list[RepairAction]
) -> Recovered | None:
    """The `recovered` event of a request changed before sending to the closest form its provider accepts (None: it
    was not). A turn read from where the last one ended never holds one: a recovered turn is read whole."""
    recovered = [action for action in actions if action.kind == "recovered"]
    if not recovered:
        return None
    rules = ", ".join(dict.fromkeys(action.rule for action in recovered if action.rule))
    return Recovered(
        flow_id=flow.id,
        host=host,
        url=redact_url(url),
        wire_format=wire_format,
        how="before",
        rule=rules or "unknown",
        removed=recovered_places(recovered),
    )


def unrecovered_note(violation: Violation) -> str:
    """What the proxy says of a rule a request still breaks that no form the provider accepts is known for."""
    return (
        f"llm_recover: no form the provider is known to accept stands in for {violation.rule} at "
        f"{violation.describe()}; sent as it is"
    )
