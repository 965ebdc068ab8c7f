"""A cache that many proxies share: one Redis database (`llm_cache=redis://HOST:PORT/DB`).

The layout mirrors the SQLite store. Each captured turn is stored once as JSON
(`<layout>record:<id>`, with the scope it was captured in) and reached through
one key per tool call id, alias and fingerprint (`<layout>key:<scope>|<key>`,
holding the record id). Redis expires both after llm_cache_max_age. A sorted
set of record ids by storing time (`<layout>records`) bounds their count to
llm_cache_max_entries. A stored record never changes, so each process keeps the
records it has parsed, as the SQLite store does.

Redis may lose any of these: restarted without persistence, failed over to a
replica that lagged, or evicting keys under `maxmemory`. That must cost misses,
never another turn's reasoning. So a record id is 128 random bits, never a
counter that starts again from 1 once Redis forgot it (another process may
still hold the record that id named, and keys may still lead to it); and a
record is handed out only for the scope stored with it, whether read from Redis
or from this process's memory.

A Redis that is down must never hold traffic up. A command that cannot reach it
raises StoreUnavailable. For a short pause that grows while the outage lasts,
every call then fails the same way without touching the network. The first
command that gets through ends the outage, and each end is logged once. What
waiting cannot mend is configuration, and raises StoreError, which stops the
proxy at startup: a refused password, a certificate the proxy does not trust,
or a URL whose scheme does not match what the server speaks (redis:// at a TLS
port, rediss:// at a plain one).
"""

from __future__ import annotations

import math
import secrets
import socket
import ssl
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import redis
from pydantic import ValidationError
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..shared import jsoncodec
from ..shared.limits import PRUNE_STEP
from ..shared.records import ReasoningRecord
from ..shared.redact import display_url, masked_logger
from .base import CacheLimits, StoreError, StoreUnavailable
from .remembered import RememberedRecords, by_key, warn_unreadable

logger = masked_logger(__name__)

PREFIX = "llm-reasoning-proxy:"
# Records, their keys and their index, apart from those of versions that counted record ids (`<prefix>next-id`):
# proxies of both versions can share one Redis while a fleet is upgraded, each reading only its own entries.
LAYOUT = PREFIX + "v2:"
# A refused connection fails at once; these bound what a Redis that stopped answering can cost a request.
CONNECT_TIMEOUT = 0.5
COMMAND_TIMEOUT = 1.0
FIRST_PAUSE = 0.5  # seconds without trying Redis after a failure; doubled while it stays down
LONGEST_PAUSE = 5.0

T = TypeVar("T")


class RedisStore:
    prunes_in_a_thread = False  # its prune forgets the records it remembers, which lookups read

    def __init__(self, url: str, limits: CacheLimits, clock: Callable[[], float] = time.time) -> None:
        self.description = display_url(url)
        self._limits = limits
        self._ttl = max(1, math.ceil(limits.max_age)) if math.isfinite(limits.max_age) else None
        self._clock = clock
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
            self._guard(self._redis.ping, starting=True)
        except StoreUnavailable:
            pass  # logged; a proxy starts without its cache rather than refuse traffic until Redis is up
        except TypeError as e:  # redis-py makes its first connection here, from the URL's query parameters
            raise StoreError(f"{self.description} is not a usable Redis URL: {e}") from e

    def get_many(self, scope: str, keys: Sequence[str]) -> dict[str, ReasoningRecord]:
        unique = list(dict.fromkeys(keys))
        if not unique:
            return {}
        found_ids = self._guard(lambda: self._redis.mget([_key_name(scope, key) for key in unique]))
        ids = {key: value.decode() for key, value in zip(unique, found_ids) if value is not None}
        if not ids:
            return {}
        oldest = self._clock() - self._limits.max_age
        records, unread = self._read.split(ids.values(), oldest, scope)
        if unread:
            raws = self._guard(lambda: self._redis.mget([_record_name(record_id) for record_id in unread]))
            for record_id, raw in zip(unread, raws):
                if raw is None:  # expired, pruned or evicted since its key was read
                    continue
                try:
                    stored = jsoncodec.loads(raw)
                    stored_at, record = float(stored["stored_at"]), ReasoningRecord.model_validate(stored["record"])
                    stored_scope = stored["scope"]
                except (ValueError, KeyError, TypeError, ValidationError):
                    warn_unreadable(ids, record_id)
                    continue
                if stored_scope != scope:  # never so for what proxies wrote (ids are not reused), whatever Redis lost
                    continue
                self._read.add(record_id, stored_at, record, scope)
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

        record_id = secrets.token_hex(16)

        def write() -> None:
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.set(_record_name(record_id), raw, ex=self._ttl)
                for key in unique:
                    pipe.set(_key_name(scope, key), record_id, ex=self._ttl)
                pipe.zadd(LAYOUT + "records", {record_id: stored_at})
                pipe.execute()

        self._guard(write)
        self._read.add(record_id, stored_at, record, scope)

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

    def prune(self, most: int = PRUNE_STEP) -> int:
        """Forgets at most `most` records past the age limit or the oldest past the count limit, and as many origins;
        returns the larger of the records and the origins dropped. Each index is sorted by storing time, so a step
        reads only what it drops."""
        origins = len(self._guard(lambda: self._oldest(PREFIX + "origins", most, drop=_origin_name)))

        def trim() -> int:
            doomed = self._oldest(LAYOUT + "records", most)
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
                pipe.zrem(LAYOUT + "records", *doomed)
                pipe.execute()
            return len(doomed)

        return max(origins, self._guard(trim))

    def _oldest(self, index: str, most: int, drop: Callable[[str], str] | None = None) -> list[str]:
        """Up to `most` members of a sorted index that are past the age limit or the oldest past the count limit
        (Redis expires what they name by itself; this also catches a clock that ran ahead of Redis's); with `drop`,
        they are removed, with the keys `drop` names for them."""
        expired = int(self._redis.zcount(index, "-inf", f"({self._clock() - self._limits.max_age}"))
        doomed = min(most, max(expired, int(self._redis.zcard(index)) - self._limits.max_entries))
        members = [member.decode() for member in self._redis.zrange(index, 0, doomed - 1)] if doomed > 0 else []
        if members and drop is not None:
            with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(*(drop(member) for member in members))
                pipe.zrem(index, *members)
                pipe.execute()
        return members

    def size(self) -> tuple[int | None, int | None]:
        """The records from their index (one ZCARD); their bytes are Redis's to tell (its own memory metrics)."""
        return int(self._guard(lambda: self._redis.zcard(LAYOUT + "records"))), None

    def close(self) -> None:
        self._read.clear()
        self._redis.close()

    def _guard(self, command: Callable[[], T], *, starting: bool = False) -> T:
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
            # At startup a TLS or scheme mistake is configuration, said in one line. Later (a certificate that
            # expired or was replaced) it is an outage: paused, said once, tried again.
            mistake = (_tls_mistake(e) or self._scheme_mistake(e)) if starting else None
            if mistake is not None:
                raise StoreError(f"Redis at {self.description}: {mistake}") from e
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

    def _scheme_mistake(self, error: BaseException) -> str | None:
        """Why the URL's scheme is wrong for the server, if it is: asked at startup of a connection that was made
        but broke. A Redis TLS port drops a connection that does not open with a TLS handshake, and a plain port
        never answers one, so either would look like an outage that never ends."""
        if _caused_by(error, ConnectionRefusedError):
            return None  # nothing listens there: an outage
        pool = self._redis.connection_pool
        address = (pool.connection_kwargs.get("host"), pool.connection_kwargs.get("port"))
        try:
            with socket.create_connection(address, timeout=CONNECT_TIMEOUT) as probe:
                if issubclass(pool.connection_class, redis.SSLConnection):
                    probe.settimeout(COMMAND_TIMEOUT)
                    probe.sendall(b"PING\r\n")
                    if probe.recv(1) in (b"+", b"-"):  # "+PONG", or "-NOAUTH ...": a plain Redis
                        return "the server does not speak TLS; use redis://"
                else:
                    anything = ssl.create_default_context()
                    anything.check_hostname, anything.verify_mode = False, ssl.CERT_NONE  # only: is it TLS?
                    anything.wrap_socket(probe).close()
                    return "the server expects TLS; use rediss://"
        except (OSError, ValueError, TypeError):
            pass  # neither answers: an outage
        return None


def _causes(error: BaseException) -> Iterator[BaseException]:
    """The error and those it was raised from or while handling (redis-py raises its own while handling the OS's)."""
    cause: BaseException | None = error
    while cause is not None:
        yield cause
        cause = cause.__cause__ or cause.__context__


def _caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    return any(isinstance(cause, kind) for cause in _causes(error))


# OpenSSL's X509_V_ERR_ codes for a chain that reaches no CA the proxy trusts (rather than, say, the wrong host).
_NO_TRUSTED_ISSUER = frozenset({18, 19, 20, 21})


def _tls_mistake(error: BaseException) -> str | None:
    """What was wrong with TLS, if a connection failed for a reason no wait will mend: a certificate the proxy does
    not trust, a TLS handshake the server refused or could not speak, a CA file it could not read."""
    for cause in _causes(error):
        if isinstance(cause, ssl.SSLCertVerificationError):
            said = f"its TLS certificate is not trusted ({cause.verify_message})"
            if cause.verify_code in _NO_TRUSTED_ISSUER:
                said += "; for a private CA, add ?ssl_ca_certs=/path/to/ca.pem to the URL"
            return said
        if isinstance(cause, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)):
            return None  # the connection went away during the handshake: an outage
        if isinstance(cause, ssl.SSLError):
            return f"TLS failed: {cause.reason or cause}"
        if isinstance(cause, (FileNotFoundError, IsADirectoryError, PermissionError)):  # ssl_ca_certs, ssl_certfile
            return f"cannot read a TLS file the URL names: {cause.strerror or cause}"
    return None


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
    return f"{LAYOUT}key:{scope}|{key}"


def _origin_name(digest: str) -> str:
    return f"{PREFIX}origin:{digest}"


def _record_name(record_id: str) -> str:
    return f"{LAYOUT}record:{record_id}"
