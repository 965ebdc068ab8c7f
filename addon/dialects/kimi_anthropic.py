"""Kimi on Moonshot's Anthropic-compatible API: the Anthropic Messages body at `https://api.moonshot.ai/anthropic`
(and `api.moonshot.cn/anthropic`), and Kimi For Coding at `https://api.kimi.com/coding`; the client appends
`/v1/messages` (https://platform.moonshot.ai/docs/guide/agent-support.en-US#configure-anthropic-api as
https://github.com/LLM-Red-Team/kimi-cc/pull/11 cites it; https://github.com/farion1231/cc-switch/issues/185 and
https://github.com/Yachiyo-5i/xLyra/pull/75 for the other two bases).

What it requires, unlike Anthropic:

* every assistant message with tool use carries its thinking back, in every later request, not only the current
  tool loop's: the refusal names messages far back in the history ("… at index 101",
  https://github.com/anomalyco/opencode/issues/10996; "every prior assistant tool-call message",
  https://github.com/NousResearch/hermes-agent/pull/13826);
* its thinking models think when the request asks (`thinking.type: "enabled"`): a request without the field is
  answered without thinking and without the rule above (hermes-agent #13826 omits it to avoid the refusal,
  hermes-agent #56727 reports thinking "silently disabled" that way), except for the models that always think:
  kimi-k2-thinking, kimi-k2.7-code and kimi-k3 (K3 takes no thinking field on this API at all,
  https://metacpan.org/pod/Langertha::Engine::MoonshotAnthropic);
* a thinking block with `signature: ""` is taken (https://github.com/anomalyco/opencode/pull/44713): Kimi's own
  signatures are sent back as they came, and the repair puts back only what the capture saw.

Its refusal of a turn without thinking is Kimi's chat completions text in Anthropic's envelope, on this very route
(`{"error":{"type":"invalid_request_error","message":"thinking is enabled but reasoning_content is missing in
assistant tool call message at index 55"},"type":"error"}` from `https://api.kimi.com/coding/v1/messages`,
https://github.com/Kilo-Org/kilocode/issues/10986): moonshot.py's rule reads it. Its index counts Kimi's own chat
messages (the system prompt first, each tool result a message of its own), not the request's `messages`: the first
tool turn is refused "at index 2" (https://github.com/Kilo-Org/kilocode/issues/9535,
https://github.com/farion1231/cc-switch/issues/3219), where it is `messages[1]`.
"""

from __future__ import annotations

from .base import REASONING_CONTENT_MISSING, Dialect, MessagesThinking, Rule, rx
from .moonshot import ALWAYS_THINKING, model_name

THINKING_ONLY_ENABLED = "kimi_thinking_only_enabled"

RULES: tuple[Rule, ...] = (
    # Kimi For Coding refuses `thinking: {"type": "disabled"}` for a model that always thinks
    # (https://github.com/NousResearch/hermes-agent/pull/55488).
    Rule(
        THINKING_ONLY_ENABLED,
        "kimi_anthropic",
        "unsupported",
        "thinking",
        "only type=enabled",
        rx(r"invalid\s+thinking:\s+only\s+type=enabled\s+is\s+allowed\s+for\s+this\s+model"),
        "the request turned thinking off for a Kimi model that always thinks",
        advice="this model always thinks on Kimi's Anthropic-compatible API: send `thinking` with type enabled, or "
        "none at all",
    ),
)

HOSTS = ("api.moonshot.ai", "api.moonshot.cn", "api.kimi.com")
# The routes in front of it, for a request that reaches it through a local gateway or a reverse proxy.
ROUTES = ("/anthropic/", "/coding/")

WHO = "Kimi's Anthropic-compatible API"
# It has no block type of its own to refuse: nothing is taken out (the rule id is never named).
_RULES_BY_DEFAULT = {
    always: MessagesThinking(
        who=WHO,
        by_default=always,
        every_turn=True,
        refused_blocks=frozenset(),
        refused_rule=REASONING_CONTENT_MISSING,
        missing_rule=REASONING_CONTENT_MISSING,
    )
    for always in (False, True)
}


def kimi_model(model: str) -> bool:
    return model_name(model).startswith("kimi-")


def on_route(host: str, path: str) -> bool:
    """Whether a request goes to Kimi's Anthropic-compatible API: its host, or one of its routes."""
    route = path.split("?", 1)[0]
    return host in HOSTS or any(mark in route for mark in ROUTES)


class KimiAnthropic(Dialect):
    name = "kimi_anthropic"
    otel_name = "moonshot"
    known_hosts = ("api.kimi.com",)
    host = "api.moonshot.ai"
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return kimi_model(model) and on_route(host, path) and path.split("?", 1)[0].rstrip("/").endswith("/messages")

    def messages_thinking(self, model: str, host: str | None = None, path: str = "") -> MessagesThinking | None:
        if not kimi_model(model):
            return None
        # Its rules put back every turn's thinking: only where Kimi answers, not on any gateway serving a kimi model.
        if host is not None and not on_route(host, path):
            return None
        return _RULES_BY_DEFAULT[model_name(model).startswith(ALWAYS_THINKING)]


DIALECT = KimiAnthropic()
