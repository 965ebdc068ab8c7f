"""The GenAI spans' pure parts: attributes and messages as OpenTelemetry's conventions write them, conversations as
traces, the endpoint option; and the export thread against a stand-in collector (a slow one, a dead one)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from llm_reasoning_proxy import dialects
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.answer.assembled import ReadingAndAssembling
from llm_reasoning_proxy.answer.tap import read_recorded
from llm_reasoning_proxy.shared.events import Captured, Diagnosed, Skipped
from llm_reasoning_proxy.shared.records import SIGNATURE_IN_ID
from llm_reasoning_proxy.shared.settings import parse_otlp_endpoint
from llm_reasoning_proxy.traces import genai
from llm_reasoning_proxy.traces.exchange import Exchange, plan_span
from llm_reasoning_proxy.traces.links import ENTRY_BYTES, ConversationLinks, TurnPlace
from llm_reasoning_proxy.transcripts import read_answer
from llm_reasoning_proxy.wire.anthropic.transcript import anthropic_usage
from llm_reasoning_proxy.wire.chat_completions.transcript import chat_usage

from tests.support.otlp_sink import OtlpSink

SIGNATURE = "EqQBCkgIARABGAIiQL" + "x" * 300
KEY = "sk-ant-api03-" + "A" * 93


def anthropic_exchange(**changes) -> Exchange:
    request = {
        "model": "claude-sonnet-4-5",
        "stream": True,
        "system": [{"type": "text", "text": "You are terse."}],
        "messages": [
            {"role": "user", "content": f"my key is {KEY}"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": SIGNATURE},
                    {"type": "tool_use", "id": "toolu_01", "name": "ls", "input": {"path": "."}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "a.txt"}]},
        ],
    }
    answer = read_answer(
        "anthropic_messages",
        json.dumps(
            {
                "id": "msg_02",
                "model": "claude-sonnet-4-5-20250929",
                "role": "assistant",
                "content": [{"type": "text", "text": "One file."}],
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": 10,
                    "output_tokens": 5,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 7,
                },
            }
        ).encode(),
        sse=False,
    )
    fields = dict(
        flow_id="f1",
        wire_format="anthropic_messages",
        operation="chat",
        provider="anthropic",
        server_address="api.anthropic.com",
        server_port=443,
        path="/v1/messages",
        request_model="claude-sonnet-4-5",
        started=1000.0,
        ended=1002.5,
        request_body=json.dumps(request).encode(),
        request_encoding=None,
        status=200,
        first_chunk_at=1000.25,
        answer=answer,
        whole_answer=True,
        response_id=answer.id,
    )
    return Exchange(**(fields | changes))


def test_a_span_names_the_operation_model_provider_and_usage_as_the_conventions_do() -> None:
    plan = plan_span(anthropic_exchange(), content=False)
    assert plan.name == "chat claude-sonnet-4-5"
    attributes = plan.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "anthropic"
    assert attributes["gen_ai.request.model"] == "claude-sonnet-4-5"
    assert attributes["gen_ai.response.model"] == "claude-sonnet-4-5-20250929"
    assert attributes["gen_ai.response.id"] == "msg_02"
    assert attributes["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert attributes["gen_ai.request.stream"] is True
    assert attributes["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.25)
    # Anthropic reports cached tokens beside input_tokens; the conventions count them in it.
    assert attributes["gen_ai.usage.input_tokens"] == 117
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 100
    assert attributes["gen_ai.usage.cache_creation.input_tokens"] == 7
    assert attributes["gen_ai.usage.output_tokens"] == 5
    assert (plan.start_ns, plan.end_ns) == (1_000_000_000_000, 1_002_500_000_000)
    assert plan.error is None and "error.type" not in attributes
    # Content is opt-in.
    assert not [name for name in attributes if name.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system"))]


def test_usage_that_counts_cached_input_already_is_taken_as_it_is() -> None:
    usage = chat_usage({"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 100}})
    found = genai.usage_attributes(usage)
    assert found["gen_ai.usage.input_tokens"] == 120
    assert found["gen_ai.usage.cache_read.input_tokens"] == 100
    assert genai.usage_attributes(anthropic_usage({"input_tokens": 3}))["gen_ai.usage.input_tokens"] == 3


def test_content_is_the_conventions_messages_masked_and_without_opaque_values() -> None:
    attributes = plan_span(anthropic_exchange(), content=True).attributes
    instructions = json.loads(attributes["gen_ai.system_instructions"])
    assert instructions == [{"type": "text", "content": "You are terse."}]
    history = json.loads(attributes["gen_ai.input.messages"])
    assert [m["role"] for m in history] == ["user", "assistant", "user"]
    assert KEY not in attributes["gen_ai.input.messages"] and "my key is" in attributes["gen_ai.input.messages"]
    thinking, opaque, call = history[1]["parts"]
    assert thinking == {"type": "reasoning", "content": "Look first."}
    assert opaque["type"] == "opaque" and opaque["field"] == "signature" and opaque["length"] == len(SIGNATURE)
    assert call == {"type": "tool_call", "id": "toolu_01", "name": "ls", "arguments": {"path": "."}}
    assert history[2]["parts"] == [{"type": "tool_call_response", "id": "toolu_01", "response": "a.txt"}]
    assert SIGNATURE[:40] not in json.dumps(attributes)
    output = json.loads(attributes["gen_ai.output.messages"])
    assert output == [
        {"role": "assistant", "parts": [{"type": "text", "content": "One file."}], "finish_reason": "end_turn"}
    ]


def test_a_long_history_keeps_its_newest_messages_within_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(genai, "CONTENT_CHARS", 600)
    messages = [{"role": "user", "content": f"message {i} " + "x" * 100} for i in range(20)]
    exchange = anthropic_exchange(request_body=json.dumps({"model": "m", "messages": messages}).encode())
    attributes = plan_span(exchange, content=True).attributes
    kept = json.loads(attributes["gen_ai.input.messages"])
    assert len(attributes["gen_ai.input.messages"]) <= 600
    assert kept[-1]["parts"][0]["content"].startswith("message 19 ")
    assert attributes["llm_proxy.input.messages_left_out"] == 20 - len(kept) > 0


def test_a_refusal_is_typed_by_its_diagnosis_and_a_lost_connection_as_other() -> None:
    refused = plan_span(
        anthropic_exchange(status=400, answer=None, rule="thinking_missing", refusal=f"bad {KEY}"), content=False
    )
    assert refused.attributes["error.type"] == "thinking_missing"
    assert refused.error is not None and refused.error.startswith("HTTP 400: bad") and KEY not in refused.error
    lost = plan_span(anthropic_exchange(status=None, answer=None, error="server disconnected"), content=False)
    assert lost.attributes["error.type"] == "_OTHER" and lost.error == "server disconnected"


def test_span_events_say_what_the_proxy_did_masked() -> None:
    captured = genai.span_event(
        Captured(
            flow_id="f",
            host="h",
            url="u",
            wire_format="anthropic_messages",
            response_id="msg",
            request_model="m",
            response_model="m",
            tool_calls=[],
            fields={},
            streamed=True,
            complete=True,
            stored=True,
        ),
        5,
    )
    assert captured is not None and captured.name == "llm_proxy.captured" and captured.timestamp_ns == 5
    diagnosed = genai.span_event(
        Diagnosed(
            flow_id="f",
            host="h",
            url="u",
            wire_format="chat_completions",
            status=400,
            rule="reasoning_content_missing",
            summary="s",
            problem="missing",
            location="messages[1]",
            tool_call_ids=["call_1"],
            advice=f"use {KEY}",
            message="m",
        ),
        6,
    )
    assert diagnosed is not None
    assert diagnosed.attributes["llm_proxy.culprit"] == ["messages[1]", "call_1"]
    assert KEY not in diagnosed.attributes["llm_proxy.advice"]
    skipped = genai.span_event(Skipped(flow_id="f", url="u", reason="x" * 5000), 7)
    assert skipped is not None and len(skipped.attributes["llm_proxy.reason"]) <= genai.EVENT_TEXT_CHARS + 1


def test_a_turn_continues_the_trace_of_the_turn_whose_tool_call_its_history_holds() -> None:
    links = ConversationLinks()
    first = TurnPlace(trace_id=1, root_span_id=11, span_id=11)
    links.remember([("call", "toolu_01")], first)
    second = TurnPlace(trace_id=1, root_span_id=11, span_id=12)
    links.remember([("call", "toolu_02")], second)
    assert links.find([("call", "toolu_01"), ("call", "toolu_02")]) == second
    assert links.find([("text", "never said")]) is None


def test_the_links_are_bounded_by_what_they_hold() -> None:
    links = ConversationLinks(max_bytes=100 * (ENTRY_BYTES + 20))
    place = TurnPlace(1, 1, 1)
    for i in range(1000):
        links.remember([("call", f"call_{i:015d}")], place)
    assert links.bytes <= links.max_bytes and len(links) < 110
    assert links.find([("call", f"call_{999:015d}")]) == place
    assert links.find([("call", f"call_{0:015d}")]) is None


@pytest.mark.parametrize(
    ("host", "path", "model", "name"),
    [
        ("api.openai.com", "/v1/responses", "gpt-5", "openai"),
        ("api.anthropic.com", "/v1/messages", "claude-opus-4", "anthropic"),
        (
            "generativelanguage.googleapis.com",
            "/v1beta/models/gemini-3-pro:generateContent",
            "gemini-3-pro",
            "gcp.gemini",
        ),
        ("us-east5-aiplatform.googleapis.com", "/v1/projects/p/models/g:generateContent", "g", "gcp.vertex_ai"),
        ("bedrock-runtime.us-east-1.amazonaws.com", "/model/x/converse", "x", "aws.bedrock"),
        ("api.githubcopilot.com", "/chat/completions", "gpt-5", "github_copilot"),
        ("api.deepseek.com", "/anthropic/v1/messages", "deepseek-v4", "deepseek"),
        ("api.x.ai", "/v1/chat/completions", "grok-4", "x_ai"),
        ("litellm.internal", "/v1/chat/completions", "anything", "litellm.internal"),
    ],
)
def test_providers_are_named_as_the_conventions_name_them(host: str, path: str, model: str, name: str) -> None:
    assert dialects.provider_name(host, path, model) == name


@pytest.mark.parametrize(
    ("given", "endpoint"),
    [
        ("", None),
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://localhost:6006/", "http://localhost:6006/v1/traces"),
        ("https://cloud.example/api/public/otel/v1/traces", "https://cloud.example/api/public/otel/v1/traces"),
    ],
)
def test_the_endpoint_is_the_collectors_base_url_or_its_traces_url(given: str, endpoint: str | None) -> None:
    assert parse_otlp_endpoint("llm_otel", given) == endpoint


@pytest.mark.parametrize("given", ["grpc://127.0.0.1:4317", "ftp://x", "127.0.0.1:4318", "http://h:70000"])
def test_a_bad_endpoint_is_one_clear_error(given: str) -> None:
    with pytest.raises(ValueError, match="^llm_otel: "):
        parse_otlp_endpoint("llm_otel", given)


def test_spans_go_out_in_one_trace_per_conversation() -> None:
    from llm_reasoning_proxy.traces.export import SpanExport

    with OtlpSink() as sink:
        export = SpanExport(f"{sink.url}/v1/traces", display=sink.url, content=False)
        try:
            body = json.dumps({"model": "m", "messages": []}).encode()
            assert export.submit(anthropic_exchange(flow_id="t1", request_body=body, calls=["toolu_01"]))
            assert export.submit(anthropic_exchange(flow_id="t2"))  # its history holds toolu_01
            first, second = sink.wait_for(2)
        finally:
            export.stop()
    assert first["trace_id"] == second["trace_id"] and second["parent_span_id"] == first["span_id"]
    assert second["links"] == [{"trace_id": first["trace_id"], "span_id": first["span_id"]}]
    assert first["attributes"]["gen_ai.conversation.id"] == second["attributes"]["gen_ai.conversation.id"]
    assert first["resource"]["service.name"] == "llm-reasoning-proxy"
    assert first["kind"] == 3  # CLIENT


def test_a_dead_collector_is_said_once_and_costs_the_caller_nothing(caplog: pytest.LogCaptureFixture) -> None:
    from llm_reasoning_proxy.traces.export import SpanExport

    with OtlpSink() as sink:
        dead = sink.url
    export = SpanExport(f"{dead}/v1/traces", display=dead, content=False)
    try:
        with caplog.at_level(logging.INFO):
            taken = [export.submit(anthropic_exchange(flow_id=f"f{i}")) for i in range(20)]
            deadline = time.monotonic() + 60
            while export.counts.dropped < 20 and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        export.stop()
    assert export.counts.dropped == 20 and export.counts.exported == 0
    said = [r.getMessage() for r in caplog.records if "llm otel" in r.getMessage()]
    assert len([line for line in said if "cannot send spans" in line]) == 1, said
    assert not [r for r in caplog.records if r.name.startswith("opentelemetry")]
    assert all(taken)  # queued, none refused while the collector was down


def test_a_slow_collector_fills_the_queue_to_its_bound_then_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.traces import export as export_module

    size = anthropic_exchange().size()
    monkeypatch.setattr(export_module, "MAX_QUEUED_BYTES", size * 5)
    with OtlpSink() as sink:
        sink.hold.clear()  # takes each export, answers none until released
        export = export_module.SpanExport(f"{sink.url}/v1/traces", display=sink.url, content=False)
        try:
            taken = [export.submit(anthropic_exchange(flow_id=f"f{i}")) for i in range(30)]
            assert taken.count(False) >= 30 - 6 and export.counts.dropped == taken.count(False)
            assert export._queued_bytes <= size * 5
        finally:
            sink.hold.set()
            export.stop()


def test_an_answer_read_for_its_summary_alone_shows_no_content_and_links_by_its_calls() -> None:
    exchange = anthropic_exchange(whole_answer=False, calls=["toolu_09"])
    plan = plan_span(exchange, content=True)
    assert "gen_ai.output.messages" not in plan.attributes  # a summary holds pieces of messages, never shown
    assert plan.issued == [("call", "\ntoolu_09")]  # whose (no scope here), and the call
    assert plan.attributes["gen_ai.usage.output_tokens"] == 5


def _recorded_streams() -> list[Path]:
    return sorted((Path(__file__).parent / "fixtures").rglob("*.sse"))


def _format_of(body: bytes) -> str:
    if b'"type":"response.' in body or b'"type": "response.' in body:
        return "openai_responses"
    if b"message_start" in body:
        return "anthropic_messages"
    if b'"candidates"' in body:
        return "gemini_native"
    return "chat_completions"


@pytest.mark.parametrize("path", _recorded_streams(), ids=lambda path: f"{path.parent.name}/{path.name}")
def test_reading_a_stream_for_its_summary_finds_what_reading_it_whole_does(path: Path) -> None:
    """The summary read (content off: only the events that hold one of the transcriber's summary markers) gives the
    same model, id, usage and stop reason as the whole answer, on every recorded stream."""
    body = path.read_bytes()
    name = _format_of(body)
    whole = read_answer(name, body, sse=True)
    transcriber = formats.TRANSCRIBERS[name]
    reading = ReadingAndAssembling(formats.by_name(name).reader(), transcriber.assembler, transcriber.summary_markers)
    read_recorded(reading, body, sse=True)
    summary = reading.answer()
    assert (summary.model, summary.id, summary.finish, summary.usage) == (
        whole.model,
        whole.id,
        whole.finish,
        whole.usage,
    )
    assert whole.usage or whole.finish  # the recording says something a summary can miss


def test_a_span_says_what_the_answer_cost_or_that_it_is_unknown() -> None:
    priced = plan_span(anthropic_exchange(api_url="https://api.anthropic.com/v1/messages"), content=False)
    assert priced.attributes["gen_ai.usage.cost"] > 0
    assert priced.attributes["llm_proxy.cost.source"].startswith("genai-prices ")
    gateway = plan_span(anthropic_exchange(api_url="http://127.0.0.1:4000/v1/messages"), content=False)
    assert "gen_ai.usage.cost" not in gateway.attributes  # unknown, never zero
    assert gateway.attributes["llm_proxy.cost.source"] == "unknown"


LITELLM_ID = "call_abc" + SIGNATURE_IN_ID + "EqQBCkgIARABGAIiQL" + "y" * 200


def _chat_exchange(messages: list, **changes) -> Exchange:
    body = json.dumps({"model": "m", "messages": messages}).encode()
    return anthropic_exchange(wire_format="chat_completions", path="/v1/chat/completions", request_body=body, **changes)


def test_no_opaque_value_reaches_a_span_whatever_carries_it() -> None:
    secret = "gAAAAAB" + "z" * 400
    responses = json.dumps(
        {"model": "gpt-5", "input": [{"type": "compaction", "id": "cmp_1", "encrypted_content": secret}]}
    ).encode()
    compaction = anthropic_exchange(wire_format="openai_responses", path="/v1/responses", request_body=responses)
    assert secret[:40] not in json.dumps(plan_span(compaction, content=True).attributes)
    call = {"id": LITELLM_ID, "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": LITELLM_ID, "content": "a.txt"},
    ]
    attributes = plan_span(_chat_exchange(messages), content=True).attributes
    assert "EqQBCkgIARABGAIiQL" not in json.dumps(attributes)
    assert "call_abc" in attributes["gen_ai.input.messages"]


def test_span_events_never_carry_a_signature_inside_a_call_id() -> None:
    from llm_reasoning_proxy.shared.events import Repaired
    from llm_reasoning_proxy.shared.records import RepairAction

    action = RepairAction("restored", "messages[1]", 1, ["reasoning_content"], tool_call_id=LITELLM_ID)
    repaired = genai.span_event(
        Repaired(flow_id="f", host="h", url="u", wire_format="chat_completions", applied=True, cache_hits=1,
                 actions=[action], total=1),
        1,
    )  # fmt: skip
    diagnosed = genai.span_event(
        Diagnosed(flow_id="f", host="h", url="u", wire_format="chat_completions", status=400, rule="r", summary="s",
                  problem="missing", tool_call_ids=[LITELLM_ID], advice="a", message="m"),
        2,
    )  # fmt: skip
    assert repaired is not None and diagnosed is not None
    assert "EqQBCkgIARABGAIiQL" not in json.dumps([repaired.attributes, diagnosed.attributes])
    assert "call_abc" in repaired.attributes["llm_proxy.actions"][0]


def test_content_is_masked_as_the_event_log_masks_json() -> None:
    escaped = '{"k": "sk\\u002dproj-' + "A" * 48 + '", "Cookie": "session=s3cr3t-value-1234"}'
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": escaped}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": escaped},
    ]
    shown = plan_span(_chat_exchange(messages), content=True).attributes["gen_ai.input.messages"]
    assert "A" * 48 not in json.loads(shown).__repr__() and "s3cr3t" not in shown


def test_the_same_text_from_two_callers_is_two_conversations() -> None:
    links = ConversationLinks()
    said = [{"role": "assistant", "content": "Hello! How can I help you today?"}, {"role": "user", "content": "hi"}]
    answer = read_answer(
        "chat_completions",
        json.dumps({"choices": [{"message": {"role": "assistant", "content": said[0]["content"]}}]}).encode(),
        sse=False,
    )
    first = plan_span(_chat_exchange([], scope="a", answer=answer, whole_answer=True), content=False)
    links.remember(first.issued, TurnPlace(1, 1, 1))
    assert links.find(plan_span(_chat_exchange(said, scope="a"), content=False).links) is not None
    assert links.find(plan_span(_chat_exchange(said, scope="b"), content=False).links) is None


def test_a_chunk_that_only_says_usage_is_null_is_no_summary() -> None:
    reader = formats.by_name("chat_completions").reader()
    transcriber = formats.TRANSCRIBERS["chat_completions"]
    reading = ReadingAndAssembling(reader, transcriber.assembler, transcriber.summary_markers)
    content = b'{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}],"usage":null}'
    assert reading._summary(content) is False
    assert reading._summary(b'{"usage":{"prompt_tokens":1}}') is True


def test_an_assembler_that_fails_leaves_the_capture_as_it_was() -> None:
    body = next(path for path in _recorded_streams() if "deepseek" in path.parent.name).read_bytes()
    alone = formats.by_name("chat_completions").reader()
    read_recorded(alone, body, sse=True)

    class Broken(formats.TRANSCRIBERS["chat_completions"].assembler().__class__):
        def event(self, payload, name):
            raise TypeError("broken")

    beside = ReadingAndAssembling(formats.by_name("chat_completions").reader(), Broken)
    read_recorded(beside, body, sse=True)
    assert beside.records(complete=True) == alone.records(complete=True)
    assert beside.answer() is None and beside.problem == "TypeError: broken"


def test_a_batch_is_cut_by_bytes_and_stopping_without_waiting_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.traces import export as export_module

    monkeypatch.setattr(export_module, "BATCH_BYTES", 20_000)
    big = [{"role": "user", "content": "word " * 2000}]
    with OtlpSink() as sink:
        export = export_module.SpanExport(f"{sink.url}/v1/traces", display=sink.url, content=True)
        try:
            for i in range(6):
                export.submit(_chat_exchange(big, flow_id=f"f{i}"))
            sink.wait_for(6)
            assert sink.exports >= 3  # about 10 KB a span, 20 KB a batch
            sink.hold.clear()  # a collector that takes the next export and never answers
            export.submit(_chat_exchange(big, flow_id="f7"))
            export.stop(wait=False)
            assert export._thread.is_alive()  # returned while the thread still waits on the collector
        finally:
            sink.hold.set()


def test_flows_whose_spans_wait_are_bounded_by_what_they_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.hooks import traces as hook
    from llm_reasoning_proxy.hooks.runtime import Runtime

    monkeypatch.setattr(hook, "MAX_PENDING", 100)
    traces = hook.Traces(Runtime())
    for i in range(1000):  # events of flows whose hooks never come
        traces._event(Skipped(flow_id=f"f{i}", url="u", reason="r" * 500))
    assert len(traces._pending) <= 100
    assert traces._held == sum(p.size for p in traces._pending.values()) <= hook.MAX_HELD_BYTES
    assert "f999" in traces._pending and "f0" not in traces._pending  # the oldest went first


def test_a_flow_let_go_of_while_its_answer_came_is_not_counted_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.answer.tap import TapResult
    from llm_reasoning_proxy.hooks import traces as hook
    from llm_reasoning_proxy.hooks.runtime import Runtime
    from mitmproxy.test import tflow

    monkeypatch.setattr(hook, "MAX_HELD_BYTES", 10_000)
    traces = hook.Traces(Runtime())
    flow = tflow.tflow(resp=True)
    traces._held_for(flow.id).ended = True
    traces._event(Skipped(flow_id="newer", url="u", reason="r"))
    answer = read_answer(
        "anthropic_messages", json.dumps({"content": [{"type": "text", "text": "x" * 20_000}]}).encode(), sse=False
    )
    traces._answer(flow, TapResult(complete=True, sse=False, read=True, answer=answer))  # evicts the flow itself
    assert traces._held == sum(p.size for p in traces._pending.values()) >= 0
