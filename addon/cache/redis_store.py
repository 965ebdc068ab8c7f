"""A cache that many proxies share: one Redis database (`llm_cache=redis://HOST:PORT/DB`).

The layout mirrors the SQLite store. Each captured turn is stored once as JSON
(`<prefix>record:<id>`) and reached through one key per tool call id, alias and
fingerprint (`<prefix>key:<scope>|<key>`, holding the record id). Redis expires
both after llm_cache_max_age. A sorted set of record ids by storing time
(`<prefix>records`) bounds their count to llm_cache_max_entries. A stored record
never changes, so each process keeps the records it has parsed, as the SQLite
store does.

A Redis that is down must never hold traffic up. A command that cannot reach it
raises StoreUnavailable. For a short pause that grows while the outage lasts,
every call then fails the same way without touching the network. The first
command that gets through ends the outage, and each end is logged once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import redis
from pydantic import ValidationError
from redis.backoff import NoBackoff
from redis.retry import Retry

from .. import jsoncodec
from ..records import ReasoningRecord
from ..redact import masked_logger, redact_url
from .base import CacheLimits, StoreError, StoreUnavailable
from .prune_schedule import PruneSchedule
from .remembered import RememberedRecords, by_key, warn_unreadable

logger = masked_logger(__name__)

REDIS_SCHEMES = ("redis://", "rediss://")
PREFIX = "llm-reasoning-proxy:"
# A refused connection fails at once; these bound what a Redis that stopped answering can cost a request.
CONNECT_TIMEOUT = 0.5
COMMAND_TIMEOUT = 1.0
FIRST_PAUSE = 0.5  # seconds without trying Redis after a failure; doubled while it stays down
LONGEST_PAUSE = 5.0

T = TypeVar("T")


def display_url(url: str) -> str:
    """The URL without its password (in the user info or as a query parameter), for logs and messages."""
    scheme, sep, rest = url.partition("://")
    userinfo, at, hostpart = rest.rpartition("@")
    if at:
        user, colon, _ = userinfo.partition(":")
        url = f"{scheme}{sep}{user}{':***' if colon else ''}@{hostpart}"
    return redact_url(url) if "?" in url else url


class RedisStore:
    def __init__(self, url: str, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self.description = display_url(url)
        self._limits = limits
        self._ttl = max(1, math.ceil(limits.max_age)) if math.isfinite(limits.max_age) else None
        self._clock = clock
        self._prunes = PruneSchedule()
        self._read = RememberedRecords()
        self._paused_until = 0.0
        self._pause = 0.0
        self._outage: str | None = None
        try:
            self._redis = redis.Redis.from_url(
                url,
                socket_connect_timeout=CONNECT_TIMEOUT,
                socket_timeout=COMMAND_TIMEOUT,
                # One immediate retry: a pooled connection may be stale after Redis restarted.
                retry=Retry(NoBackoff(), 1),
            )
        except ValueError as e:
            raise StoreError(f"{self.description} is not a usable Redis URL: {e}") from e
        self._drop_keys = self._redis.register_script(_DROP_KEYS_LEADING_TO)
        try:
            self._guard(self._redis.ping)
        except StoreUnavailable:
            pass  # logged; a proxy starts without its cache rather than refuse traffic until Redis is up

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        found_ids = self._guard(lambda: self._redis.mget([_key_name(scope, key) for key in unique]))
        ids = {key: int(value) for key, value in zip(unique, found_ids) if value is not None}
        if not ids:
            return {}
        oldest = self._clock() - self._limits.max_age
        records, unread = self._read.split(ids.values(), oldest)
        if unread:
            raws = self._guard(lambda: self._redis.mget([_record_name(record_id) for record_id in unread]))
            for record_id, raw in zip(unread, raws):
                if raw is None:  # expired or pruned since its key was read
                    continue
                try:
                    stored = jsoncodec.loads(raw)
                    stored_at, record = float(stored["stored_at"]), ReasoningRecord.model_validate(stored["record"])
                except (ValueError, KeyError, TypeError, ValidationError):
                    warn_unreadable(ids, record_id)
                    continue
                self._read.add(record_id, stored_at, record, len(raw))
                if stored_at >= oldest:
                    records[record_id] = record
        return by_key(ids, records)

    def put(self, scope: str, keys: Sequence[str], record: ReasoningRecord) -> None:
        if not keys:
            return
        stored_at = self._clock()
        # Not model_dump_json(): it refuses lone surrogates, which a provider can send.
        unique = list(dict.fromkeys(keys))
        # The scope and keys go with the record, so that pruning it can drop the keys that lead to it.
        raw = jsoncodec.dumps({"stored_at": stored_at, "scope": scope, "keys": unique, "record": record.model_dump()})

        def write() -> int:
            record_id = int(self._redis.incr(PREFIX + "next-id"))
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(_record_name(record_id), raw, ex=self._ttl)
                for key in unique:
                    pipe.set(_key_name(scope, key), record_id, ex=self._ttl)
                pipe.zadd(PREFIX + "records", {str(record_id): stored_at})
                pipe.execute()
            return record_id

        self._read.add(self._guard(write), stored_at, record, len(raw))
        if self._prunes.wrote():
            self.prune()

    def delete(self, scope: str, keys: Sequence[str]) -> int:
        names = [_key_name(scope, key) for key in dict.fromkeys(keys)]
        return int(self._guard(lambda: self._redis.delete(*names))) if names else 0

    def put_origins(self, origin: str, digests: Sequence[str]) -> None:
        unique = list(dict.fromkeys(digests))
        if not unique:
            return
        stored_at = self._clock()

        def write() -> None:
            with self._redis.pipeline(transaction=True) as pipe:
                for digest in unique:
                    pipe.hset(_origin_name(digest), origin, stored_at)
                    if self._ttl is not None:
                        pipe.expire(_origin_name(digest), self._ttl)
                pipe.zadd(PREFIX + "origins", dict.fromkeys(unique, stored_at))
                pipe.execute()

        self._guard(write)
        if self._prunes.wrote():
            self.prune()

    def get_origins(self, digests: Sequence[str]) -> dict[str, set[str]]:
        unique = list(dict.fromkeys(digests))
        if not unique:
            return {}

        def read() -> list[dict[bytes, bytes]]:
            with self._redis.pipeline(transaction=False) as pipe:
                for digest in unique:
                    pipe.hgetall(_origin_name(digest))
                return pipe.execute()

        oldest = self._clock() - self._limits.max_age
        found = {}
        for digest, origins in zip(unique, self._guard(read)):
            fresh = {origin.decode() for origin, at in origins.items() if float(at) >= oldest}
            if fresh:
                found[digest] = fresh
        return found

    def prune(self) -> int:
        """Forgets records past the age limit and drops the oldest past the count limit; returns records dropped."""
        self._guard(self._prune_origins)

        def trim() -> int:
            index = PREFIX + "records"
            # Redis expires entries by itself; this also catches a clock that ran ahead of Redis's.
            expired = self._redis.zrangebyscore(index, "-inf", f"({self._clock() - self._limits.max_age}")
            excess = int(self._redis.zcard(index)) - len(expired) - self._limits.max_entries
            oldest = self._redis.zrange(index, len(expired), len(expired) + excess - 1) if excess > 0 else []
            doomed = [int(record_id) for record_id in [*expired, *oldest]]
            if not doomed:
                return 0
            raws = self._redis.mget([_record_name(record_id) for record_id in doomed])
            with self._redis.pipeline(transaction=True) as pipe:
                for record_id, raw in zip(doomed, raws):
                    names = _stored_key_names(raw)
                    if names:  # only keys that still lead to this record: a newer capture may own one now
                        self._drop_keys(keys=names, args=[record_id], client=pipe)
                    self._read.drop(record_id)
                pipe.delete(*(_record_name(record_id) for record_id in doomed))
                pipe.zrem(index, *doomed)
                pipe.execute()
            return len(doomed)

        return self._guard(trim)

    def _prune_origins(self) -> None:
        """Origins age and are bounded in count like records (Redis expires them too)."""
        index = PREFIX + "origins"
        expired = self._redis.zrangebyscore(index, "-inf", f"({self._clock() - self._limits.max_age}")
        excess = int(self._redis.zcard(index)) - len(expired) - self._limits.max_entries
        oldest = self._redis.zrange(index, len(expired), len(expired) + excess - 1) if excess > 0 else []
        doomed = [digest.decode() for digest in [*expired, *oldest]]
        if doomed:
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(*(_origin_name(digest) for digest in doomed))
                pipe.zrem(index, *doomed)
                pipe.execute()

    def close(self) -> None:
        self._read.clear()
        self._redis.close()

    def _guard(self, command: Callable[[], T]) -> T:
        """Runs Redis commands; an outage raises StoreUnavailable, at once while it is paused."""
        now = time.monotonic()
        if now < self._paused_until:
            raise StoreUnavailable(self._outage or f"Redis at {self.description} is unavailable")
        try:
            result = command()
        except redis.AuthenticationError as e:
            # A wrong or missing password is configuration, not an outage: said at startup, never retried quietly.
            raise StoreError(f"Redis at {self.description} refused the credentials: {e}") from e
        except (redis.ConnectionError, redis.TimeoutError) as e:
            self._pause = min(self._pause * 2, LONGEST_PAUSE) if self._pause else FIRST_PAUSE
            self._paused_until = now + self._pause
            if self._outage is None:
                logger.warning("llm cache: Redis at %s is unavailable (%s); forwarding unrepaired", self.description, e)
            self._outage = f"Redis at {self.description} is unavailable: {e}"
            raise StoreUnavailable(self._outage) from e
        except redis.RedisError as e:
            raise StoreError(f"Redis at {self.description}: {type(e).__name__}: {e}") from e
        if self._outage is not None:
            logger.warning("llm cache: Redis at %s is back", self.description)
            self._outage, self._pause, self._paused_until = None, 0.0, 0.0
        return result


_DROP_KEYS_LEADING_TO = """
for _, key in ipairs(KEYS) do
    if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
"""


def _stored_key_names(raw: bytes | None) -> list[str]:
    try:
        stored = jsoncodec.loads(raw) if raw is not None else {}
        return [_key_name(stored["scope"], key) for key in stored["keys"]]
    except (ValueError, KeyError, TypeError):
        return []


def _key_name(scope: str, key: str) -> str:
    # A scope is "host:port|credential-hash" and holds exactly one "|", so scope and key cannot run together.
    return f"{PREFIX}key:{scope}|{key}"


def _origin_name(digest: str) -> str:
    return f"{PREFIX}origin:{digest}"


def _record_name(record_id: int) -> str:
    return f"{PREFIX}record:{record_id}"
