"""The default cache: one SQLite file that several proxy processes share.

WAL mode lets readers and one writer work at once across processes, and a
transaction that committed survives the proxy being killed (SIGKILL) because it
is already in the WAL file; only a power loss could drop the newest commits.

A captured turn is stored once (`records`, with the scope it was captured in)
and found through each of its keys (`record_keys`: tool call ids, aliases,
name-and-arguments fingerprints), so a lookup reads each record's text once
however many keys lead to it. A stored record never changes and its id, 63
random bits, is never reused (a counter would start again where a backup was
restored into the file), so each process keeps the records it has read in
memory: a client re-sends the same history every turn. A record is handed out
only for the scope stored with it, whoever kept it.
Each process also remembers where keys led (or that they led nowhere) until
SQLite's data_version says another process wrote to the file; it asks only when
the WAL-index header says some connection committed (addon/cache/wal_header.py).
"""

from __future__ import annotations

import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import ValidationError

from ..shared import jsoncodec
from ..shared.limits import PRUNE_STEP
from ..shared.private_files import make_private, make_private_dir, open_private
from ..shared.records import ReasoningRecord
from .base import CacheLimits, StoreError
from .remembered import RememberedRecords, by_key, warn_unreadable
from .wal_header import WalHeader

# 4: tool call arguments kept as a digest; 5: a record's scope, random ids, and tallies and triggers, so that
# pruning reads no table whole
SCHEMA_VERSION = 5
_TABLES = (
    """CREATE TABLE IF NOT EXISTS records (
        id        INTEGER PRIMARY KEY,
        record    TEXT NOT NULL,
        stored_at REAL NOT NULL,
        scope     TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX IF NOT EXISTS records_stored_at ON records (stored_at)",
    """CREATE TABLE IF NOT EXISTS record_keys (
        scope     TEXT NOT NULL,
        key       TEXT NOT NULL,
        record_id INTEGER NOT NULL,
        PRIMARY KEY (scope, key)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS record_keys_record ON record_keys (record_id)",
    """CREATE TABLE IF NOT EXISTS origins (
        digest    TEXT NOT NULL,
        origin    TEXT NOT NULL,
        stored_at REAL NOT NULL,
        PRIMARY KEY (digest, origin)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS origins_stored_at ON origins (stored_at)",
)
# What schema 5 adds to 4, in place: the count limits are kept from a row count of each table (counting a table
# reads all of it), and the schema itself keeps records and keys together, so that no prune looks for strays:
# a record goes once no key leads to it (every key was captured again, or deleted), and its keys go with it.
# Keys are moved with an upsert, never INSERT OR REPLACE, whose deletes fire no trigger
# (https://www.sqlite.org/lang_conflict.html, REPLACE).
_UPKEEP = (
    "CREATE TABLE IF NOT EXISTS tallies (name TEXT PRIMARY KEY, count INTEGER NOT NULL) WITHOUT ROWID",
    """CREATE TRIGGER IF NOT EXISTS records_added AFTER INSERT ON records BEGIN
        UPDATE tallies SET count = count + 1 WHERE name = 'records';
    END""",
    """CREATE TRIGGER IF NOT EXISTS records_removed AFTER DELETE ON records BEGIN
        UPDATE tallies SET count = count - 1 WHERE name = 'records';
        DELETE FROM record_keys WHERE record_id = old.id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS record_keys_moved AFTER UPDATE OF record_id ON record_keys
    WHEN NOT EXISTS (SELECT 1 FROM record_keys WHERE record_id = old.record_id) BEGIN
        DELETE FROM records WHERE id = old.record_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS record_keys_removed AFTER DELETE ON record_keys
    WHEN NOT EXISTS (SELECT 1 FROM record_keys WHERE record_id = old.record_id) BEGIN
        DELETE FROM records WHERE id = old.record_id;
    END""",
    """CREATE TRIGGER IF NOT EXISTS origins_added AFTER INSERT ON origins BEGIN
        UPDATE tallies SET count = count + 1 WHERE name = 'origins';
    END""",
    """CREATE TRIGGER IF NOT EXISTS origins_removed AFTER DELETE ON origins BEGIN
        UPDATE tallies SET count = count - 1 WHERE name = 'origins';
    END""",
)
_KEYS_PER_QUERY = 500
_WAL_PAGES_WITHOUT_UPKEEP = 10_000  # SQLite's default is 1,000 (4 MB)
_REMEMBERED_KEYS = 16384  # (scope, key) -> record id or None, valid while no other process writes
# Only ASCII keys this long with their scope are remembered (a provider's tool call ids and the fingerprints are under 100
# characters, a scope's host and hash about as long): a client names the ids and the host it sends, and 16,384 keys
# of a megabyte each would be 16 GB. Longer ones are looked up each time.
_REMEMBERED_KEY_CHARS = 512


_UNKNOWN = object()


def _companions(path: Path) -> list[Path]:
    """The files SQLite keeps beside the database in WAL mode."""
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]


def _create_private(path: Path) -> None:
    make_private_dir(path.parent)
    # Created when missing, never opened when there: a connection of this process may hold it already (another
    # store on the same file), and closing any descriptor of a file drops every POSIX lock the process holds on it.
    try:
        os.close(open_private(path, os.O_WRONLY | os.O_EXCL))
    except FileExistsError:
        make_private(path)
    # SQLite creates its -wal and -shm files with the database's mode, but one left by an earlier run keeps its
    # own, and SQLite would follow a link planted there.
    for companion in _companions(path):
        make_private(companion)


def _rollback(db: sqlite3.Connection) -> None:
    # SQLite ends the transaction itself on some errors (a full disk, say): a second ROLLBACK would then raise "no
    # transaction is active" and hide the error that matters.
    if db.in_transaction:
        db.execute("ROLLBACK")


def _batches(items: list, size: int = _KEYS_PER_QUERY) -> list[list]:
    return [items[start : start + size] for start in range(0, len(items), size)]


class SQLiteStore:
    prunes_in_a_thread = True  # see prune()

    def __init__(self, path: Path, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.description = f"sqlite:{path}"
        self._limits = limits
        self._clock = clock
        self._read = RememberedRecords()
        self._keys: dict[tuple[str, str], int | None] = {}
        self._origins: dict[str, dict[str, float]] = {}  # digest -> origin -> stored_at (empty: none), like _keys
        self._data_version: int | None = None
        self._seen_header: bytes | None = None  # the WAL-index header when data_version was last read
        self._upkeep_lock = threading.Lock()
        self._closed = False
        self._upkeep_db: sqlite3.Connection | None = None  # the prune's own connection, opened by its first step
        try:
            _create_private(path)
            # SQLite gives the -wal and -shm files the database file's permissions.
            self._db = sqlite3.connect(path, timeout=5.0, isolation_level=None, check_same_thread=False)
            mode = self._db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"cache {path}: SQLite refused WAL mode (got {mode!r})")
            self._db.execute("PRAGMA synchronous=NORMAL")
            # Checkpoints are the prune's (on its own connection, off the event loop); this one takes one only if
            # the WAL grew past 40 MB without one, as it would with no upkeep running.
            self._db.execute(f"PRAGMA wal_autocheckpoint={_WAL_PAGES_WITHOUT_UPKEEP}")
            for companion in _companions(path):
                make_private(companion)
            self._migrate()
            self._wal = WalHeader(path)
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the reasoning cache at {path}: {e}") from e

    def _migrate(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version < 4:
                # Earlier layouts are a cache of disposable entries: start afresh rather than convert.
                for table in ("reasoning", "record_keys", "records", "origins"):
                    self._db.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _TABLES:
                self._db.execute(statement)
            columns = {row[1] for row in self._db.execute("PRAGMA table_info(records)")}
            if "scope" not in columns:  # schema 4's records: never handed out, they age away
                self._db.execute("ALTER TABLE records ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
            if version < SCHEMA_VERSION:
                # Counted here only (a file of a million entries: a fraction of a second), when the file comes from
                # schema 4, or from a proxy of that version that opened it since (it writes version 4 back).
                self._db.execute("DROP TABLE IF EXISTS tallies")
            for statement in _UPKEEP:
                self._db.execute(statement)
            counted = {name for (name,) in self._db.execute("SELECT name FROM tallies")}
            for table in {"records", "origins"} - counted:
                self._db.execute(f"INSERT INTO tallies (name, count) SELECT '{table}', count(*) FROM {table}")
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self._db.execute("COMMIT")
        except BaseException:
            _rollback(self._db)
            raise

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        self._forget_keys_if_changed()
        ids: dict[str, int] = {}
        unknown = []
        for key in dict.fromkeys(keys):
            record_id = self._keys.get((scope, key), _UNKNOWN)
            if record_id is _UNKNOWN:
                unknown.append(key)
            elif record_id is not None:
                ids[key] = record_id
        for batch in _batches(unknown):
            rows = dict(
                self._db.execute(
                    f"SELECT key, record_id FROM record_keys WHERE scope = ? AND key IN ({','.join('?' * len(batch))})",
                    (scope, *batch),
                )
            )
            for key in batch:
                self._remember_key(scope, key, rows.get(key))
            ids.update(rows)
        if not ids:
            return {}
        oldest = self._clock() - self._limits.max_age
        records, unread = self._read.split(ids.values(), oldest, scope)
        for batch in _batches(unread):
            rows = self._db.execute(
                f"SELECT id, stored_at, scope, record FROM records WHERE id IN ({','.join('?' * len(batch))})", batch
            )
            for record_id, stored_at, stored_scope, raw in rows:
                if stored_scope != scope:  # a key that leads across scopes was never written by a proxy
                    continue
                try:
                    record = ReasoningRecord.model_validate(jsoncodec.loads(raw))
                except (ValueError, ValidationError):
                    warn_unreadable(ids, record_id)
                    continue
                self._read.add(record_id, stored_at, record, scope)
                if stored_at >= oldest:
                    records[record_id] = record
        return by_key(ids, records)

    def _forget_keys_if_changed(self) -> None:
        """Drops what keys led to once another connection committed: it may have replaced or deleted them.

        SQLite is asked only when the WAL-index header changed since it last was: no connection committed in
        between, this one included. The header is read first, so a commit after it shows as a change next time.
        Each write of this store looks again once it committed, so that the next request does not have to."""
        header = self._wal.current()
        if header is not None and header == self._seen_header:
            return
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version != self._data_version:
            self._keys.clear()
            self._origins.clear()
            self._data_version = version
        self._seen_header = header

    def _remember_key(self, scope: str, key: str, record_id: int | None) -> None:
        if len(scope) + len(key) > _REMEMBERED_KEY_CHARS or not key.isascii():
            self._keys.pop((scope, key), None)  # a key that led elsewhere before must not lead there now
            return
        self._keys[(scope, key)] = record_id
        if len(self._keys) > _REMEMBERED_KEYS:
            del self._keys[next(iter(self._keys))]

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None:
        if not keys:
            return
        # Not model_dump_json(): it refuses lone surrogates, which a provider can send.
        raw = jsoncodec.dumps(record.model_dump()).decode()
        self._db.execute("BEGIN IMMEDIATE")
        try:
            stored_at = self._clock()
            record_id = secrets.randbits(63)
            self._db.execute(
                "INSERT INTO records (id, record, stored_at, scope) VALUES (?, ?, ?, ?)",
                (record_id, raw, stored_at, scope),
            )
            self._db.executemany(  # a key captured again moves to the new record (see _UPKEEP)
                "INSERT INTO record_keys (scope, key, record_id) VALUES (?, ?, ?) "
                "ON CONFLICT (scope, key) DO UPDATE SET record_id = excluded.record_id",
                [(scope, key, record_id) for key in dict.fromkeys(keys)],
            )
            self._db.execute("COMMIT")
        except BaseException:
            _rollback(self._db)
            raise
        self._forget_keys_if_changed()
        self._read.add(record_id, stored_at, record, scope)
        for key in keys:
            self._remember_key(scope, key, record_id)

    def delete(self, scope: str, keys: Sequence[str]) -> int:
        for key in keys:
            self._remember_key(scope, key, None)
        removed = 0
        for batch in _batches(list(dict.fromkeys(keys))):
            removed += self._db.execute(
                f"DELETE FROM record_keys WHERE scope = ? AND key IN ({','.join('?' * len(batch))})", (scope, *batch)
            ).rowcount
        self._forget_keys_if_changed()
        return removed

    def put_origins(self, origin: str, digests: Sequence[str]) -> None:
        stored_at = self._clock()
        written = list(dict.fromkeys(digests))
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "INSERT INTO origins (digest, origin, stored_at) VALUES (?, ?, ?) "
                "ON CONFLICT (digest, origin) DO UPDATE SET stored_at = excluded.stored_at",
                [(digest, origin, stored_at) for digest in written],
            )
            # Every origin on file for them, read while no other connection can write: the request that sends one
            # back next finds them remembered, not on disk.
            on_file: dict[str, dict[str, float]] = {}
            for batch in _batches(written):
                on_file.update(self._select_origins(batch, stored_at - self._limits.max_age))
            self._db.execute("COMMIT")
        except BaseException:
            _rollback(self._db)
            raise
        self._forget_keys_if_changed()
        for digest in written:
            self._remember_origins(digest, on_file.get(digest, {}))

    def get_origins(self, digests: Sequence[str]) -> dict[str, set[str]]:
        self._forget_keys_if_changed()
        oldest = self._clock() - self._limits.max_age
        found = {}
        unknown = []
        for digest in dict.fromkeys(digests):
            remembered = self._origins.get(digest)
            if remembered is None:
                unknown.append(digest)
            elif fresh := {origin for origin, at in remembered.items() if at >= oldest}:  # they age as on file
                found[digest] = fresh
        for batch in _batches(unknown):
            rows = self._select_origins(batch, oldest)
            for digest in batch:
                self._remember_origins(digest, rows.get(digest, {}))
            found.update((digest, set(origins)) for digest, origins in rows.items())
        return found

    def _select_origins(self, digests: list[str], oldest: float) -> dict[str, dict[str, float]]:
        rows: dict[str, dict[str, float]] = {}
        for digest, origin, stored_at in self._db.execute(
            "SELECT digest, origin, stored_at FROM origins "
            f"WHERE stored_at >= ? AND digest IN ({','.join('?' * len(digests))})",
            (oldest, *digests),
        ):
            rows.setdefault(digest, {})[origin] = stored_at
        return rows

    def _remember_origins(self, digest: str, origins: dict[str, float]) -> None:
        self._origins[digest] = origins
        if len(self._origins) > _REMEMBERED_KEYS:
            del self._origins[next(iter(self._origins))]

    def prune(self, most: int = PRUNE_STEP) -> int:
        """Drops at most `most` records past the age and count limits, oldest first, and as many origins, then
        checkpoints the WAL as far as no reader is in the way; returns the larger of the records and the origins it
        dropped (a step that dropped `most` of either leaves more to drop).

        A step reads only what it drops (the stored_at indexes, the tallies). It runs on a connection of its own and
        touches nothing else of the store, so the proxy runs it in a thread of its own (addon/hooks/upkeep.py):
        SQLite lets go of Python's lock while it works, and lookups go on meanwhile. The store's own connection
        sees the step's commit as another connection's (data_version) and forgets where keys led."""
        with self._upkeep_lock:
            if self._closed:  # a step that waited for close() to end
                return 0
            if self._upkeep_db is None:
                self._upkeep_db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None, check_same_thread=False)
                self._upkeep_db.execute("PRAGMA synchronous=NORMAL")
            db = self._upkeep_db
            oldest = self._clock() - self._limits.max_age
            db.execute("BEGIN IMMEDIATE")
            try:
                removed = self._drop_oldest(db, "records", "id", oldest, most)
                removed = max(removed, self._drop_oldest(db, "origins", "digest, origin", oldest, most))
                db.execute("COMMIT")
            except BaseException:
                _rollback(db)
                raise
            # The store's connection leaves checkpoints to this one (see __init__): copying the WAL into the file
            # and syncing it can take tens of milliseconds.
            db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            return removed

    def _drop_oldest(self, db: sqlite3.Connection, table: str, key: str, oldest: float, most: int) -> int:
        """Deletes up to `most` rows of `table` stored before `oldest`, then the oldest past the count limit."""
        older = f"DELETE FROM {table} WHERE ({key}) IN (SELECT {key} FROM {table} "
        removed = db.execute(older + "WHERE stored_at < ? ORDER BY stored_at LIMIT ?)", (oldest, most)).rowcount
        (count,) = db.execute("SELECT count FROM tallies WHERE name = ?", (table,)).fetchone()
        excess = min(count - self._limits.max_entries, most - removed)
        if excess > 0:
            removed += db.execute(older + "ORDER BY stored_at LIMIT ?)", (excess,)).rowcount
        return removed

    def size(self) -> tuple[int | None, int | None]:
        """The records from the tally the triggers keep (never a count(*)); the bytes of the file and its WAL."""
        row = self._db.execute("SELECT count FROM tallies WHERE name = 'records'").fetchone()
        files = [self.path, *_companions(self.path)]
        return (int(row[0]) if row else None), sum(p.stat().st_size for p in files if p.exists())

    def close(self) -> None:
        with self._upkeep_lock:  # a step under way in the upkeep's thread ends first
            self._closed = True
            if self._upkeep_db is not None:
                self._upkeep_db.close()
                self._upkeep_db = None
        self._read.clear()
        self._keys.clear()
        self._origins.clear()
        self._wal.close()
        self._db.close()
