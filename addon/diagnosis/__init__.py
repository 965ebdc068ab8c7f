"""Explaining a provider's error response: which rule the request broke, and where it points.

`classify(status, body)` reads an error body as a provider (or a gateway in front of one) sent it, finds every
error text in it (`error_messages`, in `envelopes`), and matches the innermost texts first against the rules of
each provider dialect (addon/dialects/): the known
reasoning round-trip errors, the errors a target gives for reasoning state another model, account or conversation
issued ("foreign" state), and a few neighbouring tool-pairing errors. Numbers and ids are taken exactly as the text
gives them (`rules`); the message kept is redacted. Nothing here raises: an unreadable body is an "unknown"
diagnosis.
"""

from __future__ import annotations

from ..dialects.base import Advice, Kind
from .envelopes import MAX_SCAN, error_messages
from .matching import GENERIC_RULES, MAX_MESSAGE, PLACEHOLDER_RULES, RULE_ADVICE, RULE_TABLE, RULES, classify
from .rules import UNKNOWN, Diagnosis

__all__ = [
    "GENERIC_RULES",
    "MAX_MESSAGE",
    "MAX_SCAN",
    "PLACEHOLDER_RULES",
    "RULES",
    "RULE_ADVICE",
    "RULE_TABLE",
    "UNKNOWN",
    "Advice",
    "Diagnosis",
    "Kind",
    "classify",
    "error_messages",
]
