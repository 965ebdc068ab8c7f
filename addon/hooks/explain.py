"""The addon that explains an LLM provider's 4xx answers, and forgets reasoning a provider refused.

For every 4xx on LLM traffic it gathers what the error and the request were, what the repair did and what the cache
can say, hands them to the explanation (addon/diagnosis/explanation.py), which decides what the error is about and
what to do, then applies what it decided: the cache entries whose values the provider refused are dropped, so one bad
value does not break every later turn. The explanation is reported once: in the log, as the flow's comment, in the
flow's metadata and as an event.
"""

from __future__ import annotations

from typing import Any

from mitmproxy import http

from .. import wire as formats
from ..answer.provenance import Origin, foreign_lookup
from ..cache import StoreUnavailable
from ..diagnosis.explanation import CacheReads, ErrorResponse, Explanation, SentRequest, explain
from ..shared import jsoncodec
from ..shared.events import Diagnosed
from ..shared.failopen import FailOpen
from ..shared.flow_meta import flow_meta
from ..shared.limits import MAX_DECODED_BYTES, MAX_ERROR_BODY_BYTES
from ..shared.redact import masked_logger, redact_url
from ..wire.content_encoding import message_body, message_prefix
from .annotate import add_comment
from .runtime import Runtime

logger = masked_logger(__name__)


def _parsed(request: http.Request) -> Any:
    """A request's JSON body, decoded within the bound, or None."""
    try:
        return jsoncodec.loads(message_body(request, MAX_DECODED_BYTES))
    except ValueError:  # not JSON, or not decodable within the bound
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
        """Gathers what the error and the request were, has the explanation decide, applies it, and reports it."""
        assert flow.response is not None and self.runtime.settings is not None
        request, store, scope = flow.request, self.runtime.store, meta.get("scope", "")
        # Error texts are a few KB: the start of the answer is all that is read of it.
        error = ErrorResponse(
            flow.response.status_code, message_prefix(flow.response, MAX_ERROR_BODY_BYTES), redact_url(request.url)
        )
        repaired = meta.get("repaired") is True
        original = meta.get("original_request") if repaired else None
        sent = SentRequest(
            host=request.pretty_host.lower(),
            path=request.path,
            model=meta.get("request_model"),
            repaired=repaired,
            signed=meta.get("signed"),
            client_body=original if isinstance(original, bytes) else None,
            by_content=meta.get("by_content", True),
        )
        doc = _parsed(request)
        reads = None
        if store is not None:
            reads = CacheReads(lambda keys: store.get_many(scope, keys), foreign_lookup(store, Origin.of(meta)))
        plan = self.runtime.recall_plan(flow.id)
        settings = self.runtime.settings
        explanation = explain(error, formats.by_name(meta["format"]), doc, sent, plan, reads, settings)
        explanation = explanation.forgotten(self._forget(scope, explanation.forget))
        self._report(flow, meta, explanation)

    def _forget(self, scope: str, entries: list[tuple[str, ...]]) -> int:
        """Drops the cache entries whose values the provider refused; how many went."""
        store = self.runtime.store
        if store is None or not entries:
            return 0
        try:
            removed = sum(1 for keys in entries if store.delete(scope, keys))
        except StoreUnavailable as e:
            logger.warning("llm could not drop the cache entries the provider refused: %s", e)
            return 0
        if removed:
            logger.warning("llm dropped %d cache entr%s the provider refused", removed, "y" if removed == 1 else "ies")
        return removed

    def _report(self, flow: http.HTTPFlow, meta: dict[str, Any], explanation: Explanation) -> None:
        line = explanation.line
        logger.warning(line)
        add_comment(flow, line)
        meta["diagnosis"] = explanation.noted()
        diagnosis = explanation.diagnosis
        self.runtime.events.write(
            Diagnosed(
                flow_id=flow.id,
                host=meta["host"],
                url=explanation.url,
                wire_format=explanation.wire_format,
                status=explanation.status,
                rule=diagnosis.rule,
                summary=diagnosis.summary,
                problem=explanation.problem,
                field=diagnosis.field,
                provider=diagnosis.provider,
                location=explanation.location,
                tool_call_ids=explanation.tool_call_ids,
                item_ids=explanation.item_ids,
                function=explanation.function,
                cache_had=explanation.cache_had,
                repaired=explanation.repaired,
                healed=explanation.healed,
                findings=explanation.findings,
                cause=diagnosis.cause,
                advice=explanation.advice,
                message=diagnosis.message,
            )
        )
