"""What the addon leaves on a flow: metadata for tools, a comment and marker for people."""

from __future__ import annotations

from mitmproxy import http

from ..shared.events import EventLog, Recovered, Skipped
from ..shared.limits import MAX_OUTPUT_LINE_CHARS, cut_text
from ..shared.redact import masked_logger, redact_text, redact_url

logger = masked_logger(__name__)

REPAIR_MARKER = ":wrench:"
RECOVER_MARKER = ":adhesive_bandage:"  # sent on without reasoning the proxy could not put back (llm_recover)


def add_comment(flow: http.HTTPFlow, line: str) -> None:
    line = cut_text(redact_text(line), MAX_OUTPUT_LINE_CHARS)
    flow.comment = f"{flow.comment}\n{line}" if flow.comment else line


def report_skip(flow: http.HTTPFlow, reason: str, events: EventLog) -> None:
    """Says, in mitmproxy's output and in the event log, why a flow was left alone."""
    url = redact_url(flow.request.url)
    logger.info("llm skipped %s: %s", url, reason)
    events.write(Skipped(flow_id=flow.id, url=url, reason=reason))


def report_recovered(flow: http.HTTPFlow, meta: dict, events: EventLog, recovered: Recovered) -> None:
    """Says that a request was sent on in the form the provider accepts, without reasoning the proxy could not put
    back: one line in mitmproxy's output, the event, the flow's entry, comment and marker."""
    line = f"llm recovered {recovered.url}: {recovered.summary()}"
    logger.warning(line)
    events.write(recovered)
    meta["recovered"] = recovered.model_dump(include={"how", "rule", "removed", "first_status", "first_error"})
    add_comment(flow, line)
    flow.marked = RECOVER_MARKER
