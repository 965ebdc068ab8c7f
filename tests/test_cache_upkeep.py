"""Pruning the cache while the proxy runs: the SQLite schema keeps records and keys together and counts its rows,
so that a prune step reads only what it drops, and the upkeep addon takes such steps between requests."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from pathlib import Path

import pytest
from llm_reasoning_proxy.cache import CacheLimits, SQLiteStore, StoreUnavailable
from llm_reasoning_proxy.hooks.upkeep import CATCH_UP_PAUSE, PAUSE, CacheUpkeep
from llm_reasoning_proxy.shared.limits import PRUNE_STEP
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef

from tests.support.cache_fill import fill_cache

DAY = 86400.0
SCOPE = "api.openai.com:443|cred:0123abcd"
NOW = 1_700_000_000.0


def record(n: int) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="chat_completions", fields={"reasoning_opaque": f"opaque-{n}"}, tool_calls=[ToolCallRef(id=f"c{n}")]
    )


def rows(store: SQLiteStore, table: str) -> int:
    return store._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def tally(store: SQLiteStore, table: str) -> int:
    return store._db.execute("SELECT count FROM tallies WHERE name = ?", (table,)).fetchone()[0]


def fill(path: Path, count: int, *, stored_at: float = NOW) -> None:
    fill_cache(path, count, stored_at=stored_at)


@pytest.fixture
def store(tmp_path: Path):
    opened = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1000), clock=lambda: NOW)
    yield opened
    opened.close()


def test_a_record_goes_once_no_key_leads_to_it(store: SQLiteStore) -> None:
    store.put(SCOPE, ["a", "b"], record(1))
    store.put(SCOPE, ["a"], record(2))
    assert rows(store, "records") == 2  # "b" still leads to the first
    store.put(SCOPE, ["b", "c"], record(3))
    assert rows(store, "records") == 2 and store.get_many(SCOPE, ["a", "b", "c"]) == {
        "a": record(2),
        "b": record(3),
        "c": record(3),
    }
    store.delete(SCOPE, ["a"])
    assert rows(store, "records") == 1
    assert rows(store, "records") == tally(store, "records") and rows(store, "record_keys") == 2


def test_the_tallies_follow_every_write(store: SQLiteStore) -> None:
    for n in range(50):
        store.put(SCOPE, [f"k{n % 7}", f"j{n % 11}"], record(n))
        store.put_origins("h|m", [f"d{n % 13}"])
        if n % 5 == 0:
            store.delete(SCOPE, [f"k{n % 3}"])
    store.prune()
    assert (tally(store, "records"), tally(store, "origins")) == (rows(store, "records"), rows(store, "origins"))
    orphans = "SELECT count(*) FROM records WHERE id NOT IN (SELECT record_id FROM record_keys)"
    strays = "SELECT count(*) FROM record_keys WHERE record_id NOT IN (SELECT id FROM records)"
    assert store._db.execute(orphans).fetchone() == (0,) and store._db.execute(strays).fetchone() == (0,)


def test_a_step_drops_at_most_its_share_oldest_first(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", 1000)
    store = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=400), clock=lambda: NOW)
    try:
        assert rows(store, "records") == 1000  # opening it drops nothing
        assert [store.prune(most=256) for _ in range(4)] == [256, 256, 88, 0]
        assert rows(store, "records") == tally(store, "records") == 400
        assert rows(store, "origins") == tally(store, "origins") == 400
        kept = [n for (n,) in store._db.execute("SELECT id FROM records ORDER BY id")]
        assert kept == list(range(601, 1001))
        assert rows(store, "record_keys") == 1200
    finally:
        store.close()


def test_records_past_their_age_go_first(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", 300, stored_at=NOW - 2 * DAY)
    fill(tmp_path / "c.db", 10)
    store = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1000), clock=lambda: NOW)
    try:
        assert store.prune(most=256) == 256 and store.prune(most=256) == 44 and store.prune(most=256) == 0
        assert rows(store, "records") == rows(store, "origins") == 10
    finally:
        store.close()


def steps_of_work(store: SQLiteStore) -> int:
    """SQLite's virtual machine steps (in thousands) taken by one prune step."""
    counted = [0]

    def count() -> int:
        counted[0] += 1
        return 0

    store._db.set_progress_handler(count, 1000)
    try:
        assert store.prune() == PRUNE_STEP
    finally:
        store._db.set_progress_handler(None, 1000)
    return counted[0]


@pytest.mark.slow
def test_a_step_costs_the_same_whatever_the_size_of_the_cache(tmp_path: Path) -> None:
    """The work of a step is what it drops, not what the file holds: ten times the entries cost no more."""
    work = []
    for size in (4_000, 40_000):
        path = tmp_path / f"{size}.db"
        fill(path, size)
        store = SQLiteStore(path, CacheLimits(max_age=DAY, max_entries=1_000), clock=lambda: NOW)
        try:
            work.append(steps_of_work(store))
        finally:
            store.close()
    assert work[1] <= 1.5 * work[0] + 5, work


def test_a_cache_of_schema_4_is_kept_counted_and_never_handed_out(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT NOT NULL, stored_at REAL NOT NULL);
            CREATE INDEX records_stored_at ON records (stored_at);
            CREATE TABLE record_keys (scope TEXT NOT NULL, key TEXT NOT NULL, record_id INTEGER NOT NULL,
                PRIMARY KEY (scope, key)) WITHOUT ROWID;
            CREATE INDEX record_keys_record ON record_keys (record_id);
            CREATE TABLE origins (digest TEXT NOT NULL, origin TEXT NOT NULL, stored_at REAL NOT NULL,
                PRIMARY KEY (digest, origin)) WITHOUT ROWID;
            CREATE INDEX origins_stored_at ON origins (stored_at);
            PRAGMA user_version = 4;
            """
        )
    with sqlite3.connect(path) as db:  # a record as version 4 stored it
        raw = '{"wire_format": "chat_completions", "fields": {"reasoning_opaque": "kept"}, "tool_calls": []}'
        db.execute("INSERT INTO records (record, stored_at) VALUES (?, ?)", (raw, NOW))
        db.execute("INSERT INTO record_keys VALUES (?, 'a', 1)", (SCOPE,))
        db.execute("INSERT INTO origins VALUES ('d', 'h|m', ?)", (NOW,))
    store = SQLiteStore(path, CacheLimits(max_age=DAY, max_entries=1000), clock=lambda: NOW)
    try:
        # Kept and counted, but with no scope on file it is never handed out (one miss for its conversation).
        assert store.get_many(SCOPE, ["a"]) == {}
        assert (tally(store, "records"), tally(store, "origins")) == (1, 1)
        assert store._db.execute("PRAGMA user_version").fetchone() == (5,)
        store.put(SCOPE, ["a"], record(2))  # moves the key: the old record goes with its last key
        assert rows(store, "records") == tally(store, "records") == 1
    finally:
        store.close()


class StepStore:
    description = "sqlite:/somewhere"
    prunes_in_a_thread = False

    def __init__(self, *outcomes: int | Exception) -> None:
        self.outcomes = list(outcomes)

    def prune(self) -> int:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


def upkeep_of(store: StepStore) -> CacheUpkeep:
    runtime = type("RuntimeStub", (), {"store": store})()
    return CacheUpkeep(runtime)


async def test_steps_follow_quickly_while_each_drops_all_it_may() -> None:
    upkeep = upkeep_of(StepStore(PRUNE_STEP, PRUNE_STEP, 3, 0))
    assert [await upkeep.step() for _ in range(4)] == [CATCH_UP_PAUSE, CATCH_UP_PAUSE, PAUSE, PAUSE]


async def test_a_failing_step_is_said_once_until_one_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    full = sqlite3.OperationalError("database or disk is full")
    upkeep = upkeep_of(StepStore(full, full, StoreUnavailable("down"), 0, full))
    with caplog.at_level(logging.WARNING):
        assert [await upkeep.step() for _ in range(5)] == [PAUSE] * 5
    failures = [r.getMessage() for r in caplog.records if "pruning" in r.getMessage()]
    assert (
        failures
        == [
            "llm cache: pruning sqlite:/somewhere failed, tried again every 1 s: OperationalError: database or disk is full"
        ]
        * 2
    )


async def test_sqlite_steps_run_in_a_thread_of_their_own_while_lookups_go_on(store: SQLiteStore) -> None:
    """The step's commit is another connection's to the store: what keys led to is forgotten, and the store's own
    connection never runs a prune."""
    store.put(SCOPE, ["a"], record(1))
    assert store.get_many(SCOPE, ["a"]) == {"a": record(1)}
    ran: list[str] = []
    store._db.set_trace_callback(ran.append)
    upkeep = upkeep_of(store)
    try:
        store._limits = CacheLimits(max_age=DAY, max_entries=0)
        assert await upkeep.step() == PAUSE
    finally:
        upkeep.done()
    assert store.get_many(SCOPE, ["a"]) == {}
    assert not [statement for statement in ran if "DELETE" in statement or "checkpoint" in statement]


def test_a_step_after_the_store_closed_does_nothing(tmp_path: Path) -> None:
    fill(tmp_path / "c.db", 10)
    closed = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1), clock=lambda: NOW)
    closed.close()
    assert closed.prune() == 0
    reopened = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1), clock=lambda: NOW)
    try:
        assert rows(reopened, "records") == 10
    finally:
        reopened.close()


def test_a_file_an_older_proxy_opened_since_opens_again(tmp_path: Path) -> None:
    """A proxy of schema 4 sharing the file writes version 4 back over the tables of 5: the next proxy of 5 opens it
    as it is, counting its rows once more."""
    fill(tmp_path / "c.db", 5)
    with contextlib.closing(sqlite3.connect(tmp_path / "c.db")) as db:
        db.execute("PRAGMA user_version = 4")
        db.execute("UPDATE tallies SET count = 0")  # whatever it left there
    store = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1000), clock=lambda: NOW)
    try:
        assert (tally(store, "records"), tally(store, "origins")) == (5, 5)
        assert store._db.execute("PRAGMA user_version").fetchone() == (5,)
    finally:
        store.close()


def test_opening_a_file_of_this_schema_counts_no_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(tmp_path / "c.db", 5)
    ran: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(ran.append)
        return connection

    monkeypatch.setattr(sqlite3, "connect", traced)
    SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=1000), clock=lambda: NOW).close()
    assert ran and not [statement for statement in ran if "count(*)" in statement]
