"""What the addon leaves on a flow: metadata for tools, a comment and marker for people."""

from __future__ import annotations

from typing import Any

from mitmproxy import http

from ..events import EventLog, Skipped
from ..formats import WireFormat
from ..limits import MAX_OUTPUT_LINE_CHARS, bounded_name, cut_text
from ..redact import masked_logger, redact_text, redact_url
from .failopen import fail_open

logger = masked_logger(__name__)

# flow.metadata[META] is a plain dict (flow files must be able to serialise it).
META = "llm"
REPAIR_MARKER = ":wrench:"
# Where a request that needed nothing holds what writes the rest of its entry (whose request it is, the model), run
# once the request is on its way (RequestRepair): never when flows are kept, so no flow file ever holds it.
PENDING = "pending"


def flow_meta(flow: http.HTTPFlow) -> dict[str, Any] | None:
    """The addon's entry on a flow, whole: None for a flow that is not LLM traffic."""
    meta = flow.metadata.get(META)
    if not isinstance(meta, dict):
        return None
    if PENDING in meta:  # asked for before the request hook's deferred part ran
        try:
            complete_meta(meta)
        except Exception as e:  # the flow goes on as one the request hook failed on (it took the entry off)
            fail_open(flow.id, "request", None, e)
            return None
    return meta


def complete_meta(meta: dict[str, Any]) -> None:
    """Writes the rest of an entry, if any is still to write."""
    pending = meta.pop(PENDING, None)
    if pending is not None:
        pending()


def request_model(wire_format: WireFormat, path: str, body: bytes, doc: Any | None) -> str | None:
    """The model a request is for, as the proxy keeps it: a name past MAX_NAME_CHARS (a client's or an attacker's)
    is cut and made unique by its hash, since it is logged and stored with every value of the answer."""
    return bounded_name(wire_format.request_model(path, body, doc))


def add_comment(flow: http.HTTPFlow, line: str) -> None:
    line = cut_text(redact_text(line), MAX_OUTPUT_LINE_CHARS)
    flow.comment = f"{flow.comment}\n{line}" if flow.comment else line


def report_skip(flow: http.HTTPFlow, reason: str, events: EventLog) -> None:
    """Says, in mitmproxy's output and in the event log, why a flow was left alone."""
    url = redact_url(flow.request.url)
    logger.info("llm skipped %s: %s", url, reason)
    events.write(Skipped(flow_id=flow.id, url=url, reason=reason))
