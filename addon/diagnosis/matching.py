"""Matching an error body's texts against every family's rules: the one diagnosis of an error response.

The innermost texts are matched first, each against the rule table in order; the first rule that matches wins.
Within a family, a rule whose text starts like another's comes first (each such pair says so); the rules of
different families match different sentences. Generic rules are tried only after every specific one failed on
every text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .. import dialects
from ..dialects import openrouter
from ..dialects.base import Advice, Kind, Rule, Verdict, places
from ..shared.redact import redact_text
from .envelopes import FoundText, collect, decode, parse
from .rules import UNKNOWN, Diagnosis

MAX_MESSAGE = 1000
# Redacting the head only is enough: the message is cut to MAX_MESSAGE afterwards.
_REDACT_HEAD = 4 * MAX_MESSAGE

RULE_TABLE: tuple[Rule, ...] = dialects.rules()

# Every rule id, with its kind and field (a rule id keeps one kind whichever provider's text it matches): the
# formats' static checks (`WireFormat.check`) name the rules a request breaks with these ids.
RULES: dict[str, tuple[Kind, str | None]] = {rule.rule: (rule.kind, rule.field) for rule in reversed(RULE_TABLE)}
# Rules whose text names no cause (Copilot's bare "invalid request body", OpenRouter's preamble).
GENERIC_RULES = frozenset(rule.rule for rule in RULE_TABLE if rule.generic)
# The advice rules carry of their own, by rule id (the first rule of an id that gives one).
RULE_ADVICE: dict[str, Advice] = {rule.rule: rule.advice for rule in reversed(RULE_TABLE) if rule.advice is not None}
# The rules whose refused value is judged against the proxy's capture, by rule id and provider (one id's texts from two
# providers need each its own words): the advice for a verdict in the provider's words, where it has any.
RULE_VERDICTS: dict[tuple[str, str], Mapping[Verdict, str]] = {
    (rule.rule, rule.provider): rule.verdicts for rule in reversed(RULE_TABLE) if rule.verdicts is not None
}
# Rules a signature placeholder is the remedy of, where the format's repair sends one.
PLACEHOLDER_RULES = frozenset(rule.rule for rule in RULE_TABLE if rule.placeholder_remedy)

# What the client must send back, named in the gateway's wire format, for the fields upstream texts name.
_GATEWAY_FIELDS = {dialect.name: dialect.gateway_fields for dialect in dialects.DIALECTS if dialect.gateway_fields}
_PARAM_INDEX = re.compile(r"^(?:messages|input|contents)\.?\[(\d+)\]")


def _match(rule: Rule, found_text: FoundText, folded: str) -> Diagnosis | None:
    if rule.needle not in folded:
        return None
    match = rule.pattern.search(found_text.text)
    if match is None:
        return None
    found = places(match)
    if rule.refine is not None:
        rule.refine(match, found)
    field = found.pop("field", rule.field)
    wrapped_by = next((w for w in found_text.context.wrappers if w != rule.provider), None)
    field = _GATEWAY_FIELDS.get(wrapped_by, {}).get(field, field) if wrapped_by else field
    if found.get("index") is None:
        found["index"] = _param_index(found_text.envelope)
    return Diagnosis(
        rule=rule.rule,
        summary=rule.summary,
        provider=rule.provider,
        kind=rule.kind,
        field=field,
        message=_clean(found_text.text),
        wrapped_by=wrapped_by,
        **found,
    )


def _param_index(envelope: dict | None) -> int | None:
    """OpenAI-style envelopes point at the message in `param` ("messages.[6].role")."""
    param = envelope.get("param") if envelope else None
    at = _PARAM_INDEX.match(param) if isinstance(param, str) else None
    return int(at.group(1)) if at else None


def _clean(text: str) -> str:
    return redact_text(text.strip()[:_REDACT_HEAD])[:MAX_MESSAGE]


def _unknown_provider(found_text: FoundText | None, doc_is_anthropic: bool) -> str:
    """Who sent an unrecognised text, only from what the body says outright."""
    if found_text is None:
        return "anthropic" if doc_is_anthropic else "unknown"
    context, envelope = found_text.context, found_text.envelope or {}
    if context.wrappers and context.wrappers[0] == "openrouter":
        name = (context.provider_name or "").strip().lower()
        return openrouter.PROVIDER_NAMES.get(name, "openrouter")
    if "copilot" in context.wrappers:
        return "copilot"
    if "provider returned error" in found_text.text.lower():  # OpenRouter's own words, without its metadata
        return "openrouter"
    if doc_is_anthropic:
        return "anthropic"
    status = envelope.get("status")
    if isinstance(status, str) and status.isupper() and "_" in status:  # google.rpc codes: "INVALID_ARGUMENT"
        return "gemini"
    return "unknown"


def _classify(status: int, body: bytes | str) -> Diagnosis:
    text = decode(body)
    doc = parse(text)
    texts = collect(text, doc)
    innermost_first = list(reversed(texts))
    folded = [" ".join(found.text.lower().split()) for found in innermost_first]
    for generic in (False, True):
        for found_text, folded_text in zip(innermost_first, folded):
            for rule in RULE_TABLE:
                if rule.generic is generic:
                    diagnosis = _match(rule, found_text, folded_text)
                    if diagnosis is not None:
                        return diagnosis
    innermost = innermost_first[0] if innermost_first else None
    provider = _unknown_provider(innermost, isinstance(doc, dict) and doc.get("type") == "error")
    wrappers = innermost.context.wrappers if innermost else ()
    return Diagnosis(
        rule=UNKNOWN,
        summary=f"no known rule matches this HTTP {status} error",
        provider=provider,
        kind="unknown",
        message=_clean(innermost.text if innermost else text),
        index=_param_index(innermost.envelope) if innermost else None,
        wrapped_by=next((w for w in wrappers if w != provider), None),
    )


def classify(status: int, body: bytes | str) -> Diagnosis:
    """The best matching rule for an error response; rule "unknown" (with the text) when nothing matches.

    The innermost text that a specific rule matches wins; generic texts (Copilot's bare "invalid request body",
    OpenRouter's "reasoning details" preamble) only when no specific rule matched any text. A text that came
    inside a gateway's envelope (OpenRouter's metadata.raw, Copilot's `invalid_request_body` code, a LiteLLM
    exception) names that gateway in `wrapped_by`.
    """
    try:
        return _classify(status, body)
    except Exception:  # noqa: BLE001 - a diagnosis helper must never break the response path
        return Diagnosis(
            rule=UNKNOWN,
            summary=f"no known rule matches this HTTP {status} error",
            provider="unknown",
            kind="unknown",
            message=_clean(decode(body)) if isinstance(body, (str, bytes)) else "",
        )
