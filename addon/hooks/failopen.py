"""Any error inside a hook leaves the flow as it was and says so in one line."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ..events import EventLog, Failure
from ..redact import masked_logger, redact_text

logger = masked_logger(__name__)


@contextmanager
def fail_open(flow_id: str, stage: str, events: EventLog | None) -> Iterator[None]:
    try:
        yield
    except Exception as e:
        error = redact_text(f"{type(e).__name__}: {e}")
        logger.warning("llm-reasoning-proxy: %s failed on flow %s, forwarded unchanged: %s", stage, flow_id, error)
        if events is not None:
            events.write(Failure(flow_id=flow_id, stage=stage, error=error))
