"""A SQLite cache filled with many captured turns at once, as a proxy that ran for months leaves it: for the tests
and the benchmark of pruning (tests/test_cache_upkeep.py, tests/test_e2e_faults.py, scripts/load)."""

from __future__ import annotations

import json
from pathlib import Path

from llm_reasoning_proxy.cache import CacheLimits, SQLiteStore

SCOPE = "filler.invalid:443|cred:0123abcd"  # a scope no test or benchmark request is in
_BATCH = 50_000  # rows per transaction: memory stays small for a million


def fill_cache(path: Path, count: int, *, stored_at: float, record_bytes: int = 64) -> None:
    """Adds `count` captured turns (three keys each, each with an origin), stored from `stored_at` on, a microsecond
    apart; each record holds about `record_bytes` of reasoning."""
    store = SQLiteStore(path, CacheLimits(max_age=1e12, max_entries=10**12), clock=lambda: stored_at)
    raw = json.dumps({"wire_format": "chat_completions", "fields": {"reasoning_content": "x" * record_bytes}})
    db = store._db
    try:
        first = (db.execute("SELECT max(id) FROM records").fetchone()[0] or 0) + 1
        for start in range(first, first + count, _BATCH):
            ids = range(start, min(start + _BATCH, first + count))
            db.execute("BEGIN")
            db.executemany(
                "INSERT INTO records (id, record, stored_at, scope) VALUES (?, ?, ?, ?)",
                ((n, raw, stored_at + (n - first) / 1e6, SCOPE) for n in ids),
            )
            db.executemany(
                "INSERT INTO record_keys (scope, key, record_id) VALUES (?, ?, ?)",
                ((SCOPE, f"k{n}-{k}", n) for n in ids for k in range(3)),
            )
            db.executemany(
                "INSERT INTO origins (digest, origin, stored_at) VALUES (?, 'filler.invalid|m', ?)",
                ((f"d{n}", stored_at + (n - first) / 1e6) for n in ids),
            )
            db.execute("COMMIT")
    finally:
        store.close()
