"""The addon that repairs LLM requests in flight from the reasoning cache."""

from __future__ import annotations

import logging

from mitmproxy import http

from . import formats, jsoncodec
from .annotate import META, REPAIR_MARKER, add_comment, report_skip
from .events import Repaired, loggable_actions
from .failopen import fail_open
from .formats import CacheView, RepairContext
from .proxy_config import ProxyConfig
from .redact import redact_url
from .scope import request_scope

logger = logging.getLogger(__name__)


class RequestRepair:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config

    def request(self, flow: http.HTTPFlow) -> None:
        if flow.request.method != "POST" or flow.response is not None or not self.config.ready:
            return
        with fail_open(flow.id, "request repair", self.config.events):
            self._request(flow)

    def _request(self, flow: http.HTTPFlow) -> None:
        request = flow.request
        if request.raw_content is None:  # body streamed through (stream_large_bodies): nothing to read
            return
        body = request.get_content(strict=False) or b""
        wire_format = formats.claim(request.method, request.path, body)
        if wire_format is None:
            return
        scope = request_scope(request)
        meta = {
            "format": wire_format.name,
            "scope": str(scope),
            "host": scope.host,
            "request_model": wire_format.request_model(request.path, body, None),
        }
        flow.metadata[META] = meta
        if not wire_format.may_need_repair(body):
            return
        try:
            doc = jsoncodec.loads(body)
        except ValueError:
            report_skip(flow, "request body is not valid JSON; forwarded unchanged", self.config.events)
            return
        store, settings = self.config.store, self.config.settings
        assert store is not None and settings is not None
        model = meta["request_model"] = wire_format.request_model(request.path, body, doc)
        keys = wire_format.lookup_keys(doc, model)
        cache = CacheView(store.get_many(meta["scope"], keys) if keys else {}, model)
        context = RepairContext(path=request.path, model=model, placeholder=settings.signature_placeholder)
        actions = wire_format.repair(doc, cache, context)
        for key, other in cache.mismatched.items():
            reason = f"reasoning cached for {key} came from model {other}; not replayed into {model}"
            report_skip(flow, reason, self.config.events)
        if not actions:
            return
        descriptions = [action.describe() for action in actions]
        if settings.repair:
            request.set_content(jsoncodec.dumps(doc))
            flow.marked = REPAIR_MARKER
            add_comment(flow, "llm repaired: " + "; ".join(descriptions))
        meta["repairs"] = descriptions
        meta["repaired"] = settings.repair
        self.config.events.write(
            Repaired(
                flow_id=flow.id,
                host=scope.host,
                url=redact_url(request.pretty_url),
                wire_format=wire_format.name,
                applied=settings.repair,
                cache_hits=len(cache.found),
                actions=loggable_actions(actions, settings.log_opaque),
            )
        )
        verb = "repaired" if settings.repair else "would repair (llm_repair=false)"
        logger.info("llm %s %s: %s", verb, redact_url(request.pretty_url), "; ".join(descriptions))
