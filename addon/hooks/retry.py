"""The addon that sends a request once more after a provider refused it for its reasoning state (llm_recover).

The proxy repairs what it captured; what it never saw (a session begun before the proxy was in the path, a cache entry
expired, a value corrupted on the way, a rule nobody documented) the provider refuses, and the 400 ends the user's
session. Production gateways answer such a refusal by sending the request once more without the refused values
(magpie, grok2api, nguyenphutrong/quotio PR #218: strip and retry), and so does this: for a 4xx the diagnosis
(hooks/explain.py, which runs first) names as a reasoning-state rule, the wire format takes the refused state out and
puts the request in the closest form the provider accepts (`WireFormat.recover`), and the client gets the second
answer instead of the first.

The second request goes upstream the way mitmproxy's own client replay sends one (`ReplayHandler`): through every
addon, in every proxy mode, with the upstream TLS options; it is a flow of its own (in a flow file, in mitmweb),
marked as a replay. Its answer is held until it is whole, then handed to the client: mitmproxy has already read the
first answer by the time it is known to be refused, so the second can only replace it, not be streamed in its place.
"""

from __future__ import annotations

from typing import Any

from mitmproxy import ctx, http
from mitmproxy.addons.clientplayback import ReplayHandler

from .. import wire as formats
from ..diagnosis.matching import RULES
from ..request.signing import body_signer
from ..shared import compat, jsoncodec
from ..shared.events import Recovered
from ..shared.failopen import FailOpen
from ..shared.flow_meta import RETRY_OF, flow_meta
from ..shared.headers import listed_values
from ..shared.limits import MAX_DECODED_BYTES, cut_text
from ..shared.records import RepairAction, place_index, recovered_places
from ..shared.redact import masked_logger, redact_url
from ..wire import RepairContext, WireFormat
from ..wire.content_encoding import message_body
from .annotate import report_recovered
from .runtime import Runtime

logger = masked_logger(__name__)

# Never sent again: the credential, the quota or the provider itself is at fault, not the reasoning state.
_NOT_RETRIED = frozenset({401, 403, 429})
# Kinds of diagnosis a value the request holds is at fault for: it is taken out of the second request.
_REFUSED_VALUE = frozenset({"invalid", "foreign", "not_found", "duplicate", "orphaned"})
_RETRIED_KINDS = _REFUSED_VALUE | {"missing"}
_ERROR_CHARS = 1000  # of the provider's first text, in the event


class _Retry(ReplayHandler):
    """mitmproxy's client replay of one request, sent to the server the refused request went to (in reverse mode the
    request names the proxy, not the provider) under the same TLS server name."""

    def __init__(self, flow: http.HTTPFlow, sent_to: Any, options: Any) -> None:
        super().__init__(flow, options)
        if sent_to.address is not None:
            server = self.layer.context.server
            server.address, server.tls, server.sni = sent_to.address, sent_to.tls, sent_to.sni


def refused_places(kind: str, location: str | None) -> list[int] | None:
    """The items whose reasoning state the second request goes without (`WireFormat.recover`): the one the error
    names, or every item for a refused value it names no place of. A missing value the proxy's own check did not
    foresee (or the repair would have sent what is accepted in its place) follows a rule it does not know: the
    request goes without any reasoning state, in the form the provider accepts for none (thinking off)."""
    if kind not in _REFUSED_VALUE:
        return None
    index = place_index(location)
    return [index] if index is not None else None


def retry_body(
    wire_format: WireFormat, body: bytes, context: RepairContext, refused: list[int] | None
) -> tuple[bytes, list[RepairAction]] | None:
    """The request body to send again, and what was taken out or turned off; None when the format knows no form the
    provider accepts (or the body is not JSON)."""
    try:
        doc = jsoncodec.loads_exact(body)
    except ValueError:
        return None
    actions = [action for action in wire_format.recover(doc, context, refused) if action.kind == "recovered"]
    if not actions:
        return None
    return jsoncodec.dumps_request(doc), actions


class RefusalRetry:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def response(self, flow: http.HTTPFlow) -> None:
        retry = None
        with FailOpen(flow.id, "retry after refusal", self.runtime.events):
            retry = self._retry_of(flow)
        if retry is None:
            return
        again, recovered = retry
        try:
            await _Retry(again, flow.server_conn, ctx.options).replay()
        except Exception as e:  # noqa: BLE001 - the client gets the first answer, as without the retry
            logger.warning("llm could not send %s again: %r; the client gets the first answer", recovered.url, e)
            return
        with FailOpen(flow.id, "retry after refusal", self.runtime.events):
            self._answer(flow, again, recovered)

    def _retry_of(self, flow: http.HTTPFlow) -> tuple[http.HTTPFlow, Recovered] | None:
        """The second request of a refused one, and what it recovers; None when the refusal is not the kind sent
        again, or nothing the provider accepts is known."""
        response, settings = flow.response, self.runtime.settings
        if response is None or response.status_code < 400 or response.status_code >= 500:
            return None
        if not flow.live:  # read from a file (`mitmdump -r`): shown and explained, never sent to the provider again
            return None
        if settings is None or not settings.recover or not settings.repair or RETRY_OF in flow.metadata:
            return None
        meta = flow_meta(flow)
        diagnosis = meta.get("diagnosis") if meta is not None else None
        if meta is None or not isinstance(diagnosis, dict) or response.status_code in _NOT_RETRIED:
            return None
        rule = diagnosis.get("rule")
        kind = RULES.get(rule, ("unknown", None))[0] if isinstance(rule, str) else "unknown"
        if kind not in _RETRIED_KINDS or "recovered" in meta or callable(response.stream):
            return None  # a request changed before sending is not sent again
        request = flow.request
        url = redact_url(request.url)
        if body_signer(request) is not None:
            logger.info("llm not sending %s again: a signature covers its body", url)
            return None
        wire_format = formats.by_name(meta["format"])
        context = RepairContext(
            path=request.path,
            model=meta.get("request_model"),
            host=request.pretty_host.lower(),
            placeholder=settings.signature_placeholder,
            betas=listed_values(request.headers, b"anthropic-beta"),
        )
        refused = refused_places(kind, diagnosis.get("location"))
        made = retry_body(wire_format, message_body(request, MAX_DECODED_BYTES), context, refused)
        if made is None:
            logger.info("llm not sending %s again: no form %s accepts without that reasoning is known", url, rule)
            return None
        body, actions = made
        again = http.HTTPFlow(flow.client_conn.copy(), flow.server_conn.copy())
        again.request = request.copy()
        compat.set_content(again.request, body)
        again.metadata[RETRY_OF] = flow.id
        again.is_replay = "request"
        first_error = diagnosis.get("message")
        recovered = Recovered(
            flow_id=flow.id,
            host=meta.get("host", request.pretty_host),
            url=url,
            wire_format=wire_format.name,
            how="retry",
            rule=rule,
            removed=recovered_places(actions),
            first_status=response.status_code,
            first_error=cut_text(first_error, _ERROR_CHARS) if isinstance(first_error, str) else None,
        )
        return again, recovered

    def _answer(self, flow: http.HTTPFlow, again: http.HTTPFlow, recovered: Recovered) -> None:
        """Hands the client the second answer, and says so; the first stays if no second came."""
        if again.response is None:
            why = again.error.msg if again.error is not None else "no answer"
            logger.warning("llm sent %s again, but %s: the client gets the first answer", recovered.url, why)
            return
        meta = flow_meta(flow)
        assert meta is not None
        recovered.status = again.response.status_code
        flow.response = again.response
        flow.response.stream = False  # held whole: the capture's tap on it is done
        report_recovered(flow, meta, self.runtime.events, recovered)
