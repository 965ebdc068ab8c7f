"""Google's errors: the Gemini API, Vertex AI and their OpenAI-compatible endpoints.

Documentation: https://ai.google.dev/gemini-api/docs/thought-signatures (Gemini API) and
https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures (Vertex AI); both texts of a missing
signature link there. Each rule's other sources are named with it.
"""

from __future__ import annotations

import re
from typing import Any

from .base import VERTEX_SIGNATURE_MISSING as VERTEX_SIGNATURE_MISSING
from .base import B, ChatSignature, Dialect, Rule, path_places, places, rx
from .openai import deployment_model

GEMINI_SIGNATURE_MISSING = "gemini_signature_missing"
SIGNATURE_NOT_BASE64 = "signature_not_base64"
SIGNATURE_INVALID = "signature_invalid"
GEMINI_TURN_ORDER = "gemini_turn_order"
GEMINI_FUNCTION_RESPONSE_COUNT = "gemini_function_response_count"

# "function call `default_api:name`" or, with the backticks lost, "function call default_api:name" (the name may
# even run into the next word: "…-serverin the 12. content block").
_FUNCTION = r"function\s+call\s+(?:`(?P<fq>[^`]{1,300})`|(?P<fb>[^\s`]{1,300}?))"
_POSITION = rx(_FUNCTION, r"\s*,\s*position\s+(?P<pos>\d+)")
_SIGNATURE_MISSING = "a function call of the current turn was sent back without the thought signature issued with it"


def _position(match: re.Match[str], found: dict[str, Any]) -> None:
    """The Gemini API names the call after its complaint: "Additional data, function call `…` , position 2"."""
    detail = _POSITION.search(match.string, match.end())
    if detail is not None:
        found.update(places(detail))


RULES: tuple[Rule, ...] = (
    Rule(
        GEMINI_SIGNATURE_MISSING,
        "gemini",
        "missing",
        "thought_signature",
        "thought",
        rx(r"function\s+call\s+is\s+missing\s+a\s*thought_?signature\s+in\s+function_?call\s+parts"),
        _SIGNATURE_MISSING,
        refine=_position,
        placeholder_remedy=True,
    ),
    Rule(
        VERTEX_SIGNATURE_MISSING,
        "vertex",
        "missing",
        "thought_signature",
        "content block",
        rx(
            _FUNCTION,
            r"\s*in\s+the\s+(?P<pos>\d+)\.?\s*content\s+block\s+is\s+missing\s*a\s*",
            B,
            "thought_?signature",
        ),
        _SIGNATURE_MISSING,
        placeholder_remedy=True,
    ),
    # https://github.com/google-gemini/gemini-cli/issues/8003
    Rule(
        SIGNATURE_NOT_BASE64,
        "gemini",
        "invalid",
        "thought_signature",
        "base64",
        rx(
            r"Invalid\s+value\s+at\s+'(?P<path>[^']{0,200}thought_?signature[^']{0,100})'[^\n]{0,400}?",
            r"Base64\s+decoding\s+failed",
        ),
        "a thought signature is not valid base64 (its alphabet or padding was changed on the way back)",
        refine=path_places,
    ),
    # https://github.com/google-gemini/gemini-cli/issues/13467, https://github.com/anomalyco/opencode/issues/4832;
    # "Invalid thought signature" is LiteLLM's wording of it.
    Rule(
        SIGNATURE_INVALID,
        "gemini",
        "invalid",
        "thought_signature",
        "thought signature",
        rx(r"thought\s+signature\s+is\s+not\s+valid|corrupted\s+thought\s+signature|invalid\s+thought\s+signature"),
        "a thought signature was sent back that the model did not issue for that part (altered, truncated, or "
        "from another response or model)",
        verdicts={},  # judged, with the advice every provider shares
    ),
    # https://github.com/continuedev/continue/issues/11164
    Rule(
        GEMINI_TURN_ORDER,
        "gemini",
        "invalid",
        "contents",
        "turn comes immediately after",
        rx(
            r"function\s+call\s+turn\s+comes\s+immediately\s+after\s+a\s+user\s+turn\s+or\s+after\s+a\s+function\s+",
            r"response\s+turn|function\s+response\s+turn\s+comes\s+immediately\s+after\s+a\s+function\s+call\s+turn",
        ),
        "a function call turn does not follow a user or function response turn (or a function response turn "
        "does not follow a function call turn)",
    ),
    # https://github.com/google-gemini/gemini-cli/issues/17208
    Rule(
        GEMINI_FUNCTION_RESPONSE_COUNT,
        "gemini",
        "invalid",
        "functionResponse",
        "function response parts",
        rx(
            r"number\s+of\s+function\s+response\s+parts\s+is\s+equal\s+to\s+the\s+number\s+of\s+function\s+call\s+parts"
        ),
        "the function response turn does not answer every function call of the turn before it",
    ),
)


class Gemini(Dialect):
    """Google's Gemini API and Vertex AI, and Gemini's OpenAI-compatible endpoint (`…/v1beta/openai/chat/completions`),
    which wants a current-turn function call's signature back in `extra_content.google.thought_signature`
    (https://ai.google.dev/gemini-api/docs/openai#thinking)."""

    name = "gemini"
    otel_name = "gcp.gemini"
    known_hosts = ("generativelanguage.googleapis.com",)
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return "/openai/" in path and deployment_model(path) is None  # Azure OpenAI's routes are /openai/deployments/

    def chat_signature(self, model: str) -> ChatSignature | None:
        return ChatSignature(GEMINI_SIGNATURE_MISSING, "extra_content") if "gemini-3" in model else None


DIALECT = Gemini()
