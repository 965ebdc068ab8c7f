"""The addon that explains an LLM provider's 4xx answers, and forgets reasoning a provider refused.

For every 4xx on LLM traffic it names the rule broken, the message or part the
error points at and the tool call there, says whether the cache held what was
missing and whether the proxy had repaired the request, and what the user can
do. When the provider refuses a value the proxy itself inserted (a signature
or reasoning item that came back corrupted, say), the cache entries it came
from are dropped, so one bad value does not break every later turn.
"""

from __future__ import annotations

from typing import Any

from mitmproxy import http

from . import jsoncodec
from .annotate import add_comment, flow_meta
from .cache import StoreUnavailable
from .decoding import message_body, message_prefix
from .diagnosis import Diagnosis, classify
from .events import Diagnosed
from .failopen import fail_open
from .formats import CacheView
from .formats.base import call_lookup_keys, usable_keys
from .limits import MAX_DECODED_BYTES, MAX_ERROR_BODY_BYTES
from .proxy_config import ProxyConfig
from .records import RepairAction, display_call_id
from .redact import masked_logger, redact_url
from .repair import INSERTING, RepairPlan

logger = masked_logger(__name__)

# Errors that say a value sent was wrong (not absent): if the proxy sent it, its cache entry is bad.
REFUSED_VALUE = ("invalid", "not_found", "duplicate")
_TOP_LEVEL = {
    "chat_completions": "messages",
    "anthropic_messages": "messages",
    "gemini_native": "contents",
    "openai_responses": "input",
}


def block_to_message(messages: list[Any], position: int) -> int | None:
    """The chat message behind the N-th (1-based) content block Gemini was sent: system messages
    go elsewhere and consecutive tool results merge into one block."""
    block = 0
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role == "system":
            continue
        if not (role == "tool" and previous == "tool"):
            block += 1
        previous = role
        if block == position:
            return index
    return None


def locate(diagnosis: Diagnosis, wire_format: str, doc: Any) -> int | None:
    """The index into the request's top-level list that the error points at."""
    items = doc.get(_TOP_LEVEL.get(wire_format, "")) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        return diagnosis.index
    if wire_format == "chat_completions" and diagnosis.position is not None:
        return block_to_message(items, diagnosis.position)  # Gemini's numbering, passed on by Copilot or OpenRouter
    if wire_format == "openai_responses" and diagnosis.item_ids:
        for index, item in enumerate(items):
            if isinstance(item, dict) and {item.get("id"), item.get("call_id")} & set(diagnosis.item_ids):
                return index
    if diagnosis.index is not None and 0 <= diagnosis.index < len(items):
        return diagnosis.index
    return None


def calls_at(wire_format: str, doc: Any, index: int | None) -> list[tuple[str | None, str | None, Any]]:
    """(id, name, arguments) of the tool calls at a place in a request."""
    items = doc.get(_TOP_LEVEL.get(wire_format, "")) if isinstance(doc, dict) else None
    if (
        index is None
        or not isinstance(items, list)
        or not 0 <= index < len(items)
        or not isinstance(items[index], dict)
    ):
        return []
    item = items[index]
    if wire_format == "chat_completions":
        return [
            (c.get("id"), (c.get("function") or {}).get("name"), (c.get("function") or {}).get("arguments", ""))
            for c in item.get("tool_calls") or []
            if isinstance(c, dict)
        ]
    if wire_format == "anthropic_messages":
        content = item.get("content") if isinstance(item.get("content"), list) else []
        return [
            (b.get("id"), b.get("name"), b.get("input", {}))
            for b in content
            if isinstance(b, dict) and b.get("type") == "tool_use"
        ]
    if wire_format == "gemini_native":
        parts = item.get("parts") if isinstance(item.get("parts"), list) else []
        calls = [p.get("functionCall") or p.get("function_call") for p in parts if isinstance(p, dict)]
        return [(c.get("id"), c.get("name"), c.get("args", {})) for c in calls if isinstance(c, dict)]
    if item.get("type") == "function_call":
        return [(item.get("call_id"), item.get("name"), item.get("arguments", ""))]
    return []


def advise(
    diagnosis: Diagnosis,
    *,
    cache_had: bool | None,
    repaired_here: bool,
    healed: int,
    repair_on: bool,
    placeholder_applies: bool = False,
) -> str:
    """What the user can do about it, given what the proxy knew and did."""
    if diagnosis.rule == "unknown":
        return "not a known reasoning-state error; the provider's text is logged as it was"
    if diagnosis.kind in REFUSED_VALUE:
        if healed:
            return (
                f"the provider refused a value the proxy put back; {healed} cache entr{'y' if healed == 1 else 'ies'} "
                "dropped, so later turns will not repeat it (retrying sends the request without it)"
            )
        if diagnosis.kind == "duplicate":
            return "the request re-sends items the server already holds (previous_response_id): drop them from input"
        return (
            "the client sent a value the provider does not accept (re-encoded, edited, or from another conversation "
            "or model); the proxy never overwrites what the client sends: start a new conversation"
        )
    if diagnosis.kind == "missing":
        if repaired_here:
            return "the proxy put back what it had, yet the provider refused: report it with the flow (scripts/export)"
        if cache_had and not repair_on:
            return "the proxy has what is missing: turn repair on (--set llm_repair=true)"
        if cache_had:
            return "the proxy has what is missing but did not put it back: report it with the flow (scripts/export)"
        if cache_had is False:
            return (
                "the proxy never saw the answer that produced this tool call (sent before the proxy was in the path, "
                "through another proxy, with another credential or model, or expired from the cache): start a new "
                "conversation through the proxy"
                + ("; llm_signature_placeholder=auto lets it go on, degraded" if placeholder_applies else "")
            )
    if diagnosis.kind == "orphaned":
        return "a reasoning item is left with nothing after it: the proxy removes such items when llm_repair is on"
    if diagnosis.kind == "schema":
        return "the body breaks the provider's schema; for content: [] the proxy sends null when llm_repair is on"
    if diagnosis.kind == "unsupported":
        return "this model is not served on this API: use the API the provider names"
    return "see the provider's message"


class ErrorExplainer:
    def __init__(self, config: ProxyConfig) -> None:
        self.config = config

    def response(self, flow: http.HTTPFlow) -> None:
        meta = flow_meta(flow)
        if meta is None or flow.response is None or flow.response.status_code < 400 or not self.config.ready:
            return
        with fail_open(flow.id, "error diagnosis", self.config.events):
            self._explain(flow, meta)

    def _explain(self, flow: http.HTTPFlow, meta: dict[str, Any]) -> None:
        assert flow.response is not None and self.config.settings is not None
        # Error texts are a few KB: the start of the answer is all that is read of it.
        diagnosis = classify(flow.response.status_code, message_prefix(flow.response, MAX_ERROR_BODY_BYTES))
        wire_format = meta["format"]
        try:
            doc = jsoncodec.loads(message_body(flow.request, MAX_DECODED_BYTES))
        except ValueError:  # not JSON, or not decodable within the bound
            doc = None
        index = locate(diagnosis, wire_format, doc)
        calls = calls_at(wire_format, doc, index)
        plan = self.config.recall_plan(flow.id)
        inserted = [a for a in plan.actions if a.kind in INSERTING] if plan is not None else []
        sites = [a for a in inserted if index is None or a.index == index]
        repaired_here = bool(sites)
        healed = self._heal(meta, diagnosis, plan, sites) if plan is not None and diagnosis.kind in REFUSED_VALUE else 0
        cache_had = self._cache_had(meta, calls, diagnosis) if diagnosis.rule != "unknown" else None
        advice = advise(
            diagnosis,
            cache_had=cache_had,
            repaired_here=repaired_here,
            healed=healed,
            repair_on=self.config.settings.repair,
        )
        location = f"{_TOP_LEVEL.get(wire_format, 'items')}[{index}]" if index is not None else None
        call_ids = [display_call_id(c[0]) for c in calls if c[0]]
        url = redact_url(flow.request.url)
        where = f" at {location}" + (f" (tool call {', '.join(call_ids)})" if call_ids else "") if location else ""
        if diagnosis.rule == "unknown":
            line = f"llm {flow.response.status_code} from {url}, not a known reasoning error: {diagnosis.message[:300]}"
        else:
            line = f"llm {flow.response.status_code} from {url}: {diagnosis.summary}{where}; {advice}"
        logger.warning(line)
        add_comment(flow, line)
        meta["diagnosis"] = {"rule": diagnosis.rule, "location": location, "tool_call_ids": call_ids, "healed": healed}
        self.config.events.write(
            Diagnosed(
                flow_id=flow.id,
                host=meta["host"],
                url=url,
                wire_format=wire_format,
                status=flow.response.status_code,
                rule=diagnosis.rule,
                summary=diagnosis.summary,
                problem=diagnosis.kind,
                field=diagnosis.field,
                provider=diagnosis.provider,
                location=location,
                tool_call_ids=call_ids,
                item_ids=diagnosis.item_ids,
                function=diagnosis.function,
                cache_had=cache_had,
                repaired=repaired_here,
                healed=healed,
                advice=advice,
                message=diagnosis.message,
            )
        )

    def _cache_had(
        self, meta: dict[str, Any], calls: list[tuple[str | None, str | None, Any]], diagnosis: Diagnosis
    ) -> bool | None:
        store = self.config.store
        model = meta.get("request_model")
        if store is None or not (calls or diagnosis.item_ids):
            return None
        keys = [key for call in calls for key in call_lookup_keys(model, *call)] + list(diagnosis.item_ids)
        keys = usable_keys(keys, by_content=meta.get("by_content", True))
        try:
            cache = CacheView(store.get_many(meta["scope"], keys), model)
        except StoreUnavailable:
            return None  # unknown: the cache cannot be asked now
        return any(cache.call(*call) for call in calls) or any(cache.record(i) for i in diagnosis.item_ids)

    def _heal(self, meta: dict[str, Any], diagnosis: Diagnosis, plan: RepairPlan, sites: list[RepairAction]) -> int:
        """Drops the cache entries whose values the provider refused in this request; how many went."""
        store = self.config.store
        entries = plan.cache_entries()
        if store is None or not entries:
            return 0
        named = set(diagnosis.item_ids)
        refused = {site.response_id for site in sites}
        doomed = [e for e in entries if e["response_id"] in refused or named & set(e["keys"]) or e.get("item") in named]
        # One entry per captured turn, whatever the number of keys it is stored under.
        try:
            removed = sum(1 for entry in doomed if store.delete(meta["scope"], entry["keys"]))
        except StoreUnavailable as e:
            logger.warning("llm could not drop the cache entries the provider refused: %s", e)
            return 0
        if removed:
            logger.warning("llm dropped %d cache entr%s the provider refused", removed, "y" if removed == 1 else "ies")
        return removed
