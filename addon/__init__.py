"""llm-reasoning-proxy: a mitmproxy addon that keeps LLM reasoning state across turns.

It reads the reasoning each response carries (opaque signatures, reasoning
text), remembers it by tool call id, and puts it back into the next request
when the client dropped it, so the provider answers 200 instead of 400.
"""

from __future__ import annotations

# The one place the version is written: pyproject.toml reads it from here, and the startup line shows the
# version of the code that runs, installed or not.
__version__ = "0.1.0"

from .hooks.capture import ResponseCapture
from .hooks.contentview import LlmContentView
from .hooks.explain import ErrorExplainer
from .hooks.repair import RequestRepair
from .hooks.runtime import Runtime
from .hooks.upkeep import CacheUpkeep


def make_addons() -> list[object]:
    """The addon objects in hook order; they share one configuration."""
    config = Runtime()
    return [
        config,
        RequestRepair(config),
        ResponseCapture(config),
        ErrorExplainer(config),
        CacheUpkeep(config),
        LlmContentView(),
    ]


__all__ = [
    "CacheUpkeep",
    "ErrorExplainer",
    "LlmContentView",
    "Runtime",
    "RequestRepair",
    "ResponseCapture",
    "make_addons",
]
