"""How often the SQLite and Redis stores prune while they run: once every so many writes, so that their age and
count limits hold without every write paying for a prune."""

from __future__ import annotations

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
