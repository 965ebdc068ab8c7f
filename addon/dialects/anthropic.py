"""Anthropic's errors: the Messages API, and its copies on Amazon Bedrock, Vertex AI and behind Copilot.

Documentation: https://docs.claude.com/en/docs/build-with-claude/extended-thinking (the thinking-block rules; the
text of a missing thinking block links there). Each rule's captured text is named with it.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from .base import ANTHROPIC_THINKING_EXPECTED as ANTHROPIC_THINKING_EXPECTED
from .base import IDS, TOOL_RESULT_MISSING, TOOL_RESULT_ORPHANED, B, Dialect, Rule, rx

ANTHROPIC_SIGNATURE_MISSING = "anthropic_signature_missing"
ANTHROPIC_BLOCK_BINDING = "anthropic_block_binding"
ANTHROPIC_BLOCK_BINDING_BETA = "anthropic_block_binding_beta"
ANTHROPIC_SIGNATURE_INVALID = "anthropic_signature_invalid"
ANTHROPIC_REDACTED_DATA_INVALID = "anthropic_redacted_data_invalid"
ANTHROPIC_THINKING_MODIFIED = "anthropic_thinking_modified"
CONTENT_EMPTY = "content_empty"
# The `anthropic-beta` value that asks for redacted thinking: thinking blocks then come with an empty text and their
# signature, and go back so.
REDACT_THINKING_BETA = "redact-thinking-2026-02-12"

# Where a text starts when it names the block: "messages.1.content.0" (the group is closed by each rule).
_AT = r"(?:messages\.(?P<index>\d+)\.content\.(?P<block>\d+)"

# The block binding names what changed in a tail sentence: "The `system` prompt differs from the one this block was
# created with." (https://github.com/anomalyco/opencode/issues/48637). Only that one is quoted; the same shape is
# read for the others.
_BINDING_CAUSE = rx(
    r"(?:^|[.!]\s+)(?P<cause>[^.]{1,160}?)\s+differs?\s+from\s+the\s+ones?\s+(?:this|the)\s+block\s+was\s+created\s+with"
)
_ARTICLE = re.compile(r"^(?:the|an?)\s+", re.IGNORECASE)


def _binding_cause(match: re.Match[str], found: dict[str, Any]) -> None:
    tail = _BINDING_CAUSE.search(match.string, match.end())
    if tail is not None:
        cause = " ".join(_ARTICLE.sub("", tail.group("cause").strip()).replace("`", "").split())
        found["cause"] = cause or None


def binding_advice(cause: str | None) -> str:
    """Anthropic binds a thinking block to the system prompt, tools and turns before it (preserved-thinking docs)."""
    changed = f"the {cause} changed" if cause else "the system prompt, the tools or an earlier turn changed"
    return (
        f"{changed} since the thinking block was issued, and the block is bound to everything before it: send that "
        'unchanged, remove the block, or set thinking.block_binding.prefix_mismatch_behavior to "drop_block" '
        "(with anthropic-beta: thinking-binding-controls-2026-08-01)"
    )


RULES: tuple[Rule, ...] = (
    Rule(
        ANTHROPIC_THINKING_EXPECTED,
        "anthropic",
        "missing",
        "thinking block",
        "redacted_thinking",
        rx(
            _AT,
            r"\.type:\s*)?Expected\s+",
            B,
            "thinking",
            B,
            r"\s+or\s+",
            B,
            "redacted_thinking",
            B,
            r",\s*but\s+found\s+",
        ),
        "with thinking enabled, the final assistant message with tool use must start with its thinking block",
    ),
    # After a model switch dropped the signature (https://github.com/anomalyco/opencode/issues/25005), and
    # Bedrock's copy (https://github.com/can1357/oh-my-pi/pull/10486)
    Rule(
        ANTHROPIC_SIGNATURE_MISSING,
        "anthropic",
        "missing",
        "signature",
        "field required",
        rx(_AT, r")\.thinking\.signature:\s*Field\s+required"),
        "a thinking block was sent back without its signature (stored without it, or dropped on a model switch)",
    ),
    # Claude Fable 5.1 and later bind a thinking block to the prefix it was created under (the preserved-thinking
    # docs, "fix bound to a different conversation"; the text as https://github.com/anomalyco/opencode/issues/48637
    # quotes it). Before anthropic_signature_invalid: the text starts the same.
    Rule(
        ANTHROPIC_BLOCK_BINDING,
        "anthropic",
        "foreign",
        "signature",
        "bound to a different conversation",
        rx(
            _AT,
            r":\s*)?(?:Invalid\s+",
            B,
            "signature",
            B,
            r"\s+in\s+",
            B,
            "thinking",
            B,
            r"\s+block\.?\s+)?The\s+block\s+is\s+bound\s+to\s+a\s+different\s+conversation",
        ),
        "a thinking block was sent back under another prefix than the one it was created under (the system prompt, "
        "the tools or an earlier turn changed)",
        refine=_binding_cause,
        advice=binding_advice,
    ),
    # Without the beta header, the binding controls are refused (https://github.com/Wei-Shaw/sub2api/pull/6677).
    Rule(
        ANTHROPIC_BLOCK_BINDING_BETA,
        "anthropic",
        "schema",
        "thinking.block_binding",
        "block_binding",
        rx(r"thinking\.(?:\w+\.)?block_binding:\s*Extra\s+inputs\s+are\s+not\s+permitted"),
        "thinking.block_binding was sent without the anthropic-beta value that enables it "
        "(thinking-binding-controls-2026-08-01)",
        advice=(
            "send thinking.block_binding only with the anthropic-beta value thinking-binding-controls-2026-08-01, or "
            "leave it out"
        ),
    ),
    Rule(
        ANTHROPIC_SIGNATURE_INVALID,
        "anthropic",
        "invalid",
        "signature",
        "signature",
        rx(_AT, r":\s*)?Invalid\s+", B, "signature", B, r"\s+in\s+", B, "thinking", B, r"\s+block"),
        "a thinking block's signature is not the one issued for its text",
    ),
    Rule(
        ANTHROPIC_REDACTED_DATA_INVALID,
        "anthropic",
        "invalid",
        "data",
        "redacted_thinking",
        rx(_AT, r":\s*)?Invalid\s+", B, "data", B, r"\s+in\s+", B, "redacted_thinking", B, r"\s+block"),
        "a redacted_thinking block's data is not a value the API issued",
    ),
    Rule(
        ANTHROPIC_THINKING_MODIFIED,
        "anthropic",
        "invalid",
        "thinking block",
        "cannot be modified",
        rx(
            _AT,
            r":\s*)?",
            B,
            "thinking",
            B,
            r"\s+or\s+",
            B,
            "redacted_thinking",
            B,
            r"\s+blocks\s+in\s+the\s+latest\s+assistant\s+message\s+cannot\s+be\s+modified",
        ),
        "the thinking blocks of the latest assistant message differ from the ones in the original response",
        advice=(
            "send each thinking block back exactly as the response gave it; a client that stores the thinking text "
            "emptied and the signature kept breaks this: the proxy puts the text back when the response came "
            "through it, or ask for redacted thinking (anthropic-beta: " + REDACT_THINKING_BETA + "), under which an "
            "empty text is what goes back"
        ),
    ),
    # https://github.com/anthropics/claude-code/issues/13460
    Rule(
        TOOL_RESULT_ORPHANED,
        "anthropic",
        "orphaned",
        "tool result",
        "tool_use_id",
        rx(
            _AT,
            r":\s*)?unexpected\s+",
            B,
            "tool_use_id",
            B,
            r"\s+found\s+in\s+",
            B,
            r"\w+",
            B,
            r"\s+blocks:\s*",
            IDS,
        ),
        "a tool_result block answers a tool_use id that the message before it does not have",
    ),
    # https://github.com/lbjlaq/Antigravity-Manager/issues/654
    Rule(
        TOOL_RESULT_MISSING,
        "anthropic",
        "missing",
        "tool result",
        "ids were found without",
        rx(
            r"messages\.(?P<index>\d+):\s*",
            B,
            "tool_use",
            B,
            r"\s+ids\s+were\s+found\s+without\s+",
            B,
            "tool_result",
            B,
            r"\s+blocks\s+immediately\s+after:\s*",
            IDS,
        ),
        "a tool_use block has no tool_result block in the next message",
    ),
    # https://github.com/anthropics/claude-code/issues/4416
    Rule(
        CONTENT_EMPTY,
        "anthropic",
        "schema",
        "content",
        "non-empty content",
        rx(r"messages\.(?P<index>\d+):\s*all\s+messages\s+must\s+have\s+non-empty\s+content"),
        "a message other than the final assistant message has empty content",
    ),
)


# Claude models that refuse `thinking: {"type": "disabled"}` with a 400: Fable 5, Mythos 5 and Mythos Preview always
# think (https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting, the table of thinking
# support by model); Sonnet 5.5 takes "between_tools" instead, which still returns thinking blocks to send back
# (https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5); Opus 5.5 as Sonnet 5.5
# (https://github.com/danielmiessler/Fabric/pull/2306). The names as the Claude API, Bedrock ("anthropic.claude-…")
# and Vertex AI ("claude-…@date") spell them.
_ALWAYS_THINKING = re.compile(r"claude-(?:fable-5|mythos|(?:sonnet|opus)-5[-.]5(?!\d))")
# Claude Opus 5 takes "disabled" only at effort high or lower: with effort xhigh or max it is a 400 (the same table).
_OFF_UP_TO_HIGH = re.compile(r"claude-opus-5(?![-.]5(?!\d))(?!\.\d)")
_ABOVE_HIGH = frozenset({"xhigh", "max"})


class ThinkingOff(NamedTuple):
    """How a request to a Claude model turns thinking off: `{"type": "disabled"}`, and the effort it must not exceed
    then (None: any)."""

    max_effort: str | None


def thinking_off(model: str) -> ThinkingOff | None:
    """How a request to `model` turns Claude's thinking off, so that no thinking block is required back (the API's own
    error advises it: "To avoid this requirement, disable `thinking`"); None where the model refuses that."""
    if _ALWAYS_THINKING.search(model):
        return None
    return ThinkingOff("high" if _OFF_UP_TO_HIGH.search(model) else None)


def effort_too_high(effort: Any, off: ThinkingOff) -> bool:
    """Whether an `output_config.effort` is above what a request with thinking off takes."""
    return off.max_effort is not None and effort in _ABOVE_HIGH


class Anthropic(Dialect):
    name = "anthropic"
    otel_name = "anthropic"
    known_hosts = ("api.anthropic.com",)
    rules = RULES


DIALECT = Anthropic()
