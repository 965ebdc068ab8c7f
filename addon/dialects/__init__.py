"""The provider dialects the proxy knows, each in a module of its own: who is behind a request, what its models
require sent back, and its error texts. Adding a provider is its module and one line here; the order is the order
in which their error rules are tried and in which they are asked whether they serve a request."""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Any

from . import base
from .base import ChatSignature, Dialect, Rule


def _registered(*modules: str) -> tuple[Dialect, ...]:
    return tuple(import_module(f".{module}", __name__).DIALECT for module in modules)


DIALECTS: tuple[Dialect, ...] = _registered(
    "gemini",
    "openai",
    "anthropic",
    "deepseek",
    "gateways",
    "copilot",
    "openrouter",
    "xai",
    "cerebras",
    "vertex_anthropic",
    "mistral",
    "bedrock",
    "dashscope",
    "moonshot",
    "kimi_anthropic",
    "zai",
    "minimax",
)


_BY_NAME = {dialect.name: dialect for dialect in DIALECTS}


def named(name: str | None) -> Dialect | None:
    """The dialect a diagnosis names as the error's provider or wrapper."""
    return _BY_NAME.get(name or "")


def rules() -> tuple[Rule, ...]:
    """Every dialect's error rules, in the order they are tried."""
    return tuple(rule for dialect in DIALECTS for rule in dialect.rules)


def serving(host: str, path: str, model: str) -> Dialect | None:
    """The dialect that answers a request to `host` and `path` for `model`, if one says so."""
    if len(host) + len(path) + len(model) > _REMEMBERED_CHARS:
        return _serving(host, path, model)
    return _remembered_serving(host, path, model)


def _serving(host: str, path: str, model: str) -> Dialect | None:
    return next((dialect for dialect in DIALECTS if dialect.serves(host, path, model)), None)


# Asked on every repaired turn, with what a client sends turn after turn: the answer is remembered for the last 256
# requests' host, path and model of up to 1,024 characters together (each dialect's `serves` reads nothing else):
# under 1.5 MiB, even of characters past U+FFFF, which Python holds in four bytes each.
_REMEMBERED_CHARS = 1024
_remembered_serving = functools.lru_cache(maxsize=256)(_serving)


def provider_name(host: str, path: str, model: str) -> str:
    """Who answers a request, as OpenTelemetry's GenAI conventions name providers (`gen_ai.provider.name`): the
    dialect that serves it, else the one whose hosts it went to, else the host itself (a gateway of its own). Asked
    for every answer while metrics or traces are on: remembered as `serving` is, within the same bounds."""
    if len(host) + len(path) + len(model) > _REMEMBERED_CHARS:
        return _provider_name(host, path, model)
    return _remembered_provider_name(host, path, model)


def _provider_name(host: str, path: str, model: str) -> str:
    dialect = serving(host, path, model)
    if dialect is not None and dialect.otel_name:
        return dialect.otel_name
    host = host.lower()
    for dialect in DIALECTS:
        # A host or any of its subdomains; Vertex AI's regional hosts are REGION-aiplatform.googleapis.com.
        if dialect.otel_name and any(
            host == known or host.endswith(("." + known, "-" + known)) for known in dialect.known_hosts
        ):
            return dialect.otel_name
    return host


_remembered_provider_name = functools.lru_cache(maxsize=256)(_provider_name)


def chat_signature(host: str, path: str, model: str) -> ChatSignature | None:
    """What a current-turn function call must carry back on chat completions, for whoever serves the request (LiteLLM
    and others send a placeholder of their own: nothing)."""
    dialect = serving(host, path, model)
    return dialect.chat_signature(model) if dialect is not None else None


def requires_reasoning_content(model: str, doc: Any = None) -> bool:
    """Whether a request for `model` is refused for an assistant tool-call message without `reasoning_content`, whoever
    serves it (`doc`, the request, may turn the model's thinking off)."""
    return any(d.requires_reasoning_content(model) and not d.thinking_off(model, doc) for d in DIALECTS)


def empty_reasoning_accepted(model: str, doc: Any = None) -> bool:
    """Whether every dialect that refuses a request for `model` without `reasoning_content` takes `""` there instead
    (`doc`, the request, may turn the model's thinking off: then none of it is required)."""
    requiring = [d for d in DIALECTS if d.requires_reasoning_content(model) and not d.thinking_off(model, doc)]
    return bool(requiring) and all(d.empty_reasoning_accepted(model) for d in requiring)


def message_fields() -> tuple[str, ...]:
    """The assistant-message fields of chat answers that some dialect adds to those every chat host knows."""
    return tuple(dict.fromkeys(name for dialect in DIALECTS for name in dialect.message_fields))


def reasoning_summary_required(host: str, path: str, model: str) -> bool:
    """Whether whoever serves a Responses API request refuses a reasoning item sent back without its `summary`."""
    dialect = serving(host, path, model)
    return dialect is not None and dialect.reasoning_summary_required(model)


def messages_thinking(model: str, host: str | None = None, path: str = "") -> base.MessagesThinking | None:
    """How `model` treats thinking blocks on the Anthropic Messages format, where a dialect says it differs from
    Anthropic (for a request to `host` and `path`, when they are known)."""
    return next(
        (rules for dialect in DIALECTS if (rules := dialect.messages_thinking(model, host, path)) is not None), None
    )


__all__ = [
    "DIALECTS",
    "ChatSignature",
    "Dialect",
    "chat_signature",
    "empty_reasoning_accepted",
    "message_fields",
    "messages_thinking",
    "named",
    "reasoning_summary_required",
    "requires_reasoning_content",
    "rules",
    "serving",
]
