"""Where reasoning state is kept between a response and the next request."""

from __future__ import annotations

from pathlib import Path

from .base import CacheLimits, ReasoningStore, StoreError
from .memory_store import MemoryStore
from .sqlite_store import SQLiteStore


def open_store(spec: str, limits: CacheLimits) -> ReasoningStore:
    """Opens the backend named by the `llm_cache` option; raises StoreError."""
    if spec == "memory":
        return MemoryStore(limits)
    return SQLiteStore(Path(spec).expanduser(), limits)


__all__ = ["CacheLimits", "MemoryStore", "ReasoningStore", "SQLiteStore", "StoreError", "open_store"]
