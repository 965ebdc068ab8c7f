"""Holding a refused signed or encrypted value against what the proxy captured for its place: which value of the
request an error refuses (the one its text names, by id or by the ends of the value it quotes, else the one that
differs from the capture), and what it is: sent back as issued (the provider refused its own value), altered by the
client, never seen by the proxy, or never asked for. The explanation (explanation.py) says it."""

from __future__ import annotations

from dataclasses import dataclass

from ..wire.base import SentValue
from .matching import Verdict
from .rules import Diagnosis

# What the proxy found of a refused value, held against its capture: the advice every provider shares (a rule may
# give its own, in its provider's words).
VERDICT_ADVICE: dict[Verdict, str] = {
    "as_issued": (
        "the client sent back exactly the value the provider issued (the proxy captured the same), so the provider "
        "refused its own value: not the client's fault; retry later, and if it keeps failing leave that reasoning "
        "out (or start a new conversation)"
    ),
    "altered": (
        "the client sent a value other than the one the provider issued there (the proxy captured that one): the "
        "client altered it (re-encoded, truncated, edited, or took it from another response); the proxy never "
        "overwrites what the client sends: fix the client, or start a new conversation"
    ),
    "unseen": (
        "the proxy never saw this value issued (its answer did not come through the proxy, or expired from the "
        "cache), so it cannot tell whether the client altered it: start a new conversation through the proxy"
    ),
    "none_differs": (
        "the proxy holds no value that differs from the one sent for its place; it never saw some of them issued "
        "(their answers did not come through the proxy, or expired from the cache): start a new conversation "
        "through the proxy"
    ),
    "not_asked": "the request never asked the provider to return this value, so no one could send it back",
}


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the proxy found of the signed or encrypted value an error refuses, held against what it captured."""

    verdict: Verdict | None  # None: nothing to say of it (an item sent without its value, by a request that asked)
    culprit: SentValue | None  # the value: where the text names it, or it alone differs from the capture

    @property
    def clients_own(self) -> bool:
        """Whether the value refused is one the client sent of its own (altered, or never seen by the proxy), not
        one the proxy holds: no cache entry is to blame for it."""
        return self.culprit is not None and self.verdict in ("altered", "unseen")


def verdict_of(value: SentValue) -> Verdict | None:
    """What a sent value is, against the one the proxy captured for its place."""
    if value.value is None:
        return None if value.asked else "not_asked"
    if value.captured is None:
        return "unseen"
    return "as_issued" if value.value == value.captured else "altered"


def _named(diagnosis: Diagnosis, values: list[SentValue]) -> list[SentValue] | None:
    """The sent values the text names: by item or call id, or by the ends of the value it quotes (the middle
    elided); None when it names none."""
    if diagnosis.item_ids:
        ids = set(diagnosis.item_ids)
        return [value for value in values if ids & set(value.item_ids)]
    if diagnosis.quoted_ends is not None:
        head, tail = diagnosis.quoted_ends
        return [v for v in values if v.value is not None and v.value.startswith(head) and v.value.endswith(tail)]
    return None


def judge(diagnosis: Diagnosis, values: list[SentValue]) -> Judgement | None:
    """Which sent value an error refuses and what it is: the one the text names, else the first that differs from
    the proxy's capture; for a text that names none, where none differs, whether every value was sent as issued."""
    named = _named(diagnosis, values)
    candidates = [v for v in values if v.value is not None] if named is None else named
    if not candidates:
        return None
    altered = next((value for value in candidates if verdict_of(value) == "altered"), None)
    if altered is not None:
        return Judgement("altered", altered)
    if named is not None:
        return Judgement(verdict_of(named[0]), named[0])
    as_issued = all(verdict_of(value) == "as_issued" for value in candidates)
    return Judgement("as_issued" if as_issued else "none_differs", None)
