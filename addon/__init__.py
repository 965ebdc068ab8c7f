"""llm-reasoning-proxy: a mitmproxy addon that keeps LLM reasoning state across turns.

It reads the reasoning each response carries (opaque signatures, reasoning
text), remembers it by tool call id, and puts it back into the next request
when the client dropped it, so the provider answers 200 instead of 400.
"""

from __future__ import annotations

from .hooks.capture import ResponseCapture
from .hooks.contentview import LlmContentView
from .hooks.explain import ErrorExplainer
from .hooks.repair import RequestRepair
from .hooks.retry import RefusalRetry
from .hooks.runtime import Runtime
from .hooks.upkeep import CacheUpkeep
from .shared.version import __version__


def make_addons() -> list[object]:
    """The addon objects in hook order; they share one configuration."""
    config = Runtime()
    return [
        config,
        RequestRepair(config),
        ResponseCapture(config),
        ErrorExplainer(config),
        RefusalRetry(config),  # after the explainer: it sends again what the diagnosis names
        CacheUpkeep(config),
        LlmContentView(),
    ]


__all__ = [
    "__version__",
    "CacheUpkeep",
    "ErrorExplainer",
    "LlmContentView",
    "Runtime",
    "RefusalRetry",
    "RequestRepair",
    "ResponseCapture",
    "make_addons",
]
