"""DeepSeek's errors on chat completions (reasoning_content, which Kimi (moonshot.py), GLM (zai.py) and Qwen
(dashscope.py) take back the same way), on its Anthropic-compatible endpoint and on its Responses API (`POST
https://api.deepseek.com/responses`, stateless, whose reasoning items carry their text as `reasoning_text` content
and no `encrypted_content`: the Responses format captures and puts them back like any other provider's).

Documentation: https://api-docs.deepseek.com/guides/thinking_mode#tool-calls (its missing-reasoning_content text
links there) and https://api-docs.deepseek.com/guides/anthropic_api. Each rule's captured text is named with it.
"""

from __future__ import annotations

# Named here before it was shared: dialect modules written then import it from this module.
from .base import REASONING_CONTENT_MISSING as REASONING_CONTENT_MISSING
from .base import B, Dialect, MessagesThinking, Rule, reasoning_content_missing, rx

DEEPSEEK_THINKING_MISSING = "deepseek_thinking_missing"
DEEPSEEK_REASONING_TEXT_MISSING = "deepseek_reasoning_text_missing"
REDACTED_THINKING_UNSUPPORTED = "redacted_thinking_unsupported"


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
    reasoning_content_missing(
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
    reasoning_content_missing(
        "deepseek",
        rx(r"The\s+", B, "reasoning_content", B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
    ),
    # DeepSeek's Responses API (https://api-docs.deepseek.com/guides/responses_api), whose reasoning items carry plain
    # `reasoning_text` (https://github.com/rikkahub/rikkahub/issues/1629)
    Rule(
        DEEPSEEK_REASONING_TEXT_MISSING,
        "deepseek",
        "missing",
        "reasoning item",
        "reasoning_text",
        rx(r"The\s+", B, "reasoning_text", B, r"\s+in\s+the\s+thinking\s+mode\s+must\s+be\s+passed\s+back"),
        "a function call was sent back without the reasoning item it came with",
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
    # Where no thinking can be put back, an empty thinking block: clients that add one to each tool turn that lacks
    # it get answered (https://github.com/QwenLM/qwen-code/pull/3788; https://github.com/leookun/cursor-byok/pull/276,
    # which measured the 400s gone over 1,100 requests), as DeepSeek checks that the block is there, not what it
    # holds. Thinking stays on for the turn, which turning it off would not keep.
    stand_in="empty_block",
)


class DeepSeek(Dialect):
    """DeepSeek's thinking mode refuses an assistant tool-call message without its reasoning_content, on whichever
    host serves it (https://api-docs.deepseek.com/guides/thinking_mode#tool-calls)."""

    name = "deepseek"
    otel_name = "deepseek"
    known_hosts = ("api.deepseek.com",)
    rules = RULES

    def requires_reasoning_content(self, model: str) -> bool:
        return model.startswith(("deepseek-reasoner", "deepseek-v4"))

    def empty_reasoning_accepted(self, model: str) -> bool:
        # DeepSeek itself answers some tool calls with no reasoning at all, and a client that sends those back with
        # `"reasoning_content": ""` is answered (https://github.com/GCWing/OpenBitFun/pull/605; the key left out is what
        # it refuses: https://github.com/EverMind-AI/Raven/issues/297).
        return True

    def messages_thinking(self, model: str, host: str | None = None, path: str = "") -> MessagesThinking | None:
        if not model.startswith("deepseek-"):
            return None
        # Its rules change the body (redacted_thinking removed, every turn's thinking put back): only where DeepSeek
        # answers, its host or an /anthropic route in front of it, not on any gateway that serves a deepseek model.
        if host is not None and "deepseek.com" not in host and "/anthropic/" not in path.split("?", 1)[0]:
            return None
        return ANTHROPIC_ROUTE_THINKING


DIALECT = DeepSeek()
