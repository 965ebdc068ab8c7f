"""The addon's entry on a flow (`flow.metadata["llm"]`): what the hooks leave there and every reader of a flow asks."""

from __future__ import annotations

from typing import Any

from mitmproxy import http

from .events import recovery_summary
from .failopen import fail_open

# flow.metadata[META] is a plain dict (flow files must be able to serialise it).
META = "llm"
# Where a request that needed nothing holds what writes the rest of its entry (whose request it is, the model), run
# once the request is on its way (RequestRepair): never when flows are kept, so no flow file ever holds it.
PENDING = "pending"
# flow.metadata[RETRY_OF] names the flow a request is the second sending of (hooks/retry.py): it goes on as it is,
# never repaired or sent again, and its answer is held whole for that flow's client.
RETRY_OF = "llm_retry_of"


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


def recovered_of(flow: http.HTTPFlow) -> str | None:
    """What the proxy did to let the flow's request go on without reasoning it could not put back (hooks/retry.py,
    `llm_recover`), for a person; None if nothing."""
    meta = flow.metadata.get(META)
    entry = meta.get("recovered") if isinstance(meta, dict) else None
    if not isinstance(entry, dict):
        return None
    removed = entry.get("removed")
    return recovery_summary(
        str(entry.get("how")),
        str(entry.get("rule")),
        [str(place) for place in removed] if isinstance(removed, list) else [],
        entry.get("first_status") if isinstance(entry.get("first_status"), int) else None,
    )


def complete_meta(meta: dict[str, Any]) -> None:
    """Writes the rest of an entry, if any is still to write."""
    pending = meta.pop(PENDING, None)
    if pending is not None:
        pending()
