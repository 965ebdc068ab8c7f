"""What a span is made of: an `Exchange` (what the hooks took of a finished flow, cheaply, on the event loop) and the
`SpanPlan` read from it off the loop (the request parsed, its conversation read, attributes and events written).
Pure: tests call `plan_span` directly, and nothing here imports OpenTelemetry."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field

from ..shared import jsoncodec
from ..shared.cost import exchange_cost
from ..shared.limits import MAX_DECODED_BYTES
from ..shared.redact import redact_text
from ..transcripts import TRANSCRIBERS, conversation
from ..wire.content_encoding import decode_body
from ..wire.conversation import Answer, Conversation, Link, message_links
from .genai import Attributes, SpanEvent, content_attributes, span_name, usage_attributes, value_size

_ERROR_TEXT_CHARS = 512


@dataclass(slots=True)
class Exchange:
    """One LLM exchange as the hooks saw it end. Holds references, never copies: the request's body as sent (bytes
    are never changed in place), the answer the tap assembled."""

    flow_id: str
    wire_format: str
    operation: str
    provider: str
    server_address: str
    server_port: int
    path: str
    request_model: str | None
    started: float  # time.time() when the request began
    ended: float
    request_body: bytes | None  # as sent upstream, content-encoded as `request_encoding` says
    request_encoding: str | None
    status: int | None = None  # None: no answer came (`error` says why)
    error: str | None = None
    first_chunk_at: float | None = None
    answer: Answer | None = None
    whole_answer: bool = False  # `answer` holds what was said, not only its model, id, usage and stop reason
    calls: list[str] = field(default_factory=list)  # the ids of the tool calls the answer made (the capture's)
    response_id: str | None = None
    events: list[SpanEvent] = field(default_factory=list)
    events_dropped: int = 0
    rule: str | None = None  # the diagnosis of a refusal
    refusal: str | None = None  # the provider's text of a refusal, redacted
    api_url: str | None = None  # scheme, host and path the request went to (what a price is looked up by)
    scope: str = ""  # whose request it was (shared/scope.py): turns of different callers are never one conversation

    def size(self) -> int:
        """About the bytes it holds (what the span queue is bounded by)."""
        held = 512 + len(self.request_body or b"") + sum(event.size() for event in self.events)
        if self.answer is not None:
            held += sum(len(part.text) + len(part.value or "") for part in self.answer.parts())
        return held


@dataclass(slots=True)
class SpanPlan:
    name: str
    start_ns: int
    end_ns: int
    attributes: Attributes
    events: list[SpanEvent]
    links: list[Link]  # what ties its request to an earlier turn
    issued: list[Link]  # what its answer made, for later turns to find
    error: str | None  # the span's status description, when the exchange failed

    def size(self) -> int:
        """About the bytes its span holds: its texts, and a little for each value and event."""
        held = 256 + sum(len(key) + value_size(value) for key, value in self.attributes.items())
        return held + sum(event.size() for event in self.events)


def read_request(exchange: Exchange, *, newest: int | None = None) -> Conversation | None:
    """The conversation the request carried, or only its `newest` messages (what ties it to the turn before: a long
    history is then parsed, not read message by message); None when its body cannot be read (the span says less,
    nothing more)."""
    if exchange.request_body is None:
        return None
    try:
        body = decode_body(exchange.request_body, exchange.request_encoding, MAX_DECODED_BYTES)
        doc = jsoncodec.loads(body)
        items_key = getattr(TRANSCRIBERS[exchange.wire_format], "items_key", None)
        if newest is not None and isinstance(doc, dict) and isinstance(doc.get(items_key), list):
            doc[items_key] = doc[items_key][-newest:]
        return conversation(exchange.wire_format, doc, exchange.path)
    except Exception:  # Undecodable, not JSON, or a shape a transcriber trips on: the span says less, nothing more
        return None


def cost_attributes(exchange: Exchange, answer: Answer, model: str | None) -> Attributes:
    """What the answer cost by genai-prices' table: `gen_ai.usage.cost` in US dollars (no convention names one yet:
    the name some instrumentations use), or `llm_proxy.cost.source` "unknown", never a cost of zero."""
    try:
        cost = exchange_cost(
            answer.usage,
            answer.model or model,
            wire_format=exchange.wire_format,
            api_url=exchange.api_url,
            when=datetime.datetime.fromtimestamp(exchange.started, datetime.timezone.utc),
        )
    except Exception:  # a price the table cannot make is unknown, as any other
        cost = None
    if cost is None:
        return {"llm_proxy.cost.source": "unknown"}
    return {"gen_ai.usage.cost": float(cost.usd), "llm_proxy.cost.source": cost.source}


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


# Without content, a request is read for its links to the turn before (the tool calls of the answer it continues,
# and their results): its newest messages hold them.
LINKED_MESSAGES = 16


def plan_span(exchange: Exchange, *, content: bool) -> SpanPlan:
    sent = read_request(exchange, newest=None if content else LINKED_MESSAGES)
    answer = exchange.answer
    # A model is whatever the client named: masked like every text, in case it is a credential.
    model = exchange.request_model or (sent.model if sent is not None else None)
    model = redact_text(model) if model else None
    attributes: Attributes = {
        "gen_ai.operation.name": exchange.operation,
        "gen_ai.provider.name": exchange.provider,
        "server.address": exchange.server_address,
        "server.port": exchange.server_port,
        "llm_proxy.wire_format": exchange.wire_format,
        "llm_proxy.flow_id": exchange.flow_id,
    }
    if model:
        attributes["gen_ai.request.model"] = model
    if sent is not None and sent.stream:
        attributes["gen_ai.request.stream"] = True
    if exchange.status is not None:
        attributes["http.response.status_code"] = exchange.status
    if answer is not None:
        if answer.model:
            attributes["gen_ai.response.model"] = redact_text(answer.model)
        if answer.finish:
            attributes["gen_ai.response.finish_reasons"] = [answer.finish]
        attributes.update(usage_attributes(answer.usage))
    if exchange.response_id:
        attributes["gen_ai.response.id"] = exchange.response_id
    if exchange.first_chunk_at is not None and sent is not None and sent.stream:
        attributes["gen_ai.response.time_to_first_chunk"] = max(0.0, exchange.first_chunk_at - exchange.started)
    if answer is not None and answer.usage:
        attributes.update(cost_attributes(exchange, answer, model))
    error = None
    if exchange.status is None or exchange.status >= 400:
        # A refusal the proxy diagnosed is typed by its rule; others by their status, or as the conventions' _OTHER.
        attributes["error.type"] = exchange.rule or (str(exchange.status) if exchange.status else "_OTHER")
        said = exchange.error or (f"HTTP {exchange.status}: {exchange.refusal}" if exchange.refusal else None)
        error = redact_text((said or f"HTTP {exchange.status}")[:_ERROR_TEXT_CHARS])
    if exchange.events_dropped:
        attributes["llm_proxy.events_dropped"] = exchange.events_dropped
    if content:
        attributes.update(content_attributes(sent, answer if exchange.whole_answer else None))
    links = [link for message in sent.messages for link in message_links(message)] if sent is not None else []
    issued: list[Link] = [("call", call) for call in exchange.calls]
    if answer is not None and exchange.whole_answer:  # a summary holds pieces of messages: no link is read of it
        issued += [link for message in answer.messages for link in message_links(message)]
    # Two callers' chats may hold the same text ("How can I help?"): links are told apart by whose they are.
    links = [(kind, f"{exchange.scope}\n{key}") for kind, key in links]
    issued = [(kind, f"{exchange.scope}\n{key}") for kind, key in dict.fromkeys(issued)]
    return SpanPlan(
        name=span_name(exchange.operation, model),
        start_ns=_ns(exchange.started),
        end_ns=_ns(max(exchange.ended, exchange.started)),
        attributes=attributes,
        events=exchange.events,
        links=links,
        issued=issued,
        error=error,
    )
