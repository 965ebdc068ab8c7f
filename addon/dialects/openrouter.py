"""OpenRouter's errors: its own words in front of the upstream provider's error, which comes in `metadata.raw`
with the provider's name in `metadata.provider_name`.

Documentation: https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks (its preamble links
there). Upstream texts are matched by their provider's rules, with the field named as OpenRouter's clients send it
back (`GATEWAY_FIELDS`).
"""

from __future__ import annotations

from .base import ENCRYPTED_CONTENT_FOREIGN, ChatSignature, Dialect, Rule, rx

OPENROUTER_REASONING_DETAILS = "openrouter_reasoning_details"

# What an OpenRouter client sends back for a field an upstream text names.
GATEWAY_FIELDS = {
    "thought_signature": "reasoning_details",
    "thinking block": "reasoning_details",
    "signature": "reasoning_details",
}
# `metadata.provider_name` (lower-cased), for an upstream text no rule knows.
PROVIDER_NAMES = {
    "google": "vertex",
    "google vertex": "vertex",
    "google ai studio": "gemini",
    "anthropic": "anthropic",
    "amazon bedrock": "bedrock",
    "moonshot ai": "moonshot",
    "z.ai": "zai",
    "minimax": "minimax",
    "alibaba": "dashscope",
    "deepseek": "deepseek",
    "openai": "openai",
    "azure": "azure",
}

RULES: tuple[Rule, ...] = (
    # https://github.com/hackerai-tech/hackerai/pull/1171 (the text is cut there, after "different model")
    Rule(
        ENCRYPTED_CONTENT_FOREIGN,
        "openrouter",
        "foreign",
        "reasoning_details",
        "produced under a different model",
        rx(
            r"encrypted\s+reasoning\s+or\s+compaction\s+content\s+that\s+was\s+produced\s+under\s+a\s+",
            r"different\s+model",
        ),
        "encrypted reasoning sent back was produced under another model",
    ),
    # The preamble in front of an upstream error (https://github.com/microsoft/vscode/issues/279676)
    Rule(
        OPENROUTER_REASONING_DETAILS,
        "openrouter",
        "missing",
        "reasoning_details",
        "openrouter reasoning details",
        rx(r"models\s+require\s+OpenRouter\s+reasoning\s+details\s+to\s+be\s+preserved"),
        "OpenRouter needs each assistant message's reasoning_details sent back unmodified",
        generic=True,
    ),
)


class OpenRouter(Dialect):
    """OpenRouter passes Gemini 3's signatures as `reasoning_details` entries, and wants them back there
    (https://openrouter.ai/docs/use-cases/reasoning-tokens#preserving-reasoning-blocks)."""

    name = "openrouter"
    otel_name = "openrouter"
    known_hosts = ("openrouter.ai",)
    rules = RULES
    gateway_fields = GATEWAY_FIELDS

    def serves(self, host: str, path: str, model: str) -> bool:
        return "openrouter" in host or model.startswith("google/")

    def chat_signature(self, model: str) -> ChatSignature | None:
        return ChatSignature(OPENROUTER_REASONING_DETAILS, "reasoning_details") if "gemini-3" in model else None


DIALECT = OpenRouter()
