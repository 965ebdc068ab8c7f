"""DeepSeek's errors, and those of the chat hosts that take reasoning_content back the same way (Kimi/Moonshot; Z.ai's
GLM takes it too, as tests/fixtures/deepseek/pydanticai_zai_glm47_reasoning_content_roundtrip_1_request.json shows,
but no error text of it is known); and DeepSeek's Anthropic-compatible endpoint.

Documentation: https://api-docs.deepseek.com/guides/thinking_mode#tool-calls (its missing-reasoning_content text
links there) and https://api-docs.deepseek.com/guides/anthropic_api. Each rule's captured text is named with it.
"""

from __future__ import annotations

import re

from .base import B, Dialect, MessagesThinking, Rule, rx

REASONING_CONTENT_MISSING = "reasoning_content_missing"
DEEPSEEK_THINKING_MISSING = "deepseek_thinking_missing"
REDACTED_THINKING_UNSUPPORTED = "redacted_thinking_unsupported"


def _reasoning_content_missing(provider: str, pattern: re.Pattern[str]) -> Rule:
    """One rule id for a tool-call message sent back without its reasoning_content, however each host words it."""
    return Rule(
        REASONING_CONTENT_MISSING,
        provider,
        "missing",
        "reasoning_content",
        "reasoning_content",
        pattern,
        "an assistant tool-call message was sent back without its reasoning_content",
    )


RULES: tuple[Rule, ...] = (
    # DeepSeek's Anthropic-compatible endpoint, in an OpenAI envelope (https://github.com/OEvortex/aether/issues/31,
    # https://github.com/NousResearch/hermes-agent/issues/17992)
    Rule(
        DEEPSEEK_THINKING_MISSING,
        "deepseek",
        "missing",
        "thinking block",
        "content[].thinking",
        rx(r"The\s+", B, r"content\[\]\.thinking", B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
        "an assistant turn with tool use was sent back without its thinking block",
    ),
    _reasoning_content_missing(
        "deepseek",
        rx(
            r"Missing\s+",
            B,
            "reasoning_content",
            B,
            r"\s+field\s+in\s+the\s+assistant\s+message",
            r"(?:\s+at\s+message\s+index\s+(?P<index>\d+))?",
        ),
    ),
    # DeepSeek V4's wording (https://github.com/deepseek-ai/awesome-deepseek-agent/pull/35)
    _reasoning_content_missing(
        "deepseek",
        rx(r"The\s+", B, "reasoning_content", B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
    ),
    # Kimi (https://github.com/iOfficeAI/AionUi/issues/2746, https://github.com/MoonshotAI/kimi-agent-sdk/issues/169)
    _reasoning_content_missing(
        "moonshot",
        rx(
            r"thinking\s+is\s+enabled\s+but\s+reasoning_content\s+is\s+missing\s+in\s+assistant\s+tool\s+call\s+",
            r"message(?:\s+at\s+index\s+(?P<index>\d+))?",
        ),
    ),
    # DeepSeek's /anthropic endpoint has no redacted_thinking block, which only Anthropic issues (HTTP 422)
    Rule(
        REDACTED_THINKING_UNSUPPORTED,
        "deepseek",
        "foreign",
        "redacted_thinking",
        "unknown variant",
        rx(
            r"(?:messages\[(?P<index>\d+)\]\.content(?:\[(?P<block>\d+)\])?:\s*)?unknown\s+variant\s+",
            B,
            "redacted_thinking",
            B,
        ),
        "a redacted_thinking block (which only Anthropic issues) was sent to DeepSeek",
    ),
)


# DeepSeek's Anthropic-compatible API (https://api-docs.deepseek.com/guides/anthropic_api) thinks unless the request
# turns thinking off, wants the thinking block of every assistant turn with tool use back in every later request (as
# its chat API wants every reasoning_content), and has no redacted_thinking block, which only Anthropic issues. The
# thinking block it sends carries the message id as its signature
# (https://github.com/NousResearch/hermes-agent/pull/21048); it is sent back as it came.
ANTHROPIC_ROUTE_THINKING = MessagesThinking(
    who="DeepSeek's Anthropic-compatible API",
    by_default=True,
    every_turn=True,
    refused_blocks=frozenset({"redacted_thinking"}),
    refused_rule=REDACTED_THINKING_UNSUPPORTED,
    missing_rule=DEEPSEEK_THINKING_MISSING,
)


class DeepSeek(Dialect):
    """DeepSeek's thinking mode and Kimi's thinking models refuse an assistant tool-call message without its
    reasoning_content, on whichever host serves them (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls)."""

    name = "deepseek"
    rules = RULES

    def requires_reasoning_content(self, model: str) -> bool:
        return model.startswith(("deepseek-reasoner", "deepseek-v4")) or ("kimi" in model and "thinking" in model)

    def messages_thinking(self, model: str) -> MessagesThinking | None:
        # Judged by the model, as reasoning_content is: a gateway that serves DeepSeek's models on the Messages format
        # forwards them to DeepSeek's /anthropic route, whose rules then apply.
        return ANTHROPIC_ROUTE_THINKING if model.startswith("deepseek-") else None


DIALECT = DeepSeek()
