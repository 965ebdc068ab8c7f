"""Unit tests for addon/cache: the memory and SQLite reasoning stores."""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_reasoning_proxy.cache import CacheLimits, MemoryStore, RedisStore, SQLiteStore, StoreError, open_store
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.shared.sizes import record_size

from tests.support.file_locks import dms_holders, record_locks
from tests.support.redis_server import RedisServer

REPO = Path(__file__).resolve().parents[1]
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = str(VENV_PYTHON) if VENV_PYTHON.exists() else sys.executable

DAY = 86400.0
MiB = 1 << 20
LIMITS = CacheLimits(max_age=DAY, max_entries=1000)
SCOPE = "api.openai.com|cred:0123abcd"
OTHER_SCOPE = "api.openai.com|cred:ffff9999"


class FakeClock:
    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def make_record(n: int = 1, **overrides) -> ReasoningRecord:
    values = dict(
        wire_format="openai-chat",
        fields={
            "reasoning_opaque": f"QUJD{n}REVG+/==",
            "reasoning_text": f"Thinking about step {n}: café, 日本, emoji \U0001f600",
            "nested": {"list": [1, 2.5, None, True, "x"], "n": n},
        },
        tool_calls=[
            ToolCallRef(id=f"call_{n}a", name="get_weather", arguments='{"city": "Paris"}'),
            ToolCallRef(id=f"call_{n}b", name="search", arguments=""),
        ],
        response_id=f"chatcmpl-{n}",
        request_model="gpt-5",
        response_model="gpt-5-2025-08-07",
        complete=True,
        captured_at=1_700_000_000.25,
    )
    values.update(overrides)
    return ReasoningRecord(**values)


@pytest.fixture(params=["memory", "sqlite", "redis"])
def backend(request, tmp_path):
    """A factory (limits, clock) -> store for each backend; stores are closed afterwards."""
    opened = []
    if request.param == "redis":
        server = request.getfixturevalue("redis_server")
        with server.client() as admin:
            admin.flushdb()

    def make(limits: CacheLimits = LIMITS, clock: FakeClock | None = None):
        clock = clock or FakeClock()
        if request.param == "memory":
            store = MemoryStore(limits, clock=clock)
        elif request.param == "redis":
            store = RedisStore(server.url(), limits, clock=clock)
        else:
            store = SQLiteStore(tmp_path / "cache.db", limits, clock=clock)
        opened.append(store)
        return store

    make.kind = request.param
    yield make
    for store in opened:
        store.close()


# --------------------------------------------------------------------------------------
# both backends


def test_round_trip_under_several_keys(backend):
    store = backend()
    record = make_record(1)
    store.put(SCOPE, ["call_1a", "call_1b", "call_1c"], record)
    found = store.get_many(SCOPE, ["call_1a", "call_1b", "call_1c", "call_unknown"])
    assert found == {"call_1a": record, "call_1b": record, "call_1c": record}
    got = found["call_1b"]
    assert got.wire_format == "openai-chat"
    assert got.fields == record.fields
    assert got.tool_calls == [
        ToolCallRef(id="call_1a", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCallRef(id="call_1b", name="search", arguments=""),
    ]
    assert got.response_id == "chatcmpl-1"
    assert got.captured_at == 1_700_000_000.25
    assert got.tool_call_ids == ["call_1a", "call_1b"]


def test_minimal_record_round_trip(backend):
    store = backend()
    record = ReasoningRecord(wire_format="anthropic", fields={})
    store.put(SCOPE, ["k"], record)
    assert store.get_many(SCOPE, ["k"]) == {"k": record}


def test_get_many_empty_and_unknown(backend):
    store = backend()
    assert store.get_many(SCOPE, []) == {}
    assert store.get_many(SCOPE, ["nope"]) == {}


def test_get_many_with_duplicate_keys(backend):
    store = backend()
    record = make_record()
    store.put(SCOPE, ["a"], record)
    assert store.get_many(SCOPE, ["a", "a", "b", "a"]) == {"a": record}


def test_put_with_no_keys_stores_nothing(backend):
    store = backend()
    store.put(SCOPE, [], make_record())
    assert store.get_many(SCOPE, [""]) == {}
    assert store.prune() == 0


def test_put_replaces_existing_entry(backend):
    store = backend()
    store.put(SCOPE, ["a", "b"], make_record(1))
    store.put(SCOPE, ["a"], make_record(2))
    assert store.get_many(SCOPE, ["a", "b"]) == {"a": make_record(2), "b": make_record(1)}


def test_scope_isolation(backend):
    store = backend()
    store.put(SCOPE, ["call_1"], make_record(1))
    assert store.get_many(OTHER_SCOPE, ["call_1"]) == {}
    store.put(OTHER_SCOPE, ["call_1"], make_record(2))
    assert store.get_many(SCOPE, ["call_1"]) == {"call_1": make_record(1)}
    assert store.get_many(OTHER_SCOPE, ["call_1"]) == {"call_1": make_record(2)}


def test_expiry_with_fake_clock(backend):
    clock = FakeClock(1000.0)
    store = backend(CacheLimits(max_age=100.0, max_entries=1000), clock)
    store.put(SCOPE, ["old"], make_record(1))
    clock.now = 1050.0
    store.put(SCOPE, ["new"], make_record(2))

    clock.now = 1100.0  # "old" is exactly max_age old: still usable
    assert store.get_many(SCOPE, ["old", "new"]) == {"old": make_record(1), "new": make_record(2)}

    clock.now = 1100.5
    assert store.get_many(SCOPE, ["old", "new"]) == {"new": make_record(2)}
    assert store.prune() == 1
    assert store.prune() == 0

    clock.now = 1000.0  # even with the clock back, a pruned entry is gone
    assert store.get_many(SCOPE, ["old", "new"]) == {"new": make_record(2)}

    clock.now = 1151.0
    assert store.get_many(SCOPE, ["new"]) == {}
    assert store.prune() == 1


def test_prune_counts_captured_turns_not_keys(backend):
    clock = FakeClock(0.0)
    store = backend(CacheLimits(max_age=10.0, max_entries=1000), clock)
    store.put(SCOPE, ["a", "b", "c"], make_record())
    store.put(OTHER_SCOPE, ["a"], make_record())
    clock.now = 11.0
    assert store.prune() == 2
    assert store.get_many(SCOPE, ["a", "b", "c"]) == {} and store.get_many(OTHER_SCOPE, ["a"]) == {}


def test_count_bound(backend):
    clock = FakeClock(1000.0)
    store = backend(CacheLimits(max_age=DAY, max_entries=3), clock)
    keys = [f"call_{i}" for i in range(5)]
    for i, key in enumerate(keys):
        clock.now = 1000.0 + i
        store.put(SCOPE, [key], make_record(i))
    removed = store.prune()
    assert removed == (0 if backend.kind == "memory" else 2)  # memory evicts on put
    assert store.get_many(SCOPE, keys) == {f"call_{i}": make_record(i) for i in (2, 3, 4)}


def test_memory_store_evicts_oldest_on_put():
    clock = FakeClock(1000.0)
    store = MemoryStore(CacheLimits(max_age=DAY, max_entries=3), clock=clock)
    for i in range(3):
        clock.now += 1
        store.put(SCOPE, [f"k{i}"], make_record(i))
    clock.now += 1
    store.put(SCOPE, ["k0"], make_record(9))  # re-putting makes k0 the newest
    clock.now += 1
    store.put(SCOPE, ["k3"], make_record(3))
    assert store.get_many(SCOPE, ["k0", "k1", "k2", "k3"]) == {
        "k0": make_record(9),
        "k2": make_record(2),
        "k3": make_record(3),
    }
    store.put(SCOPE, ["m1", "m2", "m3", "m4"], make_record(4))  # one turn, four keys: one entry
    assert store.get_many(SCOPE, ["k0", "k2", "k3", "m1", "m2", "m3", "m4"]) == {
        "k0": make_record(9),
        "k3": make_record(3),
        **{key: make_record(4) for key in ("m1", "m2", "m3", "m4")},
    }


def test_sqlite_count_bound_applies_across_scopes(tmp_path):
    clock = FakeClock(1000.0)
    store = SQLiteStore(tmp_path / "c.db", CacheLimits(max_age=DAY, max_entries=2), clock=clock)
    for i, scope in enumerate([SCOPE, OTHER_SCOPE, SCOPE]):
        clock.now = 1000.0 + i
        store.put(scope, [f"k{i}"], make_record(i))
    assert store.prune() == 1
    assert store.get_many(SCOPE, ["k0", "k2"]) == {"k2": make_record(2)}
    assert store.get_many(OTHER_SCOPE, ["k1"]) == {"k1": make_record(1)}
    store.close()


def test_delete(backend):
    store = backend()
    store.put(SCOPE, ["a", "b", "c"], make_record())
    store.put(OTHER_SCOPE, ["a"], make_record(2))
    assert store.delete(SCOPE, ["a", "b", "missing"]) == 2
    assert store.get_many(SCOPE, ["a", "b", "c"]) == {"c": make_record()}
    assert store.get_many(OTHER_SCOPE, ["a"]) == {"a": make_record(2)}
    assert store.delete(SCOPE, ["a"]) == 0
    assert store.delete(SCOPE, ["c", "c"]) == 1
    assert store.delete(SCOPE, []) == 0
    assert store.get_many(SCOPE, ["c"]) == {}


def test_many_keys_in_one_call(backend):
    store = backend(CacheLimits(max_age=DAY, max_entries=5000))
    keys = [f"call_{i:04d}" for i in range(1203)]  # more than one SQL batch
    store.put(SCOPE, keys, make_record())
    found = store.get_many(SCOPE, keys + ["other"])
    assert sorted(found) == keys
    assert store.delete(SCOPE, keys[:700]) == 700
    assert sorted(store.get_many(SCOPE, keys)) == keys[700:]


def test_record_with_lone_surrogate(backend):
    # Streamed deltas can each carry half of a surrogate pair ("\ud83d" then "\ude00");
    # joined as Python strings they stay two lone surrogates in the record's fields.
    # The store must take such a record; what comes back must mean the same in JSON, the
    # only form a provider ever sees (a pair of surrogate escapes is the character they encode).
    store = backend()
    record = make_record(fields={"reasoning_content": "smile \ud83d\ude00 lone \udc80 done"})
    store.put(SCOPE, ["call_s"], record)
    found = store.get_many(SCOPE, ["call_s"])["call_s"]
    as_json = lambda fields: json.loads(json.dumps(fields))  # noqa: E731
    assert as_json(found.fields) == as_json(record.fields)
    assert found.tool_call_ids == record.tool_call_ids


# --------------------------------------------------------------------------------------
# open_store


def test_open_store_memory():
    store = open_store("memory", LIMITS)
    assert isinstance(store, MemoryStore)
    assert store.description == "memory"
    store.close()


def test_open_store_sqlite(tmp_path):
    path = tmp_path / "sub" / "cache.db"
    store = open_store(str(path), LIMITS)
    assert isinstance(store, SQLiteStore)
    assert store.description == f"sqlite:{path}"
    assert path.is_file()
    store.close()


def test_open_store_expands_home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    store = open_store("~/state/cache.db", LIMITS)
    assert store.description == f"sqlite:{tmp_path / 'state' / 'cache.db'}"
    assert (tmp_path / "state" / "cache.db").is_file()
    store.close()


# --------------------------------------------------------------------------------------
# SQLite specifics


def test_sqlite_file_is_private_and_wal(tmp_path):
    path = tmp_path / "state" / "cache.db"
    store = SQLiteStore(path, LIMITS)
    store.put(SCOPE, ["a"], make_record())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    wal = path.with_name("cache.db-wal")
    assert wal.exists()
    assert stat.S_IMODE(wal.stat().st_mode) == 0o600
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    store.close()


def test_sqlite_existing_parent_is_left_alone(tmp_path):
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    SQLiteStore(folder / "c.db", LIMITS).close()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert stat.S_IMODE((folder / "c.db").stat().st_mode) == 0o600


def test_sqlite_files_left_with_another_mode_become_owner_only(tmp_path):
    path = tmp_path / "cache.db"
    SQLiteStore(path, LIMITS).close()
    companions = [tmp_path / "cache.db-wal", tmp_path / "cache.db-shm"]
    for name in (path, *companions):
        name.touch()
        os.chmod(name, 0o644)  # as another tool, or an older version, may have left them
    store = SQLiteStore(path, LIMITS)
    store.put(SCOPE, ["a"], make_record())
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in (path, *companions)} == {
        "cache.db": "0o600",
        "cache.db-wal": "0o600",
        "cache.db-shm": "0o600",
    }
    store.close()


@pytest.mark.parametrize("linked", ["cache.db", "cache.db-wal", "cache.db-shm"])
def test_sqlite_never_writes_through_a_link(tmp_path, linked):
    target = tmp_path / "elsewhere"
    target.write_bytes(b"someone else's file")
    (tmp_path / linked).symlink_to(target)
    with pytest.raises(StoreError, match="symbolic link"):
        SQLiteStore(tmp_path / "cache.db", LIMITS)
    assert target.read_bytes() == b"someone else's file"


def test_sqlite_persists_across_reopen(tmp_path):
    path = tmp_path / "c.db"
    store = SQLiteStore(path, LIMITS)
    store.put(SCOPE, ["a", "b"], make_record(5))
    store.close()
    again = SQLiteStore(path, LIMITS)
    assert again.get_many(SCOPE, ["a", "b"]) == {"a": make_record(5), "b": make_record(5)}
    again.close()


def test_sqlite_two_instances_share_one_file(tmp_path):
    path = tmp_path / "c.db"
    first = SQLiteStore(path, LIMITS)
    second = SQLiteStore(path, LIMITS)
    first.put(SCOPE, ["from_first"], make_record(1))
    assert second.get_many(SCOPE, ["from_first"]) == {"from_first": make_record(1)}
    second.put(SCOPE, ["from_second"], make_record(2))
    assert first.get_many(SCOPE, ["from_second"]) == {"from_second": make_record(2)}
    assert second.delete(SCOPE, ["from_first"]) == 1
    assert first.get_many(SCOPE, ["from_first"]) == {}
    first.close()
    second.close()


def test_sqlite_remembered_keys_follow_other_processes(tmp_path):
    """Each store remembers where keys led; a write by another connection must end that, hits and misses alike."""
    path = tmp_path / "c.db"
    first = SQLiteStore(path, LIMITS)
    second = SQLiteStore(path, LIMITS)
    assert first.get_many(SCOPE, ["later"]) == {}  # remembered as leading nowhere
    second.put(SCOPE, ["later"], make_record(1))
    assert first.get_many(SCOPE, ["later"]) == {"later": make_record(1)}
    second.put(SCOPE, ["later"], make_record(2))  # the same key captured again
    assert first.get_many(SCOPE, ["later"]) == {"later": make_record(2)}
    first.delete(SCOPE, ["later"])
    assert first.get_many(SCOPE, ["later"]) == {} and second.get_many(SCOPE, ["later"]) == {}
    first.put(SCOPE, ["mine"], make_record(3))
    assert first.get_many(SCOPE, ["mine"]) == {"mine": make_record(3)}
    first.close()
    second.close()


@pytest.fixture
def two_stores(tmp_path: Path) -> Iterator[tuple[SQLiteStore, SQLiteStore]]:
    """Two stores on one file, as two proxy processes share it."""
    first, second = SQLiteStore(tmp_path / "c.db", LIMITS), SQLiteStore(tmp_path / "c.db", LIMITS)
    yield first, second
    first.close()
    second.close()


def _statements(store: SQLiteStore) -> list[str]:
    """The statements the store's connection runs from now on."""
    ran: list[str] = []
    store._db.set_trace_callback(ran.append)
    return ran


def test_sqlite_asks_data_version_only_after_a_commit(two_stores):
    """A lookup with nothing committed since the last one is answered from memory; one after another connection's
    commit asks SQLite and sees it."""
    first, second = two_stores
    assert first.get_many(SCOPE, ["later"]) == {}
    ran = _statements(first)
    assert first.get_many(SCOPE, ["later"]) == {} and first.get_origins(["d"]) == {}
    assert [statement for statement in ran if "data_version" in statement] == []
    second.put(SCOPE, ["later"], make_record(1))
    assert first.get_many(SCOPE, ["later"]) == {"later": make_record(1)}
    assert any("data_version" in statement for statement in ran)
    first.put(SCOPE, ["mine"], make_record(2))  # its own commit: it looks once, then, not on the next lookup
    ran.clear()
    assert first.get_many(SCOPE, ["mine", "later"]) == {"mine": make_record(2), "later": make_record(1)}
    assert ran == []


def test_sqlite_without_a_readable_wal_header_asks_every_time(two_stores):
    first, second = two_stores
    first._wal.close()  # as where the -shm file cannot be read
    assert first._wal.current() is None
    assert first.get_many(SCOPE, ["later"]) == {}
    second.put(SCOPE, ["later"], make_record(1))
    assert first.get_many(SCOPE, ["later"]) == {"later": make_record(1)}
    second.delete(SCOPE, ["later"])
    assert first.get_many(SCOPE, ["later"]) == {}


def test_wal_header_changes_with_every_commit_of_another_connection(two_stores):
    reader, writer = two_stores
    seen = {reader._wal.current()}
    assert reader._wal.current() == reader._wal.current()
    for n in range(40):
        if n % 2:
            writer.put(SCOPE, [f"k{n}"], make_record(n))
        else:
            writer.put_origins(ORIGIN_X, [f"d{n}"])
        header = reader._wal.current()
        assert header not in seen
        seen.add(header)
    writer._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL starts again from its first frame
    writer.put(SCOPE, ["after"], make_record(99))
    assert reader._wal.current() not in seen
    assert reader.get_many(SCOPE, ["after"]) == {"after": make_record(99)}


def test_sqlite_store_keeps_sqlites_lock_on_the_shm_file(two_stores):
    """Reading the WAL-index header never drops the shared lock by which SQLite tells other processes the database is
    in use: without it, the next process to open the file rebuilds the -shm under this one."""
    first, second = two_stores
    database = first.path
    assert first._wal.current() is not None
    assert dms_holders(database) == {os.getpid()}
    first.close()  # the other store's connection still holds the database, and with it the lock
    assert dms_holders(database) == {os.getpid()}
    second.put(SCOPE, ["k"], make_record(1))
    assert second._wal.current() is not None and dms_holders(database) == {os.getpid()}


def test_sqlite_store_on_a_file_another_store_holds_keeps_its_locks(tmp_path):
    """Opening a second store on a file this process already has open touches no descriptor of the first's."""
    first = SQLiteStore(tmp_path / "c.db", LIMITS)
    try:
        locks = set(record_locks(tmp_path / "c.db"))
        assert locks
        SQLiteStore(tmp_path / "c.db", LIMITS).close()
        assert set(record_locks(tmp_path / "c.db")) == locks
        assert dms_holders(tmp_path / "c.db") == {os.getpid()}
    finally:
        first.close()


def test_sqlite_origins_written_are_remembered_with_those_on_file(two_stores):
    """The next request that sends a value back finds its origins without reading the file, the other
    processes' included."""
    first, second = two_stores
    second.put_origins(ORIGIN_Y, ["d"])
    first.put_origins(ORIGIN_X, ["d", "e"])
    ran = _statements(first)
    assert first.get_origins(["d", "e"]) == {"d": {ORIGIN_X, ORIGIN_Y}, "e": {ORIGIN_X}}
    assert ran == []


CHILD_PRELUDE = """
import sys, time
from pathlib import Path
from llm_reasoning_proxy.cache import CacheLimits, SQLiteStore
from llm_reasoning_proxy.shared.records import ReasoningRecord, ToolCallRef
from llm_reasoning_proxy.shared.sizes import record_size

store = SQLiteStore(Path(sys.argv[1]), CacheLimits(max_age=86400.0, max_entries=1000))

def record(i):
    return ReasoningRecord(
        wire_format="openai-chat",
        fields={"reasoning_opaque": f"opaque-{i}"},
        tool_calls=[ToolCallRef(id=f"call_{i}", name="f", arguments="{}")],
        response_id=f"resp-{i}",
    )
"""


def expected_child_record(i: int) -> ReasoningRecord:
    return ReasoningRecord(
        wire_format="openai-chat",
        fields={"reasoning_opaque": f"opaque-{i}"},
        tool_calls=[ToolCallRef(id=f"call_{i}", name="f", arguments="{}")],
        response_id=f"resp-{i}",
    )


@pytest.mark.slow
def test_sqlite_write_from_another_process(tmp_path):
    path = tmp_path / "c.db"
    store = SQLiteStore(path, LIMITS)  # opened first, kept open while the child writes
    script = CHILD_PRELUDE + "store.put('scope-x', ['call_7'], record(7))\nstore.close()\n"
    result = subprocess.run([PYTHON, "-c", script, str(path)], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert store.get_many("scope-x", ["call_7"]) == {"call_7": expected_child_record(7)}
    store.close()


@pytest.mark.slow
def test_sqlite_survives_sigkill(tmp_path):
    path = tmp_path / "c.db"
    script = CHILD_PRELUDE + textwrap.dedent(
        """
        for i in range(50):
            store.put("scope-k", [f"call_{i}"], record(i))
        print("done", flush=True)
        time.sleep(60)
        """
    )
    child = subprocess.Popen(
        [PYTHON, "-c", script, str(path)], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = child.stdout.readline()
        assert line == "done\n", child.stderr.read() if child.poll() is not None else line
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
        child.stderr.close()

    store = SQLiteStore(path, LIMITS)
    keys = [f"call_{i}" for i in range(50)]
    assert store.get_many("scope-k", keys) == {f"call_{i}": expected_child_record(i) for i in range(50)}
    store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert db.execute("SELECT count(*) FROM records").fetchone() == (50,)


def test_sqlite_unusable_parent_raises_store_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    path = blocker / "sub" / "cache.db"
    with pytest.raises(StoreError) as info:
        SQLiteStore(path, LIMITS)
    assert str(path) in str(info.value)


def test_sqlite_directory_as_path_raises_store_error(tmp_path):
    with pytest.raises(StoreError) as info:
        SQLiteStore(tmp_path, LIMITS)
    assert str(tmp_path) in str(info.value)


def test_sqlite_not_a_database_raises_store_error(tmp_path):
    path = tmp_path / "c.db"
    path.write_bytes(b"this is not an sqlite database file, just text " * 100)
    with pytest.raises(StoreError) as info:
        SQLiteStore(path, LIMITS)
    assert str(path) in str(info.value)


def test_open_store_error_for_bad_path(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="a-file"):
        open_store(str(blocker / "cache.db"), LIMITS)


@pytest.mark.parametrize(
    "corrupt",
    ["{not json", '{"wire_format": 1}', "null", "", b"\xff\xfe\x00"],
    ids=["invalid-json", "wrong-shape", "null", "empty", "binary"],
)
def test_sqlite_corrupted_row_is_skipped(tmp_path, corrupt, caplog):
    path = tmp_path / "c.db"
    store = SQLiteStore(path, LIMITS)
    store.put(SCOPE, ["bad"], make_record())
    store.put(SCOPE, ["good"], make_record())
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE records SET record = ? WHERE id = (SELECT record_id FROM record_keys WHERE key = 'bad')", (corrupt,)
        )
    store = SQLiteStore(path, LIMITS)  # a process that has not read these entries yet
    with caplog.at_level("WARNING", logger="llm_reasoning_proxy.cache"):
        assert store.get_many(SCOPE, ["bad", "good"]) == {"good": make_record()}
    assert "bad" in caplog.text
    store.close()


# --------------------------------------------------------------------------------------
# Redis: one cache for many proxies


def test_redis_two_stores_share_one_database(redis_server):
    with redis_server.client() as admin:
        admin.flushdb()
    first, second = RedisStore(redis_server.url(), LIMITS), RedisStore(redis_server.url(), LIMITS)
    first.put(SCOPE, ["from_first"], make_record(1))
    assert second.get_many(SCOPE, ["from_first"]) == {"from_first": make_record(1)}
    assert second.get_many(OTHER_SCOPE, ["from_first"]) == {}
    assert second.delete(SCOPE, ["from_first"]) == 1
    assert first.get_many(SCOPE, ["from_first"]) == {}  # even though first has the record in memory
    first.close()
    second.close()


def test_redis_expires_entries_itself(redis_server):
    with redis_server.client() as admin:
        admin.flushdb()
        store = RedisStore(redis_server.url(), CacheLimits(max_age=3600.0, max_entries=10))
        store.put(SCOPE, ["call_ttl"], make_record(1))
        names = [name.decode() for name in admin.keys("llm-reasoning-proxy:*")]
        expiring = [name for name in names if ":key:" in name or ":record:" in name]
        assert expiring and all(0 < admin.ttl(name) <= 3600 for name in expiring)
        assert f"llm-reasoning-proxy:v2:key:{SCOPE}|call_ttl" in names
    store.close()


def test_redis_count_bound_drops_keys_for_every_process(redis_server):
    with redis_server.client() as admin:
        admin.flushdb()
    clock = FakeClock()
    limits = CacheLimits(max_age=DAY, max_entries=2)
    writer, reader = (RedisStore(redis_server.url(), limits, clock=clock) for _ in range(2))
    for n in range(4):
        clock.now += 1
        writer.put(SCOPE, [f"k{n}"], make_record(n))
    assert reader.get_many(SCOPE, ["k0", "k1", "k2", "k3"]).keys() == {"k0", "k1", "k2", "k3"}
    assert writer.prune() == 2
    assert reader.get_many(SCOPE, ["k0", "k1", "k2", "k3"]).keys() == {"k2", "k3"}
    writer.close()
    reader.close()


def test_redis_record_ids_are_never_handed_out_again_once_redis_forgot_them(redis_server):
    """A Redis restarted without its data, or evicting under maxmemory, forgets whatever counted ids: a process that
    still holds the record an id named must never meet that id again for another record."""
    with redis_server.client() as admin:
        admin.flushdb()
        store = RedisStore(redis_server.url(), LIMITS)
        store.put(SCOPE, ["before"], make_record(1))
        before = set(admin.keys("*record:*"))
        admin.flushdb()
        store.put(OTHER_SCOPE, ["after"], make_record(2))
        after = set(admin.keys("*record:*"))
    assert before and after and not before & after
    store.close()


def test_redis_hands_out_a_record_only_for_the_scope_stored_with_it(redis_server):
    """Whatever leads to it, from Redis or from a process's memory: here a key of one scope made (by hand) to lead to
    another scope's record."""
    from llm_reasoning_proxy.cache.redis_store import _key_name

    with redis_server.client() as admin:
        admin.flushdb()
        writer, reader = RedisStore(redis_server.url(), LIMITS), RedisStore(redis_server.url(), LIMITS)
        writer.put(OTHER_SCOPE, ["theirs"], make_record(1))
        assert reader.get_many(OTHER_SCOPE, ["theirs"]) == {"theirs": make_record(1)}  # remembered by both now
        admin.set(_key_name(SCOPE, "mine"), admin.get(_key_name(OTHER_SCOPE, "theirs")))
    for store in (writer, reader, RedisStore(redis_server.url(), LIMITS)):  # the last has not read it yet
        assert store.get_many(SCOPE, ["mine"]) == {}
        assert store.get_many(OTHER_SCOPE, ["theirs"]) == {"theirs": make_record(1)}
        store.close()


def test_remembered_records_serve_only_the_scope_they_were_stored_under():
    from llm_reasoning_proxy.cache.remembered import RememberedRecords

    remembered = RememberedRecords()
    remembered.add(7, 100.0, make_record(1), SCOPE)
    assert remembered.split([7], 0.0, SCOPE) == ({7: make_record(1)}, [])
    assert remembered.split([7], 0.0, OTHER_SCOPE) == ({}, [7])  # read afresh: the store handed the id out again
    assert remembered.split([7], 200.0, SCOPE) == ({}, [])  # too old


def test_redis_outage_fails_fast_and_recovers(tmp_path, caplog, monkeypatch):
    """Down: every call raises StoreUnavailable, and during the pause without touching Redis (logged once);
    back: the first call after the pause works."""
    from types import SimpleNamespace

    from llm_reasoning_proxy.cache import StoreUnavailable, redis_store

    # The store times its pause with the module's time.monotonic: a clock the test moves, not the machine's speed.
    now = [1000.0]
    monkeypatch.setattr(redis_store, "time", SimpleNamespace(monotonic=lambda: now[0], time=time.time))
    server = RedisServer(tmp_path).start()
    store = RedisStore(server.url(), LIMITS)
    attempts = []  # every command the store sends takes a connection from the pool first
    pool = store._redis.connection_pool
    get_connection = pool.get_connection

    def counted(*args, **kwargs):
        attempts.append(args)
        return get_connection(*args, **kwargs)

    monkeypatch.setattr(pool, "get_connection", counted)
    store.put(SCOPE, ["before"], make_record(1))
    assert attempts
    server.stop()
    caplog.set_level("WARNING", logger="llm_reasoning_proxy.cache.redis_store")
    attempts.clear()
    with pytest.raises(StoreUnavailable, match="unavailable"):
        store.get_many(SCOPE, ["before"])
    assert attempts  # this one tried, and failed at once: a refused connection
    attempts.clear()
    for _ in range(50):  # paused: no connection attempt at all
        with pytest.raises(StoreUnavailable):
            store.put(SCOPE, ["during"], make_record(2))
    server.start()
    now[0] += redis_store.FIRST_PAUSE / 2
    with pytest.raises(StoreUnavailable):  # back, but the pause is not over: still not tried
        store.get_many(SCOPE, ["before"])
    assert attempts == []
    now[0] += redis_store.FIRST_PAUSE / 2
    assert store.get_many(SCOPE, ["before"]) == {}  # a restarted Redis without persistence has forgotten
    assert attempts
    store.put(SCOPE, ["after"], make_record(3))
    assert store.get_many(SCOPE, ["after"]) == {"after": make_record(3)}
    messages = [record.getMessage() for record in caplog.records]
    assert sum("is unavailable" in m for m in messages) == 1 and sum("is back" in m for m in messages) == 1
    store.close()
    server.stop()


def test_a_redis_password_in_the_query_is_never_shown_either():
    from llm_reasoning_proxy.shared.redact import display_url

    shown = display_url("redis://user:pw1secret@cache.internal/0?password=hunter2")
    assert "hunter2" not in shown and "pw1secret" not in shown and "cache.internal/0" in shown


def test_redis_url_password_never_shown(redis_server):
    store = RedisStore(f"redis://:hunter2@127.0.0.1:{redis_server.port}/0", LIMITS)
    assert "hunter2" not in store.description and ":***@" in store.description
    store.close()


def test_redis_with_a_password(tmp_path):
    with RedisServer(tmp_path, password="s3cret-pw") as server:
        store = RedisStore(server.url(), LIMITS)
        store.put(SCOPE, ["call_1"], make_record())
        assert store.get_many(SCOPE, ["call_1"]) == {"call_1": make_record()}
        store.close()
        # A wrong password, or none, is bad configuration: refused at once, the password never in the message.
        for url in (server.url(password="wrong-pw"), server.url(password="")):
            with pytest.raises(StoreError, match="refused the credentials") as refused:
                RedisStore(url, LIMITS)
            assert "wrong-pw" not in str(refused.value) and "s3cret-pw" not in str(refused.value)


def test_parsed_records_are_remembered_within_a_byte_bound_too():
    from llm_reasoning_proxy.cache.remembered import RememberedRecords

    size = record_size(make_record())
    remembered = RememberedRecords(most=100, most_bytes=3 * size + size // 2)
    for record_id in range(10):
        remembered.add(record_id, 1.0, make_record())
    found, unread = remembered.split(range(10), 0.0)
    assert sorted(found) == [7, 8, 9] and sorted(unread) == list(range(7))  # the newest three
    remembered.add(9, 1.0, make_record())  # the same record again is not counted twice
    assert sorted(remembered.split(range(10), 0.0)[0]) == [7, 8, 9]


@pytest.mark.slow
def test_remembered_records_count_what_their_values_hold_parsed():
    """A record of nested lists holds some twenty times its stored bytes: it counts what it holds."""
    from llm_reasoning_proxy.cache.remembered import RememberedRecords

    dense = make_record(fields={"reasoning_details": [[] for _ in range(100_000)]})
    stored = len(json.dumps(dense.model_dump()))
    remembered = RememberedRecords(most=100, most_bytes=2 * MiB)
    tracemalloc.start()
    for record_id in range(8):
        copy = ReasoningRecord.model_validate(json.loads(json.dumps(dense.model_dump())))
        remembered.add(record_id, 1.0, copy)
        del copy
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert stored < 2 * MiB // 4  # four such records would fit a bound of their stored bytes
    assert held < 4 * MiB, held  # none is kept: each holds more than the bound on its own
    assert remembered.split(range(8), 0.0)[0] == {}


# ---------------------------------------------------------------------------------------------------------------
# origins: which host, account and model issued a value (addon/answer/provenance.py)

ORIGIN_X = '["api.anthropic.com:443|acct","claude-x"]'
ORIGIN_Y = '["api.anthropic.com:443|acct","claude-y"]'


def test_origins_round_trip_and_accumulate(backend):
    store = backend()
    assert store.get_origins([]) == {}
    assert store.get_origins(["d1"]) == {}
    store.put_origins(ORIGIN_X, ["d1", "d2", "d1"])
    assert store.get_origins(["d1", "d2", "d3"]) == {"d1": {ORIGIN_X}, "d2": {ORIGIN_X}}
    store.put_origins(ORIGIN_Y, ["d2"])
    assert store.get_origins(["d2"]) == {"d2": {ORIGIN_X, ORIGIN_Y}}


def test_origins_age_out(backend):
    clock = FakeClock()
    store = backend(clock=clock)
    store.put_origins(ORIGIN_X, ["old"])
    clock.now += DAY / 2
    store.put_origins(ORIGIN_X, ["new"])
    clock.now += DAY / 2 + 1
    assert store.get_origins(["old", "new"]) == {"new": {ORIGIN_X}}
    store.prune()
    assert store.get_origins(["old", "new"]) == {"new": {ORIGIN_X}}


def test_origins_are_bounded_in_count(backend):
    clock = FakeClock()
    store = backend(CacheLimits(max_age=DAY, max_entries=3), clock=clock)
    for n in range(6):
        clock.now += 1
        store.put_origins(ORIGIN_X, [f"d{n}"])
    store.prune()
    assert set(store.get_origins([f"d{n}" for n in range(6)])) == {"d3", "d4", "d5"}


def test_sqlite_origins_written_by_another_store_are_seen(tmp_path):
    first = SQLiteStore(tmp_path / "cache.db", LIMITS)
    second = SQLiteStore(tmp_path / "cache.db", LIMITS)
    try:
        assert second.get_origins(["d"]) == {}  # remembered as unknown ...
        first.put_origins(ORIGIN_X, ["d"])
        assert second.get_origins(["d"]) == {"d": {ORIGIN_X}}  # ... until the other process wrote
        second.put_origins(ORIGIN_Y, ["d"])
        assert first.get_origins(["d"]) == {"d": {ORIGIN_X, ORIGIN_Y}}
    finally:
        first.close()
        second.close()


def test_sqlite_reads_each_way_a_key_and_its_record_can_be_known_or_not(tmp_path):
    """Keys new to this store, known keys whose parsed records were let go of, records known under keys that are
    not: each way, the answer is what a store that never remembered anything would give."""
    path = tmp_path / "c.db"
    clock = FakeClock()
    writer = SQLiteStore(path, LIMITS, clock=clock)
    writer.put(SCOPE, ["old_a", "old_b"], make_record(1))
    clock.now += DAY - 10
    writer.put(SCOPE, ["new_a", "new_b", "new_c"], make_record(2))
    reader = SQLiteStore(path, LIMITS, clock=clock)  # opened while both are young: it prunes neither
    clock.now += 20  # record 1 is past its age now, record 2 is not
    keys = ["new_a", "new_b", "old_a", "missing", "new_c", "old_b"]
    expected = {"new_a": make_record(2), "new_b": make_record(2), "new_c": make_record(2)}
    assert reader.get_many(SCOPE, keys) == expected  # every key new to the reader
    assert reader.get_many(SCOPE, keys) == expected  # every key and record known
    reader._read.clear()  # the parsed records let go of, the keys still known
    assert reader.get_many(SCOPE, keys) == expected
    reader._keys.clear()  # the keys forgotten, the records still parsed
    assert reader.get_many(SCOPE, ["new_c", "old_a"]) == {"new_c": make_record(2)}
    assert reader.get_many(OTHER_SCOPE, keys) == {}
    writer.close()
    reader.close()


def test_a_prune_step_drops_at_most_its_share_oldest_first(backend):
    clock = FakeClock(1000.0)
    store = backend(CacheLimits(max_age=100.0, max_entries=1000), clock)
    for n in range(10):
        clock.now = 1000.0 + n
        store.put(SCOPE, [f"k{n}"], make_record(n))
        store.put_origins(ORIGIN_X, [f"d{n}"])
    clock.now = 1105.5  # the first six are past their age
    assert [store.prune(most=4) for _ in range(3)] == [4, 2, 0]
    assert store.get_many(SCOPE, [f"k{n}" for n in range(10)]) == {f"k{n}": make_record(n) for n in range(6, 10)}
    assert set(store.get_origins([f"d{n}" for n in range(10)])) == {f"d{n}" for n in range(6, 10)}


def test_sqlite_a_backup_restored_under_a_running_reader_hands_no_record_to_another_scope(tmp_path):
    """A record is handed out only for the scope stored with it, whatever happened to the file: here a backup taken
    when it was empty is restored into it (sqlite3's .restore) while another store remembers what it read."""
    path, empty = tmp_path / "c.db", tmp_path / "empty.db"
    reader, writer = SQLiteStore(path, LIMITS), SQLiteStore(path, LIMITS)
    try:
        with sqlite3.connect(empty) as backup:
            writer._db.backup(backup)
        writer.put(SCOPE, ["k"], make_record(1))
        assert reader.get_many(SCOPE, ["k"]) == {"k": make_record(1)}
        with sqlite3.connect(empty) as backup:
            backup.backup(writer._db)
        writer.put(OTHER_SCOPE, ["k"], make_record(2))
        assert reader.get_many(OTHER_SCOPE, ["k"]) == {"k": make_record(2)}
        assert reader.get_many(SCOPE, ["k"]) == {}
    finally:
        reader.close()
        writer.close()


def test_sqlite_remembers_where_long_keys_led_only_by_asking_again(tmp_path):
    """A client names the tool call ids it sends: lookups of ids of 100 KB leave nothing of them behind, and still
    find what they lead to."""
    store = SQLiteStore(tmp_path / "c.db", LIMITS)
    try:
        long_key = "call_" + "x" * 100_000
        store.put(SCOPE, [long_key], make_record(1))
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        for n in range(50):
            assert store.get_many(SCOPE, [f"{n}{long_key}"]) == {}
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        assert held < 1_000_000, held  # 50 keys of 100 KB would be 5 MB
        assert store.get_many(SCOPE, [long_key]) == {long_key: make_record(1)}
        store.delete(SCOPE, [long_key])
        assert store.get_many(SCOPE, [long_key]) == {}
    finally:
        store.close()


async def test_the_upkeep_prunes_every_store(backend):
    from types import SimpleNamespace

    from llm_reasoning_proxy.hooks.upkeep import PAUSE, CacheUpkeep

    clock = FakeClock(1000.0)
    store = backend(CacheLimits(max_age=100.0, max_entries=1000), clock)
    store.put(SCOPE, ["old"], make_record(1))
    store.put_origins(ORIGIN_X, ["d"])
    clock.now = 1200.0
    upkeep = CacheUpkeep(SimpleNamespace(store=store))
    try:
        assert await upkeep.step() == PAUSE
    finally:
        upkeep.done()
    assert store.prune() == 0  # the upkeep's step dropped it
    assert store.get_origins(["d"]) == {}


def test_redis_tls_failing_after_startup_is_an_outage_not_a_stop(tmp_path, caplog):
    """A certificate that expired or was replaced while the proxy runs: paused and said once, as an outage, never a
    fresh handshake and a failure on every request."""
    import ssl

    import redis as redis_py
    from llm_reasoning_proxy.cache import StoreUnavailable

    server = RedisServer(tmp_path).start()
    store = RedisStore(server.url(), LIMITS)
    try:

        def untrusted() -> None:
            try:
                raise ssl.SSLCertVerificationError(1, "certificate verify failed")
            except ssl.SSLError as e:
                raise redis_py.ConnectionError("Error connecting") from e

        with caplog.at_level(logging.WARNING):
            for _ in range(3):
                with pytest.raises(StoreUnavailable):
                    store._guard(untrusted)
        assert len([r for r in caplog.records if "unavailable" in r.getMessage()]) == 1
    finally:
        store.close()
        server.stop()
