"""The addon that serves Prometheus metrics (llm_metrics=HOST:PORT): it counts the event log's events as they are
written (an EventLog listener) and reads each finished flow's entry once; /metrics is served by a thread of its own.

Off (the default), it does nothing at all, and prometheus_client is not even imported."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from mitmproxy import http

from .. import dialects
from ..shared.failopen import fail_open
from ..shared.flow_meta import RETRY_OF, flow_meta
from ..shared.redact import masked_logger
from ..shared.startup import refuse
from .runtime import Runtime

if TYPE_CHECKING:
    from ..answer.tap import TapResult
    from ..shared.metrics import FleetMetrics, MetricsServer, Pricing

logger = masked_logger(__name__)
CACHE_SIZE_EVERY = 5.0  # seconds between two readings of the cache's size


class Metrics:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.counts: FleetMetrics | None = None
        self._server: MetricsServer | None = None
        self._pricing: Pricing | None = None
        self._sized_at = 0.0

    def configure(self, updated: set[str]) -> None:
        settings = self.runtime.settings
        wanted = settings.metrics if settings is not None else None
        if wanted == (self._server.address if self._server is not None else None):
            return
        self._stop()
        if wanted is not None:
            self._start(wanted)

    def _start(self, address: tuple[str, int]) -> None:
        try:
            from ..shared.metrics import FleetMetrics, MetricsServer, Pricing
        except ImportError as e:
            refuse(f"llm_metrics needs {e.name or 'prometheus_client'}: install it where mitmproxy runs")
        counts = FleetMetrics(spans=lambda: self.runtime.span_counts)
        try:
            self._server = MetricsServer(address, counts)
        except OSError as e:
            host, port = address
            refuse(f"llm_metrics: cannot serve metrics on {host}:{port}: {e.strerror or e}")
        self.counts = counts
        self._pricing = Pricing(counts)
        self.runtime.events.listeners.append(counts.count_event)
        self.runtime.answer_listeners.append(self._answer)  # its usage, and what it cost
        try:
            self._size_cache(counts)
        except Exception as e:  # a cache down at startup: sized with the first answer after it is back
            logger.warning("llm metrics: cannot read the cache's size yet: %s", e)
        logger.info("llm metrics at http://%s:%d/metrics", address[0], self._server.port)

    def _stop(self, *, wait: bool = False) -> None:
        if self.counts is not None:
            listeners = self.runtime.events.listeners
            if self.counts.count_event in listeners:
                listeners.remove(self.counts.count_event)
            if self._answer in self.runtime.answer_listeners:
                self.runtime.answer_listeners.remove(self._answer)
            self.counts = None
        if self._pricing is not None:
            self._pricing.stop(wait=wait)  # reconfigured while traffic flows: not waited for
            self._pricing = None
        if self._server is not None:
            self._server.stop()
            self._server = None

    def done(self) -> None:
        self._stop(wait=True)

    def response(self, flow: http.HTTPFlow) -> None:
        self._finished(flow)

    def error(self, flow: http.HTTPFlow) -> None:
        self._finished(flow)

    def _finished(self, flow: http.HTTPFlow) -> None:
        counts = self.counts
        if counts is None or RETRY_OF in flow.metadata:  # a second sending is part of its first flow's exchange
            return
        try:
            meta = flow_meta(flow)
            if meta is not None:
                self._count_flow(counts, flow, meta)
            self._size_cache(counts)
        except Exception as e:
            fail_open(flow.id, "metrics", None, e)

    def _answer(self, flow: http.HTTPFlow, result: TapResult) -> None:
        """An answer listener: the tokens its answer reports, and (off the loop) what they cost. A second sending's
        answer (hooks/retry.py) is counted too: it is the one the client got, and the one the provider billed."""
        counts, pricing, answer, meta = self.counts, self._pricing, result.answer, flow_meta(flow)
        if counts is None or pricing is None or answer is None or not answer.usage or meta is None:
            return
        request = flow.request
        provider, model = self._provider(flow, meta), answer.model or meta.get("request_model")
        counts.count_usage(provider, meta.get("request_model"), answer.usage)
        api_url = f"{request.scheme}://{request.pretty_host}{request.path.split('?', 1)[0]}"
        pricing.price(answer.usage, model, meta["format"], api_url, provider, meta.get("request_model"))

    @staticmethod
    def _provider(flow: http.HTTPFlow, meta: dict[str, Any]) -> str:
        """Who answered, named as the traces name it (`gen_ai.provider.name`: "deepseek", "aws.bedrock", else the
        host the client named)."""
        request = flow.request
        return dialects.provider_name(request.pretty_host, request.path, meta.get("request_model") or "")

    def _count_flow(self, counts: FleetMetrics, flow: http.HTTPFlow, meta: dict[str, Any]) -> None:
        counts.count_exchange(self._provider(flow, meta), meta.get("request_model"), meta.get("format"))
        timing = meta.get("addon_ms")
        if isinstance(timing, dict):
            counts.observe_addon_ms("request", timing.get("request"))
        counts.cache_misses.inc(meta.get("cache_misses", 0))
        # The answer's reading ends once the client has its end (ResponseCapture, in this same hook, schedules it
        # for the loop's next turn): its time is read after it.
        try:
            asyncio.get_running_loop().call_soon(self._count_answer_time, counts, meta)
        except RuntimeError:  # no event loop (a test calling the hooks): the reading is over already
            self._count_answer_time(counts, meta)

    @staticmethod
    def _count_answer_time(counts: FleetMetrics, meta: dict[str, Any]) -> None:
        timing = meta.get("addon_ms")
        if isinstance(timing, dict):
            counts.observe_addon_ms("response", timing.get("response"))

    def _size_cache(self, counts: FleetMetrics) -> None:
        """Reads the cache's size at most every CACHE_SIZE_EVERY seconds, on the way out of an answer."""
        now = time.monotonic()
        store = self.runtime.store
        if store is None or now - self._sized_at < CACHE_SIZE_EVERY:
            return
        self._sized_at = now
        counts.set_cache_size(*store.size())
