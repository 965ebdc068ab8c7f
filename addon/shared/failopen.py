"""Any error inside a hook leaves the flow as it was and says so in one line."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import TracebackType

from .events import EventLog, Failure
from .redact import masked_logger, redact_text

logger = masked_logger(__name__)


class FailOpen:
    """Swallows an exception raised inside it, after saying where it happened.

    A class, not a generator-based context manager: it wraps every LLM request's hooks on the way to the first
    event, where contextlib's generator machinery is work the client waits for."""

    __slots__ = ("flow_id", "stage", "events")

    def __init__(self, flow_id: str, stage: str, events: EventLog | None) -> None:
        self.flow_id = flow_id
        self.stage = stage
        self.events = events

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, e: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if e is None or not isinstance(e, Exception):
            return False  # nothing raised, or what must go on (KeyboardInterrupt, SystemExit)
        fail_open(self.flow_id, self.stage, self.events, e)
        return True


def fail_open(flow_id: str, stage: str, events: EventLog | None, e: Exception) -> None:
    """Says that `stage` failed on a flow, which goes on unchanged: what FailOpen does with what it swallows, for a
    hook that catches it itself."""
    error = redact_text(f"{type(e).__name__}: {e}")
    logger.warning("llm-reasoning-proxy: %s failed on flow %s, forwarded unchanged: %s", stage, flow_id, error)
    if events is not None:
        events.write(Failure(flow_id=flow_id, stage=stage, error=error))


def after_sending(flow_id: str, stage: str, events: EventLog | None, work: Callable[[], None]) -> None:
    """Runs `work` on the event loop's next turn, after mitmproxy sent on the message whose hook asks for it (at
    once without a running loop), failing open as FailOpen does: for what the message need not wait for, such as
    the lines that say what was done to it."""

    def run() -> None:
        with FailOpen(flow_id, stage, events):
            work()

    try:
        asyncio.get_running_loop().call_soon(run)
    except RuntimeError:
        run()
