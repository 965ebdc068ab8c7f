"""The tracing tests' backend: a real Arize Phoenix server (tests/support/phoenix.py) gives back what the
OpenTelemetry SDK sent it over OTLP/HTTP, attribute for attribute, with each value's type and the span events."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from tests.support.phoenix import PhoenixServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

# Long, with quotes, escapes, newlines and characters beyond ASCII: a JSON string Phoenix must keep verbatim.
INPUT_MESSAGES = json.dumps(
    [
        {"role": "system", "parts": [{"type": "text", "content": 'Answer in one line.\n\t"Quoted" \\ ünïcødé ✓'}]},
        {"role": "user", "parts": [{"type": "text", "content": "What is in the directory? " * 800}]},
    ],
    ensure_ascii=False,
)
PARENT_ATTRIBUTES: dict[str, Any] = {
    "gen_ai.operation.name": "chat",  # string
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.usage.input_tokens": 12,  # int
    "gen_ai.usage.output_tokens": 0,
    "gen_ai.request.temperature": 0.25,  # float
    "gen_ai.request.stream": True,  # bool
    "gen_ai.response.finish_reasons": ["stop"],  # string list
    "gen_ai.request.stop_sequences": ["\n\n", "END"],
    "gen_ai.input.messages": INPUT_MESSAGES,
}
CHILD_ATTRIBUTES: dict[str, Any] = {
    "llm_proxy.repair": "reasoning_content restored",
    "llm_proxy.repair.blocks": 3,
    "llm_proxy.cache.hit": False,
    "llm_proxy.cache.ratio": 0.5,
    "llm_proxy.cache.keys": ["a1", "b2"],
}
PARENT_EVENT = (
    "gen_ai.client.inference.operation.details",
    {"gen_ai.output.messages": '[{"role": "assistant", "parts": []}]', "attempt": 2, "final": True},
)
CHILD_EVENT = ("llm_proxy.retry", {"http.response.status_code": 429, "delays": [0.5, 1.5], "reason": "rate limited"})


def typed(attributes: dict[str, Any]) -> dict[str, tuple[type, Any]]:
    """Each value with its type, so 12 and 12.0, or True and 1, do not compare equal."""
    return {key: (type(value), value) for key, value in attributes.items()}


def sent_attributes(attributes: Any) -> dict[str, Any]:
    """The SDK's attributes as the JSON Phoenix answers with has them (the SDK keeps lists as tuples)."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in attributes.items()}


def at(nanoseconds: int) -> datetime:
    return datetime.fromtimestamp(nanoseconds / 1e9, tz=timezone.utc)


def assert_same_time(stored: datetime, nanoseconds: int) -> None:
    # Phoenix keeps microseconds: the nanoseconds are rounded away.
    assert abs((stored - at(nanoseconds)).total_seconds()) <= 2e-6, (stored, at(nanoseconds))


def tracer_provider(phoenix: PhoenixServer, project: str | None) -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider exporting to Phoenix the way the addon does, and keeping a copy of each span as sent."""
    resource = {"service.name": "llm-reasoning-proxy-tests"}
    if project is not None:
        resource["openinference.project.name"] = project
    provider = TracerProvider(resource=Resource.create(resource))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=phoenix.otlp_base + "/v1/traces")))
    sent = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sent))
    return provider, sent


def send_chat_trace(phoenix: PhoenixServer, project: str) -> dict[str, ReadableSpan]:
    provider, sent = tracer_provider(phoenix, project)
    tracer = provider.get_tracer("tests.phoenix")
    with tracer.start_as_current_span("chat gpt-4o", attributes=PARENT_ATTRIBUTES) as parent:
        with tracer.start_as_current_span("repair", attributes=CHILD_ATTRIBUTES) as child:
            child.add_event(*CHILD_EVENT)
            child.set_status(Status(StatusCode.ERROR, "upstream said 429"))
        parent.add_event(*PARENT_EVENT)
        parent.set_status(Status(StatusCode.OK))
    assert provider.force_flush(timeout_millis=30_000), "the exporter did not send the spans"
    provider.shutdown()
    return {span.name: span for span in sent.get_finished_spans()}


def test_phoenix_gives_back_each_span_attribute_and_event_as_sent(phoenix: PhoenixServer) -> None:
    project = f"test-{uuid.uuid4().hex}"
    sent = send_chat_trace(phoenix, project)

    stored = phoenix.spans(2, project=project)

    assert [span["name"] for span in stored] == ["chat gpt-4o", "repair"]
    parent, child = stored
    for span in stored:
        original = sent[span["name"]]
        assert span["trace_id"] == f"{original.context.trace_id:032x}"
        assert span["span_id"] == f"{original.context.span_id:016x}"
        assert_same_time(span["start_time"], original.start_time)
        assert_same_time(span["end_time"], original.end_time)
    assert parent["parent_span_id"] is None
    assert child["parent_span_id"] == parent["span_id"]
    assert (parent["status_code"], parent["status_message"]) == ("OK", "")
    assert (child["status_code"], child["status_message"]) == ("ERROR", "upstream said 429")

    # Every attribute sent comes back with its value and type; Phoenix adds OpenInference ones it derives from
    # gen_ai.* (and gives its span kind apart), so the chat span has more, the other span exactly these.
    sent_parent = sent_attributes(sent["chat gpt-4o"].attributes)
    assert typed({key: parent["attributes"].get(key) for key in sent_parent}) == typed(sent_parent)
    assert parent["attributes"]["gen_ai.input.messages"] == INPUT_MESSAGES
    assert parent["span_kind"] == "LLM"
    assert typed(child["attributes"]) == typed(sent_attributes(sent["repair"].attributes))
    assert child["span_kind"] == "UNKNOWN"

    for span, (name, attributes) in ((parent, PARENT_EVENT), (child, CHILD_EVENT)):
        [event] = span["events"]
        [original] = sent[span["name"]].events
        assert event["name"] == name
        assert typed(event["attributes"]) == typed(sent_attributes(original.attributes)) == typed(attributes)
        assert_same_time(event["timestamp"], original.timestamp)


def test_phoenix_puts_spans_without_a_project_in_the_default_one(phoenix: PhoenixServer) -> None:
    provider, sent = tracer_provider(phoenix, project=None)
    with provider.get_tracer("tests.phoenix").start_as_current_span("no project"):
        pass
    assert provider.force_flush(timeout_millis=30_000), "the exporter did not send the span"
    provider.shutdown()
    [original] = sent.get_finished_spans()
    trace_id = f"{original.context.trace_id:032x}"

    [stored] = phoenix.spans(1, trace_id=trace_id)

    assert (stored["name"], stored["trace_id"], stored["attributes"]) == ("no project", trace_id, {})
