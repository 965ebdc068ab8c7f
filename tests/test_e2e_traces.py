"""End to end: a real mitmdump with llm_otel, tool loops through it to the fake providers, and the spans it sends
read back from a stand-in OTLP collector (tests/support/otlp_sink.py): one span per exchange in one trace per
conversation, what the proxy did as span events, content only when asked and never an opaque value or a
credential; and a collector that is down or hangs, which the traffic never notices."""

from __future__ import annotations

import json
import ssl
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.otlp_sink import OtlpSink
from tests.support.phoenix import PhoenixServer
from tests.support.proxy import MitmdumpProcess, reverse_proxy
from tests.support.real_hosts import RealHostsFake
from tests.support.turns import first_turn
from tests.test_e2e_anthropic import QUESTION, answer_text, post, reply, request, results, tool_ids, without_thinking
from tests.test_e2e_metrics import free_port, scrape, tool_loop_with_a_repair_and_a_400

pytestmark = pytest.mark.e2e
MODEL = "deepseek-v4-flash"


@pytest.fixture
def sink() -> Iterator[OtlpSink]:
    with OtlpSink() as running:
        yield running


def traced(
    fake: FakeProvider, confdir: Path, sink_url: str, env: dict[str, str] | None = None, **options: object
) -> MitmdumpProcess:
    proxy = reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log="", llm_otel=sink_url, **options)
    proxy.env = env or {}
    return proxy


def test_a_repaired_tool_loop_is_one_trace_with_what_the_proxy_did(
    fake: FakeProvider, confdir: Path, sink: OtlpSink, api_key: str
) -> None:
    with traced(fake, confdir, sink.url) as proxy:
        tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
        first, second, refused = sink.wait_for(3)
    for span in (first, second, refused):
        assert span["name"] == f"chat {MODEL}"
        assert span["attributes"]["gen_ai.operation.name"] == "chat"
        assert span["attributes"]["gen_ai.request.model"] == MODEL
        assert span["attributes"]["server.address"] == "127.0.0.1"
    # Turn 2 holds turn 1's tool calls: the same trace, under turn 1's span.
    assert second["trace_id"] == first["trace_id"] and second["parent_span_id"] == first["span_id"]
    assert first["attributes"]["gen_ai.conversation.id"] == second["attributes"]["gen_ai.conversation.id"]
    assert refused["trace_id"] != first["trace_id"]  # its turn 1 never went through the proxy
    assert first["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert first["attributes"]["gen_ai.request.stream"] is True
    assert first["attributes"]["gen_ai.response.id"] and second["attributes"]["gen_ai.response.id"]
    assert [e["name"] for e in first["events"]] == ["llm_proxy.captured"]
    assert first["events"][0]["attributes"]["llm_proxy.fields"] == ["reasoning_content"]
    (repaired,) = [e for e in second["events"] if e["name"] == "llm_proxy.repaired"]
    assert repaired["attributes"]["llm_proxy.kinds"] == ["restored"]
    assert refused["status"]["code"] == 2  # ERROR
    assert refused["attributes"]["error.type"] == "reasoning_content_missing"
    assert refused["attributes"]["http.response.status_code"] == 400
    (diagnosed,) = [e for e in refused["events"] if e["name"] == "llm_proxy.diagnosed"]
    assert diagnosed["attributes"]["llm_proxy.rule"] == "reasoning_content_missing"
    assert "start a new conversation" in diagnosed["attributes"]["llm_proxy.advice"]
    everything = json.dumps(sink.spans)
    assert api_key not in everything
    # Content is off by default.
    assert "gen_ai.input.messages" not in everything and "gen_ai.output.messages" not in everything
    assert "list_directory" not in json.dumps([s["attributes"] for s in sink.spans])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_content_on_shows_the_reasoning_never_a_signature(
    fake: FakeProvider, confdir: Path, sink: OtlpSink, api_key: str, stream: bool
) -> None:
    with traced(fake, confdir, sink.url, llm_otel_content="true") as proxy:
        turn = reply(post(proxy.url, api_key, request([QUESTION], stream=stream)), stream=stream)
        issued = fake.anthropic.issued[tool_ids(turn)[0]]
        messages = [QUESTION, without_thinking(turn), results(turn)]
        assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=stream)), stream=stream))
        first, second = sink.wait_for(2)
    assert second["trace_id"] == first["trace_id"]
    assert first["attributes"]["gen_ai.provider.name"] == "127.0.0.1"  # a loopback fake: no provider's host
    (output,) = json.loads(first["attributes"]["gen_ai.output.messages"])
    reasoning = [p for p in output["parts"] if p["type"] == "reasoning"]
    assert [p["content"] for p in reasoning] == [issued[0]["thinking"]]
    assert {p["type"] for p in output["parts"]} >= {"reasoning", "opaque", "tool_call"}
    sent = json.loads(second["attributes"]["gen_ai.input.messages"])
    assert sent[1]["parts"][0]["type"] == "reasoning"  # what went upstream: the thinking the proxy put back
    assert first["attributes"]["gen_ai.usage.output_tokens"] > 0
    everything = json.dumps(sink.spans)
    assert issued[0]["signature"] not in everything and issued[0]["signature"][:32] not in everything
    assert api_key not in everything


@pytest.mark.parametrize("collector", ["down", "hanging"])
def test_a_collector_that_is_down_or_hangs_costs_the_traffic_nothing(
    fake: FakeProvider, confdir: Path, sink: OtlpSink, api_key: str, collector: str
) -> None:
    if collector == "down":
        with OtlpSink() as gone:
            url = gone.url
    else:
        sink.hold.clear()  # takes the export's connection, never answers it
        url = sink.url
    metrics = f"127.0.0.1:{free_port()}"
    with traced(fake, confdir, url, llm_metrics=metrics) as proxy:
        for _ in range(3):
            tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
        line = proxy.wait_for_line("llm otel: cannot send spans to")
        tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
        text = scrape(metrics, "llm_proxy_spans_dropped_total")
    assert url in line and "traffic goes on" in line
    assert "llm_proxy_spans_sent_total 0.0" in text
    (dropped,) = [line for line in text.splitlines() if line.startswith("llm_proxy_spans_dropped_total ")]
    assert float(dropped.split()[1]) >= 1  # the batch the collector never took
    assert proxy.output.count("llm otel: cannot send spans") == 1
    assert "opentelemetry" not in proxy.output.lower().replace("opentelemetry's", "")
    assert "failed on flow" not in proxy.output  # no hook failed open


@pytest.mark.slow
def test_phoenix_receives_a_repaired_tool_loop(
    fake: FakeProvider, confdir: Path, phoenix: PhoenixServer, api_key: str
) -> None:
    """A real backend, installed from the package registry: it takes the proxy's spans, and its API gives them back
    with their attributes, events and content, and without a credential or an opaque value."""
    project = f"llm-proxy-{uuid.uuid4().hex[:12]}"
    env = {"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}
    with traced(fake, confdir, phoenix.otlp_base, env, llm_otel_content="true") as proxy:
        tool_loop_with_a_repair_and_a_400(proxy, fake, api_key)
        turn = reply(post(proxy.url, api_key, request([QUESTION], stream=True)), stream=True)
        signature = fake.anthropic.issued[tool_ids(turn)[0]][0]["signature"]
        messages = [QUESTION, without_thinking(turn), results(turn)]
        assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=True)), stream=True))
        spans = phoenix.spans(5, project=project, deadline=60.0)
    by_model = {}
    for span in spans:
        by_model.setdefault(span["attributes"]["gen_ai.request.model"], []).append(span)
    first, second, refused = sorted(by_model[MODEL], key=lambda span: span["start_time"])
    assert first["name"] == f"chat {MODEL}" and first["span_kind"] == "LLM"
    assert second["trace_id"] == first["trace_id"] and second["parent_span_id"] == first["span_id"]
    assert refused["trace_id"] != first["trace_id"] and refused["status_code"] == "ERROR"
    assert refused["attributes"]["error.type"] == "reasoning_content_missing"
    assert [e["name"] for e in first["events"]] == ["llm_proxy.captured"]
    assert "llm_proxy.repaired" in [e["name"] for e in second["events"]]
    (diagnosed,) = [e for e in refused["events"] if e["name"] == "llm_proxy.diagnosed"]
    assert diagnosed["attributes"]["llm_proxy.rule"] == "reasoning_content_missing"
    # The reasoning part, with content on: DeepSeek's reasoning_content is text, shown as the conventions' part.
    (output,) = json.loads(first["attributes"]["gen_ai.output.messages"])
    assert output["parts"][0]["type"] == "reasoning" and output["parts"][0]["content"]
    claude = sorted(by_model[request([], stream=True)["model"]], key=lambda span: span["start_time"])
    assert len(claude) == 2 and claude[1]["trace_id"] == claude[0]["trace_id"]
    assert "opaque" in claude[0]["attributes"]["gen_ai.output.messages"]
    everything = json.dumps(spans, default=str)
    assert api_key not in everything
    assert signature not in everything and signature[:32] not in everything


def test_what_a_priced_answer_cost_is_in_its_span_and_the_metrics(
    confdir: Path, tmp_path: Path, sink: OtlpSink, api_key: str
) -> None:
    """Through a regular proxy to DeepSeek's real host name (answered by the fake): genai-prices prices the answer,
    the span carries its cost, and /metrics adds it up with the tokens."""
    fake = RealHostsFake(tmp_path).start()
    metrics = f"127.0.0.1:{free_port()}"
    options = ("--set", "llm_cache=memory", "--set", "llm_log=", "--set", f"llm_otel={sink.url}")
    proxy = MitmdumpProcess(*fake.mitmdump_options(), *options, "--set", f"llm_metrics={metrics}", confdir=confdir)
    try:
        with proxy:
            trusted = ssl.create_default_context(cafile=str(confdir / "mitmproxy-ca-cert.pem"))
            through = httpx.Client(proxy=proxy.url, verify=trusted, timeout=30)
            llm = openai.OpenAI(base_url="https://api.deepseek.com/v1", api_key=api_key, http_client=through)
            first_turn(llm, MODEL, stream=False)
            (span,) = sink.wait_for(1)
            text = scrape(metrics, "llm_proxy_cost_usd_total{", "llm_proxy_tokens_total{")
    finally:
        fake.stop()
    assert span["attributes"]["gen_ai.provider.name"] == "deepseek"
    assert span["attributes"]["server.address"] == "api.deepseek.com"
    assert span["attributes"]["gen_ai.usage.input_tokens"] == 10
    assert span["attributes"]["gen_ai.usage.cost"] > 0
    assert span["attributes"]["llm_proxy.cost.source"].startswith("genai-prices ")
    (cost,) = [line for line in text.splitlines() if line.startswith("llm_proxy_cost_usd_total{")]
    assert f'model="{MODEL}"' in cost and float(cost.rsplit(" ", 1)[1]) == pytest.approx(
        span["attributes"]["gen_ai.usage.cost"]
    )
    assert f'llm_proxy_tokens_total{{kind="input",model="{MODEL}",provider="deepseek"}} 10.0' in text
    assert "llm_proxy_unpriced_total{" not in text
