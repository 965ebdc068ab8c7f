"""Which upstream and which account a request belongs to.

Reasoning captured for one account or host must never be replayed with
another, so every cache entry lives in the scope of the request that produced
it: the upstream host and a one-way hash of what identifies the caller (never
the credential itself).

That is every header that carries a credential (`redact.is_credential_header`:
the providers' and gateways' known names, any name that says it holds a key,
token, secret or authorization, and names the user adds with
`llm_credential_headers`) and every secret query parameter (`key=`, ...).
Cookies count only when nothing else identifies the caller: they change within
a session, and would split a scope that a key already identifies.

A credential that rotates while its account stays (GitHub Copilot's API token)
counts as the account it names (`accounts.stable_identity`), hashed in a domain
of its own, so that it can never be taken for the hash of a raw credential.
One that rotates with nothing stable in it (a Google OAuth access token, a JWT)
counts as it is, and `Identity.rotating` says what it is.
"""

from __future__ import annotations

import functools
import hashlib
import urllib.parse
from dataclasses import dataclass, field
from sys import getsizeof

from mitmproxy import http
from mitmproxy.net.http import url

from .accounts import rotating_kind, stable_identity
from .redact import SECRET_QUERY_PARAMS, is_credential_header

ANONYMOUS = "anonymous"
_COOKIE_HEADERS = frozenset({"cookie"})
_DOMAIN = b"llm-reasoning-proxy/credential/v1\0"
_ACCOUNT_DOMAIN = b"llm-reasoning-proxy/account/v1\0"


@dataclass(frozen=True, slots=True)
class Scope:
    host: str
    credential: str

    @property
    def anonymous(self) -> bool:
        """No credential at all: every such caller of the host shares this scope and cannot be told apart."""
        return self.credential == ANONYMOUS

    def __str__(self) -> str:
        return f"{self.host}|{self.credential}"


def _digest(domain: bytes, values: list[str]) -> str:
    return hashlib.sha256(domain + "\0".join(values).encode("utf-8", "surrogateescape")).hexdigest()[:32]


def credential_fingerprint(values: list[str]) -> str:
    """The hash of raw credential values (`name:value`, `?name=value`)."""
    return _digest(_DOMAIN, values) if values else ANONYMOUS


def account_fingerprint(values: list[str]) -> str:
    """The hash of values one or more of which is an account read off a rotating credential (`name=kind:identity`):
    in a domain of its own, so it never equals `credential_fingerprint` of any raw values."""
    return _digest(_ACCOUNT_DOMAIN, values) if values else ANONYMOUS


@dataclass(frozen=True, slots=True)
class Identity:
    """What identifies a request's caller: the values its scope is the hash of."""

    values: tuple[str, ...] = field(repr=False)  # credentials: never shown
    derived: bool  # a rotating credential stands there as the account it names
    rotating: str | None  # a credential that rotates with no account readable in it (what kind, never its value)
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        values = list(self.values)
        fingerprint = account_fingerprint(values) if self.derived else credential_fingerprint(values)
        object.__setattr__(self, "fingerprint", fingerprint)


@dataclass(frozen=True, slots=True)
class Caller:
    """What a request's scope is read from, as the request was when taken: later addons may change the request (its
    headers, its path) before the scope is read, and a scope must be the client's, as capture and repair both read it.
    Taking it holds on to what the request already holds, and reads nothing."""

    fields: tuple[tuple[bytes, bytes], ...]  # the header fields, as mitmproxy stores them (a new tuple on each change)
    scheme: bytes
    host: str
    port: int
    path: bytes

    @classmethod
    def of(cls, request: http.Request) -> Caller:
        data = request.data
        return cls(data.headers.fields, data.scheme, data.host, data.port, data.path)

    @property
    def text_path(self) -> str:
        """`request.path`."""
        return _text(self.path)

    def url(self) -> str:
        """`request.url`, of a request that is not a CONNECT."""
        return url.unparse(_text(self.scheme), self.host, self.port, self.text_path)

    def query(self) -> tuple[tuple[str, str], ...]:
        """`request.query`'s items, as mitmproxy reads them off the request's URL."""
        return tuple(url.decode(urllib.parse.urlparse(self.url()).query))


def caller_identity(request: http.Request, also: frozenset[str] = frozenset()) -> Identity:
    """What identifies the caller, in a fixed order: `name:value` of each credential header (`name=kind:identity`
    where the value is a rotating credential whose account can be read), `?name=value` of each secret query
    parameter; the cookie only when there is nothing else."""
    return identity_of(Caller.of(request), also)


def identity_of(caller: Caller, also: frozenset[str] = frozenset()) -> Identity:
    """`caller_identity` of the request `caller` was taken from."""
    fields = caller.fields
    headers = tuple(fields[at] for at in _credential_places(tuple(name for name, _ in fields), also))
    query = tuple(
        (name, value)
        for name, value in (caller.query() if b"?" in caller.path else ())  # parsing costs
        if name.lower() in SECRET_QUERY_PARAMS
    )
    size = sum(getsizeof(name) + getsizeof(value) + _PAIR_BYTES for name, value in (*headers, *query))
    return (_remembered_identity if size <= _REMEMBERED_CREDENTIAL_BYTES else _identity)(headers, query)


def _credential_places(names: tuple[bytes, ...], also: frozenset[str]) -> tuple[int, ...]:
    """Where among a request's header names the credentials are."""
    if getsizeof(names) + sum(map(getsizeof, names)) > _REMEMBERED_NAMES_BYTES:
        return _find_credentials(names, also)
    return _remembered_places(names, also)


def _find_credentials(names: tuple[bytes, ...], also: frozenset[str]) -> tuple[int, ...]:
    return tuple(at for at, name in enumerate(names) if is_credential_header(_text(name), also))


# A client sends the same header names in the same order request after request: where its credentials are among
# them is remembered for the last 256 lists of names that take up to 4 KiB as Python holds them (the tuple and each
# name: some 80 names of usual length), about 2 MiB at most with the answers.
_REMEMBERED_NAMES_BYTES = 4 * 1024
_remembered_places = functools.lru_cache(maxsize=256)(_find_credentials)


def _text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")  # as mitmproxy reads a header


def _identity(headers: tuple[tuple[bytes, bytes], ...], query: tuple[tuple[str, str], ...]) -> Identity:
    credentials = sorted((_text(name).lower(), _text(value)) for name, value in headers)
    secret_query = sorted(query)
    chosen = [(name, value) for name, value in credentials if name not in _COOKIE_HEADERS]
    if not chosen and not secret_query:
        return Identity(tuple(f"{name}:{value}" for name, value in credentials), derived=False, rotating=None)
    entries: list[tuple[str, str, str]] = []  # (name, what stands for the value, the entry)
    derived, rotating = False, None
    for name, value in chosen:
        account = stable_identity(name, value)
        if account is not None:
            entries.append((name, account, f"{name}={account}"))
            derived = True
        else:
            entries.append((name, value, f"{name}:{value}"))
            rotating = rotating or rotating_kind(value)
    for name, value in secret_query:
        rotating = rotating or rotating_kind(value)
    values = [entry for _, _, entry in sorted(entries)] + sorted(f"?{name}={value}" for name, value in secret_query)
    return Identity(tuple(values), derived=derived, rotating=rotating)


# Every LLM request asks for its caller's identity on its way to the provider, and a client sends the same
# credentials turn after turn: reading and hashing them again each time was the largest part of a request's check.
# The last 256 sets of credentials that take up to 8 KiB each as Python holds them (what real keys and tokens take,
# many times over; each name and value counts with the tuple that pairs them, so that a thousand tiny ones count for
# what they hold) are remembered, in this process's memory only: about 6 MiB at most with the Identity made of each,
# however many credentials a client makes up.
_REMEMBERED_CREDENTIAL_BYTES = 8 * 1024
_remembered_identity = functools.lru_cache(maxsize=256)(_identity)
# What a credential's name and value take beside themselves: the tuple that pairs them and its place.
_PAIR_BYTES = 128


def scope_of(request: http.Request | Caller, identity: Identity) -> Scope:
    """The scope of a request (or what was taken of it) whose caller's identity was already read."""
    return Scope(host=f"{request.host.lower()}:{request.port}", credential=identity.fingerprint)
