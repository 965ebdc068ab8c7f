"""The wire formats the proxy understands, each in a module of its own."""

from __future__ import annotations

from .anthropic import AnthropicMessages
from .base import CacheView, CallHit, RepairContext, ResponseReader, WireFormat
from .bedrock_converse import BedrockConverse
from .chat_completions import ChatCompletions
from .gemini import GeminiNative
from .responses import Responses

FORMATS: tuple[WireFormat, ...] = (
    ChatCompletions(),
    Responses(),
    AnthropicMessages(),
    GeminiNative(),
    BedrockConverse(),
)
_BY_NAME = {f.name: f for f in FORMATS}


def routed(method: str, path: str) -> bool:
    """Whether a request may be LLM traffic, judged from its method and path alone: nothing else is decoded."""
    return method == "POST" and any(wire_format.route(path) for wire_format in FORMATS)


def claim(method: str, path: str, body: bytes) -> WireFormat | None:
    """The wire format that owns a request, or None for traffic to leave alone."""
    for wire_format in FORMATS:
        if wire_format.claims(method, path, body):
            return wire_format
    return None


def by_name(name: str) -> WireFormat:
    return _BY_NAME[name]


__all__ = [
    "FORMATS",
    "CacheView",
    "CallHit",
    "RepairContext",
    "ResponseReader",
    "WireFormat",
    "by_name",
    "claim",
    "routed",
]
