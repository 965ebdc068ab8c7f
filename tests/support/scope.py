"""The scope of a whole request, read in one step: what the tests compare the addon's scopes with.

The addon itself reads a request's caller once (`caller_identity`) and makes its scope of that (`scope_of`); the
tests want both steps at once.
"""

from __future__ import annotations

from llm_reasoning_proxy.shared.scope import Scope, caller_identity, scope_of
from mitmproxy import http


def request_scope(request: http.Request, also: frozenset[str] = frozenset()) -> Scope:
    """The scope of a request; `also` names further credential headers (lower case, `llm_credential_headers`)."""
    return scope_of(request, caller_identity(request, also))
