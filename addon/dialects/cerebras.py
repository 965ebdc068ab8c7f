"""Cerebras (`https://api.cerebras.ai/v1/chat/completions`): a chat host that refuses `reasoning_content` back.

Cerebras returns a reasoning model's thinking as `reasoning` and takes it back under that name; an assistant message
that carries `reasoning_content` is refused, for every model, with one line per such message
(https://github.com/QwenLM/qwen-code/issues/11045, https://github.com/vercel/ai/issues/15042). The proxy only puts
back what a provider issued, so it never sends Cerebras a `reasoning_content`; a client that copies it from another
provider's answer gets this error.
"""

from __future__ import annotations

from .base import Dialect, Rule, rx

REASONING_CONTENT_UNSUPPORTED = "reasoning_content_unsupported"

RULES: tuple[Rule, ...] = (
    # `{"message": "messages.2.assistant.reasoning_content: property 'messages.2.assistant.reasoning_content' is
    # unsupported", "type": "invalid_request_error", "param": "validation_error", "code": "wrong_api_format"}`
    # (https://github.com/Kilo-Org/kilocode/issues/10375; several lines, one a message:
    # https://github.com/Alishahryar1/free-claude-code/issues/1136)
    Rule(
        REASONING_CONTENT_UNSUPPORTED,
        "cerebras",
        "unsupported",
        "reasoning_content",
        "reasoning_content: property",
        rx(r"messages\.(?P<index>\d+)\.assistant\.reasoning_content:\s*property\s+'[^']{0,200}'\s+is\s+unsupported"),
        "an assistant message carries reasoning_content, which this host does not take back (Cerebras reads earlier "
        "reasoning as `reasoning`)",
        advice=(
            "the client sent reasoning_content, which this host does not take back (the proxy never adds it): the "
            "client must leave it out, or send the reasoning as the host returned it (Cerebras: `reasoning`)"
        ),
    ),
)


class Cerebras(Dialect):
    name = "cerebras"
    otel_name = "cerebras"
    known_hosts = ("api.cerebras.ai",)
    host = "api.cerebras.ai"
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return host == self.host


DIALECT = Cerebras()
