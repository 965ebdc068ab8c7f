"""Prometheus metrics of the proxy (llm_metrics): counters fed by the event log's events and by one read of each
finished flow's entry, and the server of /metrics.

Every label is bounded: values are names the code defines (repair kinds, diagnosis rules, skip categories), or, for
what a client or provider names (models, hosts), folded to "other" past a limit. No credential, id, URL or free text
ever becomes a label: skip reasons are sorted into categories, and a model name the redactor would mask is "other".
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

from .events import Captured, Diagnosed, Event, Failure, Recovered, Repaired, Skipped
from .redact import redact_text

PREFIX = "llm_proxy"
MODELS_KEPT = 64  # distinct models (and providers, rules) a proxy labels; the rest are "other"
OTHER = "other"
UNKNOWN = "unknown"
_LABEL_CHARS = 100
# The addon's own time on a request or an answer: mostly well under a millisecond, a long history some ms.
SECONDS_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

# Why a flow was left alone, by category: the first of these found in the reason (its text is never a label).
SKIP_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("cache unavailable", "cache_unavailable"),
    ("reasoning cached for", "other_model"),
    ("llm_recover: no form", "unrecovered"),
    ("request signed with", "signed_request"),
    ("another addon already streams", "streamed_by_another_addon"),
    ("answer over a bound", "over_bound"),
    ("request body", "unreadable_request"),
    ("forwarded untouched", "unreadable_request"),
    ("ended the stream", "stream_cut"),
    ("foreign", "foreign_kept"),
    ("answer ", "not_stored"),
)


def skip_category(reason: str) -> str:
    return next((category for marker, category in SKIP_CATEGORIES if marker in reason), OTHER)


class LabelFolder:
    """A label's values as they come, up to `limit` distinct ones; past it, "other". A value the redactor would
    mask (it looks like a credential) is "other" too, and a long one is cut."""

    def __init__(self, limit: int = MODELS_KEPT) -> None:
        self.limit = limit
        self._seen: dict[str, str] = {}

    def __call__(self, value: object) -> str:
        if value is None or value == "":
            return UNKNOWN
        text = str(value)
        folded = self._seen.get(text)
        if folded is not None:
            return folded
        if len(self._seen) >= self.limit:
            return OTHER
        folded = text[:_LABEL_CHARS] if redact_text(text) == text else OTHER
        self._seen[text] = folded
        return folded


class FleetMetrics:
    """The proxy's counters, in a registry of their own (a reconfigured proxy, or a test, makes a fresh one)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.models = LabelFolder()
        self.providers = LabelFolder()
        self.rules = LabelFolder()

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(f"{PREFIX}_{name}", doc, labels, registry=self.registry)

        self.exchanges = counter(
            "exchanges", "LLM exchanges seen, by provider, model and wire format", ("provider", "model", "format")
        )
        self.repairs = counter(
            "repairs", "Repairs made to requests (applied=false: llm_repair=false would have)", ("kind", "applied")
        )
        self.recoveries = counter(
            "recoveries", "Requests sent on without reasoning that could not be put back", ("how", "rule")
        )
        self.diagnosed = counter("diagnosed", "Provider 4xx answers explained, by diagnosis rule", ("rule", "status"))
        self.captures = counter("captures", "Answers whose reasoning was read, by whether it was stored", ("stored",))
        self.skips = counter("skips", "Flows or parts left alone, by category of reason", ("reason",))
        self.failures = counter("failures", "Errors the addon failed open on, by stage", ("stage",))
        self.cache_hits = counter("cache_hits", "Cache entries a repair found")
        self.cache_misses = counter("cache_misses", "Cache lookups of a repair that found nothing")
        self.cache_entries = Gauge(f"{PREFIX}_cache_entries", "Entries in the reasoning cache", registry=self.registry)
        self.cache_bytes = Gauge(f"{PREFIX}_cache_bytes", "Size of the reasoning cache on disk", registry=self.registry)
        self.addon_seconds = Histogram(
            f"{PREFIX}_addon_seconds",
            "The addon's own time on a request (phase=request) or an answer (phase=response)",
            ("phase",),
            buckets=SECONDS_BUCKETS,
            registry=self.registry,
        )

    def count_event(self, event: Event) -> None:
        """Counts one event of the event log (an EventLog listener)."""
        if isinstance(event, Repaired):
            applied = "true" if event.applied else "false"
            for action in event.actions:
                self.repairs.labels(action.kind, applied).inc()
            for kind, count in event.again_by_kind.items():
                self.repairs.labels(kind, applied).inc(count)
            self.cache_hits.inc(event.cache_hits)
        elif isinstance(event, Recovered):
            self.recoveries.labels(event.how, self.rules(event.rule)).inc()
        elif isinstance(event, Diagnosed):
            self.diagnosed.labels(self.rules(event.rule), str(event.status)).inc()
        elif isinstance(event, Captured):
            self.captures.labels("true" if event.stored else "false").inc()
        elif isinstance(event, Skipped):
            self.skips.labels(skip_category(event.reason)).inc()
        elif isinstance(event, Failure):
            self.failures.labels(self.rules(event.stage)).inc()

    def count_exchange(self, provider: str | None, model: object, wire_format: object) -> None:
        self.exchanges.labels(self.providers(provider), self.models(model), str(wire_format or UNKNOWN)).inc()

    def observe_addon_ms(self, phase: str, ms: object) -> None:
        if isinstance(ms, (int, float)):
            self.addon_seconds.labels(phase).observe(ms / 1000)

    def set_cache_size(self, entries: int | None, size: int | None) -> None:
        if entries is not None:
            self.cache_entries.set(entries)
        if size is not None:
            self.cache_bytes.set(size)


class MetricsServer:
    """/metrics on HOST:PORT, served by prometheus_client's thread (never mitmproxy's event loop)."""

    def __init__(self, address: tuple[str, int], metrics: FleetMetrics) -> None:
        """Listens at once; raises OSError when it cannot (the port is taken)."""
        self.address = address
        server, thread = start_http_server(address[1], address[0], registry=metrics.registry)
        self._server: WSGIServer | None = server
        self._thread: threading.Thread = thread

    @property
    def port(self) -> int:
        return self._server.server_address[1] if self._server is not None else 0

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()  # waits for serve_forever to return, a fraction of a second
            server.server_close()
