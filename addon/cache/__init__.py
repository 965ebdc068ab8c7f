"""Where reasoning state is kept between a response and the next request."""

from __future__ import annotations

from pathlib import Path

from ..shared.settings import REDIS_SCHEMES
from .base import CacheLimits, ReasoningStore, StoreError, StoreUnavailable
from .memory_store import MemoryStore
from .redis_store import RedisStore
from .sqlite_store import SQLiteStore


def open_store(spec: str, limits: CacheLimits) -> ReasoningStore:
    """Opens the backend named by the `llm_cache` option; raises StoreError."""
    if spec == "memory":
        return MemoryStore(limits)
    if spec.startswith(REDIS_SCHEMES):
        return RedisStore(spec, limits)
    return SQLiteStore(Path(spec).expanduser(), limits)


__all__ = [
    "CacheLimits",
    "MemoryStore",
    "ReasoningStore",
    "RedisStore",
    "SQLiteStore",
    "StoreError",
    "StoreUnavailable",
    "open_store",
]
