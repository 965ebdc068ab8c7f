"""Keeps the cache within its age and count limits while the proxy runs, one short step at a time.

A step drops at most PRUNE_STEP records and reads only what it drops (the stores' prune), so it takes about the same
few milliseconds whatever the size of the cache. The SQLite store's steps (and its WAL checkpoints, which copy and
sync megabytes) run in a thread of their own, on a connection of their own: the event loop goes on serving
meanwhile. Steps follow each other quickly while each finds a whole step's worth to drop (a cache opened far over its
limit, or one filling fast), and once a second otherwise: a proxy started on a file of a million entries listens at
once and brings it to its limit while it serves.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from ..cache import StoreUnavailable
from ..shared.limits import PRUNE_STEP
from ..shared.redact import masked_logger, redact_text
from .runtime import Runtime

logger = masked_logger(__name__)
PAUSE = 1.0  # seconds between steps once the cache is within its limits
CATCH_UP_PAUSE = 0.02  # seconds between steps while each drops all it may


class CacheUpkeep:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._task: asyncio.Task | None = None
        self._thread: ThreadPoolExecutor | None = None
        self._failing: str | None = None  # the error of the last step, said once until a step succeeds

    def running(self) -> None:
        try:
            self._task = asyncio.get_running_loop().create_task(self._tend())
        except RuntimeError:  # no event loop (mitmproxy's test context): nothing runs between requests
            self._task = None

    def done(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._thread is not None:
            self._thread.shutdown(wait=False)  # a step under way ends by itself; the store's close waits for it
            self._thread = None

    async def _tend(self) -> None:
        while True:
            await asyncio.sleep(await self.step())

    async def step(self) -> float:
        """Takes one step of pruning; returns the seconds to wait before the next."""
        store = self.runtime.store
        if store is None:
            return PAUSE
        try:
            if store.prunes_in_a_thread:
                if self._thread is None:
                    self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llm-cache-upkeep")
                removed = await asyncio.get_running_loop().run_in_executor(self._thread, store.prune)
            else:
                removed = store.prune()
        except StoreUnavailable:  # Redis is down: its store said so once already
            return PAUSE
        except Exception as e:  # a full disk, a locked file: the entries stay until a later step succeeds
            error = redact_text(f"{type(e).__name__}: {e}")
            if error != self._failing:
                logger.warning(
                    "llm cache: pruning %s failed, tried again every %g s: %s", store.description, PAUSE, error
                )
            self._failing = error
            return PAUSE
        self._failing = None
        return CATCH_UP_PAUSE if removed >= PRUNE_STEP else PAUSE
