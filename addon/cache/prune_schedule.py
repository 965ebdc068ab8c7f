"""How the stores prune while the proxy runs: in steps of at most PRUNE_STEP records (and as many origins), so
that no step holds the event loop for long whatever the size of the cache (addon/hooks/upkeep.py takes them)."""

from __future__ import annotations

PRUNE_STEP = 64  # records dropped at most by one step: 2 to 3 ms in a file of 400,000
PRUNE_EVERY = 256  # writes between two prunes


class PruneSchedule:
    """Counts a store's writes (records and origins alike)."""

    def __init__(self, every: int = PRUNE_EVERY) -> None:
        self._every = every
        self._writes = 0

    def wrote(self) -> bool:
        """Counts one write; whether the store should prune now."""
        self._writes += 1
        return self._writes % self._every == 0
