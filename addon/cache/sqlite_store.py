"""The default cache: one SQLite file that several proxy processes share.

WAL mode lets readers and one writer work at once across processes, and a
transaction that committed survives the proxy being killed (SIGKILL) because it
is already in the WAL file; only a power loss could drop the newest commits.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from .. import jsoncodec
from ..records import ReasoningRecord
from .base import CacheLimits, StoreError

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reasoning (
    scope     TEXT NOT NULL,
    key       TEXT NOT NULL,
    record    TEXT NOT NULL,
    stored_at REAL NOT NULL,
    PRIMARY KEY (scope, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS reasoning_stored_at ON reasoning (stored_at);
"""
_KEYS_PER_QUERY = 500
_PRUNE_EVERY = 256  # puts between two prunes


def _create_private(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


class SQLiteStore:
    def __init__(self, path: Path, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.description = f"sqlite:{path}"
        self._limits = limits
        self._clock = clock
        self._puts = 0
        try:
            _create_private(path)
            # SQLite gives the -wal and -shm files the database file's permissions.
            self._db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cache {path}: SQLite refused WAL mode (got {mode!r})")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the reasoning cache at {path}: {e}") from e
        self.prune()

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        oldest = self._clock() - self._limits.max_age
        found: dict[str, ReasoningRecord] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _KEYS_PER_QUERY):
            batch = unique[start : start + _KEYS_PER_QUERY]
            rows = self._db.execute(
                f"SELECT key, record FROM reasoning WHERE scope = ? AND stored_at >= ? "
                f"AND key IN ({','.join('?' * len(batch))})",
                (scope, oldest, *batch),
            )
            for key, raw in rows:
                try:
                    found[key] = ReasoningRecord.model_validate(jsoncodec.loads(raw))
                except (ValueError, ValidationError):
                    logger.warning("llm cache: ignoring unreadable entry for tool call %s", key)
        return found

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None:
        if not keys:
            return
        # Not model_dump_json(): it refuses lone surrogates, which a provider can send.
        raw = jsoncodec.dumps(record.model_dump()).decode()
        now = self._clock()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO reasoning (scope, key, record, stored_at) VALUES (?, ?, ?, ?)",
                [(scope, key, raw, now) for key in keys],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._puts += 1
        if self._puts % _PRUNE_EVERY == 0:
            self.prune()

    def delete(self, scope: str, keys: Sequence[str]) -> int:
        removed = 0
        for key in dict.fromkeys(keys):
            removed += self._db.execute("DELETE FROM reasoning WHERE scope = ? AND key = ?", (scope, key)).rowcount
        return removed

    def prune(self) -> int:
        oldest = self._clock() - self._limits.max_age
        removed = self._db.execute("DELETE FROM reasoning WHERE stored_at < ?", (oldest,)).rowcount
        removed += self._db.execute(
            "DELETE FROM reasoning WHERE (scope, key) IN "
            "(SELECT scope, key FROM reasoning ORDER BY stored_at DESC LIMIT -1 OFFSET ?)",
            (self._limits.max_entries,),
        ).rowcount
        return removed

    def close(self) -> None:
        self._db.close()
