"""Which host, account and model issued each reasoning value the proxy has seen.

A user who switches models mid-conversation (Claude to Gemini and back, one Azure deployment to another) makes the
client send signatures and encrypted reasoning issued for model X to model Y, and Y refuses the request (Anthropic
"Invalid `signature` in `thinking` block", Gemini "Corrupted thought signature.", OpenAI `invalid_encrypted_content`,
xAI "Could not decrypt ..."). The proxy captured those values, so it is the one place that knows where each came
from. It keeps, for every signed or encrypted value of every answer (with tool calls or without), a digest of the
value and the origin that issued it; a request that carries a value known to come from another origin gets it
removed, in the way its wire format accepts (`WireFormat.remove_foreign`). A value the proxy never saw is never
touched.

Only values a provider verifies count (signatures, encrypted content); reasoning text is read as plain text
everywhere and is not foreign anywhere.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ..cache import ReasoningStore
from ..shared import jsoncodec
from ..shared.records import ReasoningRecord
from ..wire.base import ForeignLookup

_DOMAIN = b"llm-reasoning-proxy/issued-value/v1\0"
# Most values of one answer whose origin is kept. Origins are bounded in count like records, but a record is one
# answer and an answer (from any host a client sends a request to) can hold thousands of signed values: without a
# bound one answer would evict the origins of every other account. A real answer holds a few; values past the
# bound are not known, so never removed.
MAX_ISSUED_PER_ANSWER = 256
# Values no provider issues and any client may send: Google's documented dummy thought signatures
# (https://ai.google.dev/gemini-api/docs/thought-signatures#faqs), literal and base64. One that came back in some
# answer says nothing of where another caller's came from.
_DUMMY_SIGNATURES = ("skip_thought_signature_validator", "context_engineering_is_the_way_to_go")
NEVER_ISSUED = frozenset(
    {*_DUMMY_SIGNATURES, *(base64.b64encode(dummy.encode()).decode() for dummy in _DUMMY_SIGNATURES)}
)


def value_digest(value: str) -> str:
    """How the cache knows a value: a one-way digest, never the value."""
    return hashlib.sha256(_DOMAIN + value.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value was issued: the scope (`host:port|account`) and the model the request named.

    `named`: the scope's account was read off the credential (a GitHub Copilot token names its account:
    `scope.Identity.derived`). Only between two such scopes is a different account known to be another account.
    Two API keys may belong to one account (whose provider takes each other's values), and a token that rotates
    with nothing readable in it (a Google OAuth access token, a JWT) gives the same account a new scope every
    hour: a value is never removed for an account difference the proxy cannot read."""

    scope: str
    model: str | None
    named: bool = False

    def encode(self) -> str:
        return jsoncodec.dumps([self.scope, self.model, *([True] if self.named else [])]).decode()

    @classmethod
    def decode(cls, text: str | bytes) -> Origin | None:
        try:
            scope, model, *rest = jsoncodec.loads(text)
        except (ValueError, TypeError):
            return None
        if not isinstance(scope, str) or not (model is None or isinstance(model, str)) or rest not in ([], [True]):
            return None
        return cls(scope, model, bool(rest))

    @classmethod
    def of(cls, meta: Mapping[str, Any]) -> Origin:
        """The origin of a request, from what the request hook noted on its flow (`flow.metadata`)."""
        return cls(meta["scope"], meta.get("request_model"), bool(meta.get("named_account")))

    def may_be(self, request: Origin) -> bool:
        """Whether a value issued here may belong in `request`: same host and model, and an account not known to
        differ."""
        host, _, account = self.scope.partition("|")
        request_host, _, request_account = request.scope.partition("|")
        same_account = account == request_account or not (self.named and request.named)
        return host == request_host and self.model == request.model and same_account

    def foreign_to(self, request: Origin) -> str:
        """Why a value issued here does not belong in `request`, for a person."""
        host, _, account = self.scope.partition("|")
        request_host, _, request_account = request.scope.partition("|")
        if host != request_host:
            return f"issued by {host}, not {request_host}"
        if account != request_account and self.named and request.named:
            return "issued to another account"
        model = f"model {self.model}" if self.model is not None else "a request that named no model"
        return f"issued for {model}, not {request.model}"


def _signed_strings(value: Any, keys: frozenset[str]) -> Iterator[str]:
    if isinstance(value, dict):
        for key, inner in value.items():
            if key in keys and isinstance(inner, str) and inner:
                yield inner
            else:
                yield from _signed_strings(inner, keys)
    elif isinstance(value, list):
        for inner in value:
            yield from _signed_strings(inner, keys)


def issued_values(record: ReasoningRecord, signed_fields: frozenset[str]) -> list[str]:
    """The signed or encrypted values an answer carried: on the turn and on each of its tool calls (the first
    MAX_ISSUED_PER_ANSWER)."""
    values = list(_signed_strings(record.fields, signed_fields))
    for call in record.tool_calls:
        values += _signed_strings(call.fields, signed_fields)
    return [value for value in dict.fromkeys(values) if value not in NEVER_ISSUED][:MAX_ISSUED_PER_ANSWER]


def foreign_lookup(store: ReasoningStore, request: Origin) -> ForeignLookup:
    """The lookup a wire format's removal uses for one request: a value is foreign when the proxy saw it issued,
    and never for this request's origin."""
    mine = request.encode()

    def foreign(values: list[str]) -> dict[str, str]:
        if not values:
            return {}
        digests = {value: value_digest(value) for value in dict.fromkeys(values) if value not in NEVER_ISSUED}
        known = store.get_origins(list(dict.fromkeys(digests.values())))
        why = {}
        for value, digest in digests.items():
            origins = known.get(digest)
            if not origins or mine in origins:
                continue
            decoded = [origin for origin in map(Origin.decode, sorted(origins)) if origin is not None]
            if decoded and not any(origin.may_be(request) for origin in decoded):
                why[value] = decoded[0].foreign_to(request)
        return why

    return foreign


def record_origins(store: ReasoningStore, origin: Origin, values: Iterable[str]) -> int:
    """Remembers that `origin` issued these values; returns how many."""
    digests = list(dict.fromkeys(value_digest(value) for value in values))
    if digests:
        store.put_origins(origin.encode(), digests)
    return len(digests)
