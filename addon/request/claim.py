"""Which requests are LLM traffic the proxy reads, what model each is for, and whose it is."""

from __future__ import annotations

from typing import Any, NamedTuple

from mitmproxy import http

from .. import wire
from ..shared.limits import MAX_DECODED_BYTES, bounded_name
from ..shared.scope import Caller, Identity, Scope, identity_of, scope_of
from ..wire import WireFormat
from ..wire.content_encoding import Undecodable, message_body


class UnreadableBody(ValueError):
    """An LLM route's body that cannot be read within the addon's bounds: it goes on untouched."""


def claim_request(request: http.Request) -> tuple[WireFormat, bytes] | None:
    """The wire format of an LLM request and its decoded body, or None for traffic to leave alone.

    Nothing is decoded before the method and path say the request may be LLM traffic, and then no more than
    MAX_DECODED_BYTES; a body that decodes to more, or is not what its encoding says, raises UnreadableBody.
    """
    data = request.data  # its bytes as they came: mitmproxy's attributes decode them anew on each access
    if data.method != b"POST" or data.content is None:  # None: streamed through
        return None
    routes = wire.routes_raw(data.path)
    if not routes:
        return None
    try:
        body = message_body(request, MAX_DECODED_BYTES)
    except Undecodable as e:
        raise UnreadableBody(f"request body {e}") from None
    path = request.path
    wire_format = next((candidate for candidate in routes if candidate.claims("POST", path, body)), None)
    return (wire_format, body) if wire_format is not None else None


def may_hold_foreign(wire_format: WireFormat, body: bytes) -> bool:
    """Whether a body may carry a signed value (and so one issued elsewhere), judged without parsing it."""
    return any(marker in body for marker in wire_format.signed_markers)


def request_model(wire_format: WireFormat, path: str, body: bytes, doc: Any | None) -> str | None:
    """The model a request is for, as the proxy keeps it: a name past MAX_NAME_CHARS (a client's or an attacker's)
    is cut and made unique by its hash, since it is logged and stored with every value of the answer."""
    return bounded_name(wire_format.request_model(path, body, doc))


class Whose(NamedTuple):
    """Whose a request is: the scope its answer's reasoning is filed under, and how a repair may look it up."""

    identity: Identity
    scope: Scope
    # Callers without any credential share one scope: there, only ids the provider issued find reasoning.
    by_content: bool


def whose(caller: Caller, credential_headers: frozenset[str], anonymous_fallback: bool) -> Whose:
    identity = identity_of(caller, credential_headers)
    scope = scope_of(caller, identity)
    return Whose(identity, scope, not scope.anonymous or anonymous_fallback)
