"""Which upstream and which credential a request belongs to.

Reasoning captured for one account or host must never be replayed with
another, so every cache entry lives in the scope of the request that produced
it: the upstream host and a one-way hash of the credential (never the
credential itself).

The credential is every header that carries one (`redact.is_credential_header`:
the providers' and gateways' known names, any name that says it holds a key,
token, secret or authorization, and names the user adds with
`llm_credential_headers`) and every secret query parameter (`key=`, ...).
Cookies count only when nothing else identifies the caller: they change within
a session, and would split a scope that a key already identifies.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mitmproxy import http

from .redact import SECRET_QUERY_PARAMS, is_credential_header

ANONYMOUS = "anonymous"
_COOKIE_HEADERS = frozenset({"cookie"})
_DOMAIN = b"llm-reasoning-proxy/credential/v1\0"


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


def credential_fingerprint(values: list[str]) -> str:
    if not values:
        return ANONYMOUS
    digest = hashlib.sha256(_DOMAIN + "\0".join(values).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def credential_values(request: http.Request, also: frozenset[str] = frozenset()) -> list[str]:
    """What identifies the caller, in a fixed order: `name:value` of each credential header, `?name=value` of each
    secret query parameter; the cookie only when there is nothing else."""
    headers = sorted(
        (name.lower(), value) for name, value in request.headers.items(multi=True) if is_credential_header(name, also)
    )
    values = [f"{name}:{value}" for name, value in headers if name not in _COOKIE_HEADERS]
    values += sorted(
        f"?{name}={value}" for name, value in request.query.items(multi=True) if name.lower() in SECRET_QUERY_PARAMS
    )
    return values or [f"{name}:{value}" for name, value in headers if name in _COOKIE_HEADERS]


def request_scope(request: http.Request, also: frozenset[str] = frozenset()) -> Scope:
    """The scope of a request; `also` names further credential headers (lower case, `llm_credential_headers`)."""
    return Scope(
        host=f"{request.host.lower()}:{request.port}",
        credential=credential_fingerprint(credential_values(request, also)),
    )
