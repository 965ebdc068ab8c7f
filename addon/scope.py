"""Which upstream and which credential a request belongs to.

Reasoning captured for one account or host must never be replayed with
another, so every cache entry lives in the scope of the request that produced
it: the upstream host and a one-way hash of the credential (never the
credential itself).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from mitmproxy import http

# Headers that identify the caller to an LLM provider. Cookies are left out:
# they change between requests of one session and would split the scope.
CREDENTIAL_HEADERS = ("authorization", "api-key", "x-api-key", "x-goog-api-key")
CREDENTIAL_QUERY_PARAMS = ("key",)
_DOMAIN = b"llm-reasoning-proxy/credential/v1\0"


@dataclass(frozen=True, slots=True)
class Scope:
    host: str
    credential: str

    def __str__(self) -> str:
        return f"{self.host}|{self.credential}"


def credential_fingerprint(values: list[str]) -> str:
    if not values:
        return "anonymous"
    digest = hashlib.sha256(_DOMAIN + "\0".join(values).encode("utf-8", "surrogateescape"))
    return digest.hexdigest()[:32]


def request_scope(request: http.Request) -> Scope:
    values = [f"{name}:{request.headers[name]}" for name in CREDENTIAL_HEADERS if name in request.headers]
    values += [f"?{name}={request.query[name]}" for name in CREDENTIAL_QUERY_PARAMS if name in request.query]
    return Scope(host=f"{request.host.lower()}:{request.port}", credential=credential_fingerprint(values))
