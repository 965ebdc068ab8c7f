"""Prometheus metrics of the proxy (llm_metrics): counters fed by the event log's events and by one read of each
finished flow's entry, and the server of /metrics.

Every label is bounded: values are names the code defines (repair kinds, diagnosis rules, skip categories), or, for
what a client or provider names (models, hosts), folded to "other" past a limit. No credential, id, URL or free text
ever becomes a label: skip reasons are sorted into categories, and a model name the redactor would mask is "other".
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Protocol
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily

from ..wire.conversation import Usage
from .cost import exchange_cost
from .events import Captured, Diagnosed, Event, Failure, Recovered, Repaired, Skipped
from .redact import redact_text

PREFIX = "llm_proxy"
MAX_API_URL_CHARS = 2048  # past it (and for a model name as long) an answer is counted unpriced, never queued
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


class SpanCounts(Protocol):
    exported: int
    dropped: int


class _Spans:
    """The traces' own counts (traces/export.py), read when /metrics is: spans sent, and dropped (a full queue, or a
    collector that did not take them)."""

    def __init__(self, read: Callable[[], SpanCounts | None]) -> None:
        self.read = read

    def collect(self) -> Iterator[CounterMetricFamily]:
        counts = self.read()
        if counts is None:  # no traces (llm_otel off)
            return
        yield CounterMetricFamily(f"{PREFIX}_spans_sent", "Spans the collector took (llm_otel)", value=counts.exported)
        yield CounterMetricFamily(
            f"{PREFIX}_spans_dropped",
            "Spans dropped: the queue was full or the collector refused",
            value=counts.dropped,
        )


class FleetMetrics:
    """The proxy's counters, in a registry of their own (a reconfigured proxy, or a test, makes a fresh one)."""

    def __init__(self, spans: Callable[[], SpanCounts | None] = lambda: None) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_Spans(spans))
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
        self.tokens = counter(
            "tokens",
            "Tokens the providers reported, by kind (input counts cached tokens; reasoning is part of output)",
            ("provider", "model", "kind"),
        )
        self.cost = counter(
            "cost_usd",
            "What the answers cost in US dollars, by genai-prices' table (priced ones only)",
            ("provider", "model"),
        )
        self.unpriced = counter(
            "unpriced",
            "Answers with usage whose cost is unknown (a model or host genai-prices does not price)",
            ("provider", "model"),
        )
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

    def count_usage(self, provider: str | None, model: str | None, usage: Usage) -> None:
        provider_label, model_label = self.providers(provider), self.models(model)
        for kind, value in usage.counts():
            if value:
                self.tokens.labels(provider_label, model_label, kind).inc(value)

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


class Pricing:
    """Prices answers on a thread of its own: genai-prices takes up to a tenth of a millisecond a call (and 0.2 s to
    import), which the event loop does not wait for. At most MAX_WAITING answers wait; past it the oldest is let go of
    and counted as unpriced."""

    MAX_WAITING = 4096  # each holds a Usage and four short strings: well under 4 MiB in all

    def __init__(self, metrics: FleetMetrics) -> None:
        self.metrics = metrics
        self._waiting: deque[tuple[Usage, str | None, str, str, str, str]] = deque()
        self._wake = threading.Condition()
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="llm-metrics-pricing", daemon=True)
        self._thread.start()

    def price(
        self, usage: Usage, model: str | None, wire_format: str, api_url: str, provider: str, asked: str | None
    ) -> None:
        """Queues an answer's usage to be priced at `model`'s prices, labelled as its exchange is (`provider`, and the
        model it `asked` for)."""
        labels = (self.metrics.providers(provider), self.metrics.models(asked))
        if len(api_url) > MAX_API_URL_CHARS or (model is not None and len(model) > MAX_API_URL_CHARS):
            self.metrics.unpriced.labels(*labels).inc()  # no real API's: never held, never priced
            return
        with self._wake:
            if len(self._waiting) >= self.MAX_WAITING:
                self.metrics.unpriced.labels(*self._waiting.popleft()[4:]).inc()
            self._waiting.append((usage, model, wire_format, api_url, *labels))
            self._wake.notify()

    def stop(self, *, wait: bool = True) -> None:
        with self._wake:
            self._closing = True
            self._wake.notify()
        if wait:
            self._thread.join(5)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._waiting and not self._closing:
                    self._wake.wait()
                if self._closing:
                    return
                usage, model, wire_format, api_url, provider, model_label = self._waiting.popleft()
            try:
                cost = exchange_cost(usage, model, wire_format=wire_format, api_url=api_url)
            except Exception:  # a price the table cannot make: unknown, as any other
                cost = None
            if cost is None:
                self.metrics.unpriced.labels(provider, model_label).inc()
            else:
                self.metrics.cost.labels(provider, model_label).inc(float(cost.usd))
