"""Moonshot's Kimi on chat completions: its thinking models refuse an assistant tool-call message sent back without its
reasoning_content, in words of their own.

Documentation: https://platform.moonshot.ai/docs/guide/use-kimi-k2-thinking-model (which models think, and that
reasoning_content must come back with tool calls). Each rule's captured text is named with it.
"""

from __future__ import annotations

from typing import Any

from .base import Dialect, Rule, reasoning_content_missing, rx, thinking_option

RULES: tuple[Rule, ...] = (
    # https://github.com/iOfficeAI/AionUi/issues/2746, https://github.com/MoonshotAI/kimi-agent-sdk/issues/169,
    # https://github.com/VicBilibily/GCMP/issues/162 (the whole body: an OpenAI error with "type": "error" beside it)
    reasoning_content_missing(
        "moonshot",
        rx(
            r"thinking\s+is\s+enabled\s+but\s+reasoning_content\s+is\s+missing\s+in\s+assistant\s+tool\s+call\s+",
            r"message(?:\s+at\s+index\s+(?P<index>\d+))?",
        ),
    ),
)

HOSTS = ("api.moonshot.ai", "api.moonshot.cn")
# Models that think: kimi-k2-thinking always; kimi-k2.5 and kimi-k2.6 unless the request turns it off
# (`"thinking": {"type": "disabled"}`); kimi-k2.7-code and kimi-k3 always (their docs offer no switch).
THINKING_MODELS = ("kimi-k2-thinking", "kimi-k2.5", "kimi-k2.6", "kimi-k2.7", "kimi-k3")
ALWAYS_THINKING = ("kimi-k2-thinking", "kimi-k2.7", "kimi-k3")


def model_name(model: str) -> str:
    """A model's own name, without the vendor a gateway puts in front of it ("moonshotai/kimi-k2-thinking")."""
    return model.rsplit("/", 1)[-1].lower()


class Moonshot(Dialect):
    name = "moonshot"
    otel_name = "moonshot"
    known_hosts = (
        "api.moonshot.ai",
        "api.moonshot.cn",
    )
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return host in HOSTS or model.startswith("kimi-")

    def requires_reasoning_content(self, model: str) -> bool:
        name = model_name(model)
        # "kimi-k2-thinking-turbo" and older "-thinking" names too
        return name.startswith(THINKING_MODELS) or (name.startswith("kimi") and "thinking" in name)

    def empty_reasoning_accepted(self, model: str) -> bool:
        # An empty reasoning_content satisfies Kimi's check (https://github.com/anomalyco/opencode/pull/28542), on
        # every model, where turning thinking off is refused by some (kimi-k2.7-code).
        return True

    def thinking_off(self, model: str, doc: Any) -> bool:
        return thinking_option(doc, "type") == "disabled" and not model_name(model).startswith(ALWAYS_THINKING)


DIALECT = Moonshot()
