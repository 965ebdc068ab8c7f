"""Z.ai's GLM on chat completions: reasoning_content on each assistant message, read back in the current tool loop
(interleaved thinking) and, with preserved thinking, in every turn. A request that drops it is answered all the
same, only worse.

Documentation: https://docs.z.ai/guides/capabilities/thinking-mode ("thinking blocks should be explicitly preserved
and returned together with the tool results"; preserved thinking is on by default on the Coding Plan endpoint, and
on the standard endpoint with `"clear_thinking": false`, when "you must return the complete, unmodified
reasoning_content"). No error for a dropped reasoning_content is known (https://github.com/openai/openai-agents-python
/issues/2669); the generic one for a malformed history is named with its rule.
"""

from __future__ import annotations

from typing import Any

from .base import Dialect, ReadBack, Rule, rx, thinking_option

ZAI_MESSAGES_ILLEGAL = "zai_messages_illegal"

RULES: tuple[Rule, ...] = (
    # https://github.com/continuedev/continue/issues/13259 (code 1214), in English and as the Chinese API says it
    Rule(
        ZAI_MESSAGES_ILLEGAL,
        "zai",
        "schema",
        "messages",
        "messages",
        rx(r"The\s+messages\s+parameter\s+is\s+illegal|messages\s*参数非法"),
        "GLM refused the messages as malformed (a message of a role or shape it does not take)",
        generic=True,
    ),
)

# Z.ai's international and Zhipu's Chinese endpoints; the Coding Plan's routes are under /api/coding/.
HOSTS = ("api.z.ai", "open.bigmodel.cn")
ROUTES = ("/api/paas/v4/", "/api/coding/paas/v4/")


class ZAI(Dialect):
    name = "zai"
    otel_name = "z_ai"
    known_hosts = (
        "api.z.ai",
        "open.bigmodel.cn",
    )
    rules = RULES
    silent_drops = True

    def serves(self, host: str, path: str, model: str) -> bool:
        return host in HOSTS or any(route in path for route in ROUTES) or model.startswith("glm-")

    def reads_back(self, path: str, doc: Any) -> ReadBack:
        clear = thinking_option(doc, "clear_thinking")
        preserved = clear is False or (clear is None and "/api/coding/" in path)
        return "all" if preserved else "current_loop"


DIALECT = ZAI()
