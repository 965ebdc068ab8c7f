"""llm-reasoning-proxy: a mitmproxy addon that keeps LLM reasoning state across turns.

It reads the reasoning each response carries (opaque signatures, reasoning
text), remembers it by tool call id, and puts it back into the next request
when the client dropped it, so the provider answers 200 instead of 400.

This folder is the package `llm_reasoning_proxy` (`main.py`, the entry point for `mitmdump -s`, loads it under that
name, installed or not):

    hooks/       the mitmproxy addons: runtime, repair, capture, explain, retry, metrics, traces, upkeep,
                 contentview
    request/     the request's way: claim (LLM traffic? whose? which model?), resume, plans, signing
    answer/      the answer's way: tap (a stream's copy, read as it passes), keep, provenance
    wire/        one folder per wire format (read, repair, check, recover, transcribe)
    dialects/    one module per provider: who is behind a route, what it requires, its error rules and advice
    diagnosis/   error envelopes, matched against every dialect's rules; the explanation of a 4xx
    cache/       SQLite, Redis and memory
    shared/      limits (every bound), redact, settings, events, records, ...
    traces/      OpenTelemetry GenAI spans: the conventions' attributes, conversations as traces, the export thread
    offline/     check, fixtures/ (export), report/;  transcripts/: the LLM view

Beside it: tests/ (unit and end-to-end tests; tests/support/ the fake providers, tests/fixtures/SOURCES.md),
flows/ (captured flows turned into fixtures, screenshots), scripts/ (run, with-proxy, web, test, demo, check, ...).
"""

from __future__ import annotations

from .hooks.capture import ResponseCapture
from .hooks.contentview import LlmContentView
from .hooks.explain import ErrorExplainer
from .hooks.metrics import Metrics
from .hooks.repair import RequestRepair
from .hooks.retry import RefusalRetry
from .hooks.runtime import Runtime
from .hooks.traces import Traces
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
        Metrics(config),  # after the hooks whose events and flow entries it counts
        Traces(config),  # after them too: a span says what they did
        CacheUpkeep(config),
        LlmContentView(),
    ]


__all__ = [
    "__version__",
    "CacheUpkeep",
    "ErrorExplainer",
    "LlmContentView",
    "Metrics",
    "Runtime",
    "RefusalRetry",
    "RequestRepair",
    "ResponseCapture",
    "Traces",
    "make_addons",
]
