"""GitHub Copilot's errors (api.githubcopilot.com, and local gateways such as copilot-api that pass them on).

Copilot documents none of them; each rule names the captured error it comes from. Copilot also passes the texts of
the provider behind it on (Vertex AI's for Gemini, Anthropic's on /v1/messages): those are matched by that
provider's rules, with the field named as Copilot's clients send it back (`GATEWAY_FIELDS`).
"""

from __future__ import annotations

import re
from typing import Any

from .base import ANTHROPIC_THINKING_EXPECTED, VERTEX_SIGNATURE_MISSING, ChatSignature, Dialect, Rule, rx

COPILOT_SCHEMA = "copilot_schema"
UNSUPPORTED_API_FOR_MODEL = "unsupported_api_for_model"
REASONING_EFFORT_UNSUPPORTED = "reasoning_effort_unsupported"
COPILOT_INVALID_REQUEST_BODY = "copilot_invalid_request_body"

# What a Copilot client sends back for a field an upstream text names.
GATEWAY_FIELDS = {"thought_signature": "reasoning_opaque"}

# Claude's 5-generation models always think on Copilot (`"adaptive_thinking": "required"` in its model list) and return
# only `reasoning_opaque` (Anthropic's signature), no `reasoning_text`
# (https://github.com/github/copilot-sdk/issues/2352).
_CLAUDE_ALWAYS_THINKING = re.compile(r"^claude-(?:(?:sonnet|opus)-5|opus-4\.8)\b")

_SCHEMA_LOCATION = rx(r"Location:\s*(?P<loc>\S+)")
_SCHEMA_PROPERTY = re.compile(r"/properties/([^/\s.,]+)")


def _schema_field(match: re.Match[str], found: dict[str, Any]) -> None:
    """The field a schema failure is about: the last property of its first JSON-schema location."""
    location = _SCHEMA_LOCATION.search(match.string, match.end())
    names = _SCHEMA_PROPERTY.findall(location.group("loc")) if location else []
    found["field"] = names[-1] if names else None


RULES: tuple[Rule, ...] = (
    # https://github.com/microsoft/vscode-copilot-release/issues/7783,
    # https://github.com/caozhiyuan/copilot-api/issues/176
    Rule(
        COPILOT_SCHEMA,
        "copilot",
        "schema",
        None,
        "failed to validate schema",
        rx(r"invalid\s+request\s+body,\s*failed\s+to\s+validate\s+schema"),
        "the request body does not fit Copilot's schema",
        refine=_schema_field,
    ),
    # Code unsupported_api_for_model. https://github.com/decolua/9router/issues/1062 quotes a later wording, "model …
    # does not support Responses API.", that this rule does not match.
    Rule(
        UNSUPPORTED_API_FOR_MODEL,
        "copilot",
        "unsupported",
        "model",
        "responses api",
        rx(r"model\s+\S+\s+is\s+not\s+supported\s+via\s+Responses\s+API"),
        "the model is not served on this API (Copilot serves Gemini on /chat/completions, not /responses)",
    ),
    # `{"code":"invalid_reasoning_effort","message":…}` (https://github.com/BerriAI/litellm/issues/28053,
    # https://github.com/pydantic/pydantic-ai/issues/8232)
    Rule(
        REASONING_EFFORT_UNSUPPORTED,
        "copilot",
        "unsupported",
        "reasoning_effort",
        "does not support reasoning effort",
        rx(r"model\s+\S+\s+does\s+not\s+support\s+reasoning\s+effort"),
        "the model does not take a reasoning effort",
        advice="leave the reasoning effort out for this model: it does not take one",
    ),
    # https://github.com/zed-industries/zed/issues/43024 (a missing reasoning_opaque),
    # https://github.com/ericc-ch/copilot-api/issues/151
    Rule(
        COPILOT_INVALID_REQUEST_BODY,
        "copilot",
        "invalid",
        None,
        "invalid request body",
        rx(r"^\s*invalid\s+request\s+body\s*\.?\s*$"),
        "Copilot refused the body without saying why (seen for a missing or altered reasoning_opaque, and for "
        '"content": [] on an assistant message)',
        generic=True,
        # Only when the format's checks found nothing either (else the advice is the one for what they found).
        advice=(
            "Copilot does not say what it refused, and the request breaks none of the rules the proxy checks: compare "
            "it with the last request that worked (scripts/check on a flow file of both)"
        ),
    ),
)


class Copilot(Dialect):
    """GitHub Copilot serves Gemini 3 on chat completions and wants a current-turn function call's signature back as
    the message's `reasoning_opaque`, or Vertex AI's error comes back through it (captures in
    tests/fixtures/copilot/). Claude there is Anthropic behind Copilot: a model that always thinks wants its
    `reasoning_opaque` back on the tool-call message, the thinking block Anthropic requires before `tool_use`. On
    `/v1/messages` Claude takes Anthropic's own blocks, and `/responses` serves GPT-5 as OpenAI does."""

    name = "copilot"
    otel_name = "github_copilot"
    known_hosts = ("githubcopilot.com",)
    host = "api.githubcopilot.com"
    rules = RULES
    gateway_fields = GATEWAY_FIELDS

    def serves(self, host: str, path: str, model: str) -> bool:
        return "githubcopilot" in host

    def chat_signature(self, model: str) -> ChatSignature | None:
        if "gemini-3" in model:
            return ChatSignature(VERTEX_SIGNATURE_MISSING, "reasoning_opaque")
        if _CLAUDE_ALWAYS_THINKING.match(model):
            return ChatSignature(ANTHROPIC_THINKING_EXPECTED, "reasoning_opaque")
        return None


DIALECT = Copilot()
