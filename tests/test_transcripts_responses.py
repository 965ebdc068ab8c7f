"""The Responses API transcriber: real captures (OpenAI, xAI) read as conversations and answers, streamed and not."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy.transcripts import conversation, read_answer
from llm_reasoning_proxy.transcripts.view import render_answer, render_conversation
from llm_reasoning_proxy.wire.conversation import Answer, Message, digest

FIXTURES = Path(__file__).parent / "fixtures"
OPENAI = FIXTURES / "openai-responses"
XAI = FIXTURES / "xai"
WIRE = "openai_responses"
ROUNDTRIP = "pydanticai_gpt5_reasoning_function_call_roundtrip_{}_{}.json"
SUMMARY_STREAM = OPENAI / "codecompanion_gpt5_reasoning_stream.sse"
CALLS_STREAM = OPENAI / "codecompanion_reasoning_then_function_calls_stream.sse"
FRAMED_STREAM = OPENAI / "pydanticai_gpt5_stream_reasoning_function_calls_0_response_200.sse"
XAI_CHUNKS = XAI / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_stream.chunks.txt"
XAI_FROM_STREAM = XAI / "vercel_grok_code_fast_1_reasoning_encrypted_store_false_response_from_stream.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def payloads(path: Path) -> list[dict[str, Any]]:
    """A capture's stream payloads: `data:` lines of an SSE file, or one JSON document a line (xAI's chunks)."""
    lines = path.read_text().splitlines()
    if path.suffix == ".sse":
        return [json.loads(line[len("data:") :]) for line in lines if line.startswith("data:")]
    return [json.loads(line) for line in lines if line.strip()]


def sse(docs: list[dict[str, Any]], *, named: bool = False) -> bytes:
    """Payloads framed as SSE events (codecompanion's stubs and xAI's chunks were recorded without the blank line
    between events), with `event:` lines when `named`."""
    framed = []
    for doc in docs:
        head = f"event: {doc.get('type')}\n" if named else ""
        framed.append(f"{head}data: {json.dumps(doc, separators=(',', ':'))}\n\n")
    return "".join(framed).encode()


def streamed(docs: list[dict[str, Any]], **kwargs: Any) -> Answer:
    return read_answer(WIRE, sse(docs, **kwargs), sse=True)


def texts(message: Message, kind: str, field: str = "") -> list[str]:
    return [p.text for p in message.parts if p.kind == kind and p.field == field]


def by_role(answer: Answer, role: str) -> list[Message]:
    return [m for m in answer.messages if m.role == role]


def final_response(path: Path) -> dict[str, Any]:
    (done,) = [d for d in payloads(path) if d["type"] == "response.completed"]
    return done["response"]


# --- requests ---------------------------------------------------------------------------------------------------


def test_a_stateless_round_trip_request_shows_each_input_item_with_its_reasoning_call_and_output() -> None:
    doc = load(OPENAI / ROUNDTRIP.format(1, "request"))
    request = conversation(WIRE, doc, "/v1/responses")
    assert request.model == "gpt-5" and request.stream is False
    assert request.tools == ["get_country"]
    assert request.settings == {"include": ["reasoning.encrypted_content"]}
    assert [m.role for m in request.messages] == ["user", "reasoning", "function_call", "function_call_output"]
    assert [m.where for m in request.messages] == [f"input[{i}]" for i in range(4)]
    user, reasoning, call, output = request.messages
    assert texts(user, "text") == ["What is the capital of the country?"]
    item = doc["input"][1]
    assert reasoning.note == f"id {item['id']}"
    (opaque,) = reasoning.parts  # an empty summary adds nothing
    assert opaque.kind == "opaque" and opaque.field == "encrypted_content"
    assert opaque.length == len(item["encrypted_content"]) == 2916
    assert opaque.digest == digest(item["encrypted_content"])
    (tool_call,) = call.parts
    assert (tool_call.kind, tool_call.name, tool_call.call_id, tool_call.text) == (
        "tool_call",
        "get_country",
        "call_1w9YRdMtRTRucwZShoZYlLJp",
        "{}",
    )
    assert call.note == "id fc_0c71d6d8526a7a4b006920e0447ea8819da94e572b1f077c44"
    (result,) = output.parts
    assert (result.kind, result.call_id, result.text) == ("tool_result", "call_1w9YRdMtRTRucwZShoZYlLJp", "Mexico")
    assert call.key() == ("function_call", ("call_1w9YRdMtRTRucwZShoZYlLJp",))


def test_a_streamed_request_shows_its_reasoning_settings() -> None:
    request = conversation(WIRE, load(OPENAI / "pydanticai_gpt5_stream_reasoning_function_calls_0_request.json"))
    assert request.stream is True and request.tools == ["final_result"]
    # previous_response_id is null in the capture: a setting sent as null is not shown
    assert request.settings == {
        "reasoning": {"effort": "low", "summary": None},
        "include": ["reasoning.encrypted_content"],
    }


def test_instructions_a_string_input_and_every_item_type_are_read() -> None:
    doc = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "store": False,
        "previous_response_id": "resp_1",
        "tools": [{"type": "function", "name": "weather"}, {"type": "web_search"}, {"type": "custom", "name": "sh"}],
        "input": [
            {
                "type": "message",
                "role": "developer",
                "content": [
                    {"type": "input_text", "text": "rules"},
                    {"type": "input_image", "image_url": "https://x/y.png"},
                ],
            },
            {
                "role": "assistant",
                "content": [{"type": "output_text", "text": "hi"}, {"type": "refusal", "refusal": "no"}],
            },
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "S1"}, {"type": "summary_text", "text": "S2"}],
                "content": [{"type": "reasoning_text", "text": "R"}],
                "encrypted_content": "ENC",
            },
            {"type": "custom_tool_call", "call_id": "c1", "name": "sh", "input": "ls"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "a.txt"}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "item_reference", "id": "msg_9"},
            {"type": "something_new", "x": 1},
        ],
    }
    request = conversation(WIRE, doc)
    assert request.tools == ["weather", "web_search", "sh"]
    assert request.settings == {"previous_response_id": "resp_1", "store": False}
    roles = [m.role for m in request.messages]
    assert roles == [
        "system",
        "developer",
        "assistant",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "item_reference",
        "something_new",
    ]
    system, developer, assistant, reasoning, custom, custom_out, search, reference, unknown = request.messages
    assert system.where == "instructions" and texts(system, "text") == ["Be brief."]
    assert texts(developer, "text") == ["rules"]
    assert [(p.kind, p.name, p.text) for p in developer.parts][1] == ("media", "input_image", "https://x/y.png")
    assert texts(assistant, "text") == ["hi"] and texts(assistant, "text", "refusal") == ["no"]
    assert texts(reasoning, "reasoning", "summary") == ["S1", "S2"]
    assert texts(reasoning, "reasoning", "content") == ["R"]
    assert [p.value for p in reasoning.parts if p.kind == "opaque"] == ["ENC"] and reasoning.note == "id rs_1"
    assert [(p.kind, p.call_id, p.name, p.text) for p in custom.parts] == [("tool_call", "c1", "sh", "ls")]
    assert [(p.kind, p.call_id, p.text) for p in custom_out.parts] == [("tool_result", "c1", "a.txt")]
    for message in (search, reference, unknown):
        (part,) = message.parts
        assert part.kind == "other" and json.loads(part.text) == doc["input"][int(message.where[len("input[") : -1])]
    assert reference.note == "id msg_9"

    plain = conversation(WIRE, {"model": "m", "input": "just text"})
    assert [(m.role, m.where, texts(m, "text")) for m in plain.messages] == [("user", "input", ["just text"])]


def test_an_azure_deployment_path_names_the_model_the_body_leaves_out() -> None:
    request = conversation(WIRE, {"input": "hi"}, "/openai/deployments/my-gpt5/responses?api-version=2025-04-01")
    assert request.model == "my-gpt5"


@pytest.mark.parametrize(
    "doc",
    [
        None,
        42,
        "text",
        [1, 2],
        {"input": 42},
        {"input": [1, None, "x", [], {"role": "user", "content": 7}, {"type": "reasoning", "summary": 3}]},
        {"input": [{"type": "function_call", "arguments": {"a": 1}, "name": 5, "call_id": 6}]},
        {"instructions": 5, "tools": "all", "input": [{"type": "message", "content": [1, {"type": "input_text"}]}]},
    ],
)
def test_a_request_of_the_wrong_shape_does_not_raise(doc: Any) -> None:
    request = conversation(WIRE, doc)
    assert request.messages or doc == {"input": None}
    for message in request.messages:
        for part in message.parts:
            assert isinstance(part.text, str)


def test_a_content_that_is_a_number_is_kept_as_other() -> None:
    request = conversation(WIRE, {"input": [{"role": "user", "content": 7}, 3]})
    first, second = request.messages
    assert [(p.kind, p.field, p.text) for p in first.parts] == [("other", "input[0].content", "7")]
    assert (second.role, [(p.kind, p.text) for p in second.parts]) == ("?", [("other", "3")])


# --- JSON answers -----------------------------------------------------------------------------------------------


def test_a_json_answer_with_reasoning_and_a_function_call() -> None:
    doc = load(OPENAI / ROUNDTRIP.format(0, "response_200"))
    answer = read_answer(WIRE, json.dumps(doc).encode(), sse=False)
    assert answer.streamed is False and answer.model == "gpt-5-2025-08-07" and answer.finish == "completed"
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total) == (37, 272, 256, 309)
    assert answer.usage.cache_read == 0
    reasoning, call = answer.messages
    assert reasoning.where == "output[0]" and reasoning.note == f"id {doc['output'][0]['id']}"
    (opaque,) = reasoning.parts
    assert opaque.digest == digest(doc["output"][0]["encrypted_content"])
    assert [(p.name, p.call_id, p.text) for p in call.parts] == [("get_country", "call_1w9YRdMtRTRucwZShoZYlLJp", "{}")]


def test_a_json_answer_with_a_summary_and_a_message() -> None:
    doc = load(OPENAI / "codecompanion_gpt5_reasoning_response.json")
    answer = read_answer(WIRE, (OPENAI / "codecompanion_gpt5_reasoning_response.json").read_bytes(), sse=False)
    reasoning, message = answer.messages
    assert texts(reasoning, "reasoning", "summary") == [doc["output"][0]["summary"][0]["text"]]
    assert [p.length for p in reasoning.parts if p.kind == "opaque"] == [len("gAAAAABo6")]
    assert message.role == "assistant" and texts(message, "text") == ["Dynamic expressive"]
    assert not answer.usage  # this capture has no usage


def test_a_json_answer_with_parallel_function_calls() -> None:
    answer = read_answer(
        WIRE, (OPENAI / "codecompanion_gpt41_parallel_function_calls_response.json").read_bytes(), sse=False
    )
    assert [m.role for m in answer.messages] == ["function_call", "function_call"]
    calls = [p for p in answer.parts() if p.kind == "tool_call"]
    assert [(c.call_id, json.loads(c.text)["location"]) for c in calls] == [
        ("call_tgWgQU4IzqjLCPTdsbODFoOh", "London, UK"),
        ("call_kGgpknBihLExIymnhL9421wC", "Paris, France"),
    ]


def test_xai_json_answers_with_cached_input_and_encrypted_reasoning() -> None:
    stored = read_answer(
        WIRE, (XAI / "vercel_grok43_reasoning_summary_store_true_response.json").read_bytes(), sse=False
    )
    assert stored.model == "grok-4.3"
    assert (stored.usage.input, stored.usage.cache_read, stored.usage.reasoning) == (197, 128, 110)
    assert texts(stored.messages[0], "reasoning", "summary") == ['The user says: "Reply with exactly: hello"\n']
    assert not [p for p in stored.parts() if p.kind == "opaque"]  # store: true without include: no encrypted_content
    assert texts(stored.messages[1], "text") == ["hello"]
    doc = load(XAI_FROM_STREAM)
    answer = read_answer(WIRE, XAI_FROM_STREAM.read_bytes(), sse=False)
    (opaque,) = [p for p in answer.parts() if p.kind == "opaque"]
    assert opaque.length == 1731 and opaque.digest == digest(doc["output"][0]["encrypted_content"])


def test_an_error_document_and_an_incomplete_answer() -> None:
    error = {
        "error": {"message": "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item"}
    }
    answer = read_answer(WIRE, json.dumps(error).encode(), sse=False)
    assert answer.problem == error["error"]["message"] and answer.messages == []
    incomplete = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    assert read_answer(WIRE, json.dumps(incomplete).encode(), sse=False).finish == "max_output_tokens"


# --- streamed answers -------------------------------------------------------------------------------------------


def test_a_streamed_summary_and_message_come_from_the_completed_response() -> None:
    docs = payloads(SUMMARY_STREAM)
    answer = streamed(docs)
    final = final_response(SUMMARY_STREAM)
    assert answer.streamed and answer.events == 433 and answer.unreadable == 0
    assert answer.model == "gpt-5-2025-08-07" and answer.finish == "completed"
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total) == (
        992,
        649,
        640,
        1641,
    )
    reasoning, message = answer.messages
    assert texts(reasoning, "reasoning", "summary") == [s["text"] for s in final["output"][0]["summary"]]
    assert len(texts(reasoning, "reasoning", "summary")) == 4
    assert texts(message, "text") == ["Dynamic object-oriented"]
    (opaque,) = [p for p in reasoning.parts if p.kind == "opaque"]
    # response.completed carries a re-encrypted copy, not output_item.done's: the completed one is shown
    assert opaque.digest == digest(final["output"][0]["encrypted_content"])


def test_without_the_completed_event_the_done_items_are_used() -> None:
    docs = [d for d in payloads(SUMMARY_STREAM) if d["type"] != "response.completed"]
    answer = streamed(docs)
    (done,) = [d["item"] for d in docs if d["type"] == "response.output_item.done" and d["output_index"] == 0]
    reasoning, message = answer.messages
    assert [p.digest for p in reasoning.parts if p.kind == "opaque"] == [digest(done["encrypted_content"])]
    assert texts(reasoning, "reasoning", "summary") == [s["text"] for s in done["summary"]]
    assert texts(message, "text") == ["Dynamic object-oriented"]
    assert answer.finish == "in_progress" and not answer.usage


def test_from_deltas_alone_the_summary_parts_and_the_text_are_joined_in_order() -> None:
    docs = [d for d in payloads(SUMMARY_STREAM) if d["type"] not in ("response.completed", "response.output_item.done")]
    answer = streamed(docs)
    reasoning, message = answer.messages
    expected = {}
    for doc in docs:
        if doc["type"] == "response.reasoning_summary_text.delta":
            expected[doc["summary_index"]] = expected.get(doc["summary_index"], "") + doc["delta"]
    assert texts(reasoning, "reasoning", "summary") == [expected[i] for i in range(4)]
    assert texts(reasoning, "reasoning", "summary") == [
        s["text"] for s in final_response(SUMMARY_STREAM)["output"][0]["summary"]
    ]
    assert texts(message, "text") == ["Dynamic object-oriented"]
    # the added stub's encrypted_content is all there is
    (added,) = [d["item"] for d in docs if d["type"] == "response.output_item.added" and d["output_index"] == 0]
    assert [p.digest for p in reasoning.parts if p.kind == "opaque"] == [digest(added["encrypted_content"])]


def test_streamed_parallel_function_calls_with_their_arguments() -> None:
    docs = payloads(CALLS_STREAM)
    expected = [
        ("call_hvKk3FjuupQx8xeHeVbQNZkM", "weather", '{"units":"celsius","location":"London, United Kingdom"}'),
        ("call_lzBOVwzUEAuTss7Gifvp1Rwi", "weather", '{"units":"celsius","location":"Paris, France"}'),
    ]
    for kept in (docs, [d for d in docs if d["type"] not in ("response.completed", "response.output_item.done")]):
        answer = streamed(kept)
        assert [m.role for m in answer.messages] == ["reasoning", "function_call", "function_call"]
        assert [(p.call_id, p.name, p.text) for p in answer.parts() if p.kind == "tool_call"] == expected
    answer = streamed(docs)
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning) == (868, 383, 320)
    summary = "".join(d["delta"] for d in docs if d["type"] == "response.reasoning_summary_text.delta")
    assert texts(answer.messages[0], "reasoning", "summary") == [summary]


def test_a_stream_recorded_with_its_event_lines_is_read_as_it_is() -> None:
    answer = read_answer(WIRE, FRAMED_STREAM.read_bytes(), sse=True)
    assert answer.events == 14 and answer.model == "gpt-5-2025-08-07"
    assert [m.role for m in answer.messages] == ["reasoning", "function_call"]
    assert [(p.name, p.text) for p in answer.parts() if p.kind == "tool_call"] == [("final_result", '{"result":6666}')]
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total) == (53, 469, 448, 522)


@pytest.mark.parametrize("named", [False, True])
@pytest.mark.parametrize("keep", ["all", "no-completed", "deltas-only"])
def test_xais_stream_gives_the_same_answer_from_any_of_its_copies(named: bool, keep: str) -> None:
    docs = payloads(XAI_CHUNKS)
    if keep != "all":
        docs = [d for d in docs if d["type"] != "response.completed"]
    if keep == "deltas-only":
        docs = [d for d in docs if d["type"] != "response.output_item.done"]
    answer = streamed(docs, named=named)
    final = load(XAI_FROM_STREAM)
    reasoning, message = answer.messages
    assert texts(reasoning, "reasoning", "summary") == [final["output"][0]["summary"][0]["text"]]
    assert texts(message, "text") == [final["output"][1]["content"][0]["text"]]
    opaque = [p for p in reasoning.parts if p.kind == "opaque"]
    if keep == "deltas-only":  # xAI's added stub has no encrypted_content
        assert opaque == []
    else:
        assert [p.digest for p in opaque] == [digest(final["output"][0]["encrypted_content"])]
    if keep == "all":
        assert (answer.usage.input, answer.usage.output, answer.usage.reasoning) == (
            final["usage"]["input_tokens"],
            final["usage"]["output_tokens"],
            final["usage"]["output_tokens_details"]["reasoning_tokens"],
        )


def test_the_event_name_stands_in_for_a_missing_type() -> None:
    docs = [{k: v for k, v in d.items() if k != "type"} | {"_type": d["type"]} for d in payloads(CALLS_STREAM)]
    framed = "".join(f"event: {d.pop('_type')}\ndata: {json.dumps(d)}\n\n" for d in docs).encode()
    answer = read_answer(WIRE, framed, sse=True)
    assert [m.role for m in answer.messages] == ["reasoning", "function_call", "function_call"]
    assert answer.usage.total == 1251


def test_a_stream_cut_in_the_middle_gives_what_arrived() -> None:
    raw = sse(payloads(CALLS_STREAM))
    docs = payloads(CALLS_STREAM)
    # cut in the middle of the second call's arguments, and in the middle of an event
    at = raw.index(b'"delta":"\\"Paris"')
    answer = read_answer(WIRE, raw[:at], sse=True)
    assert answer.unreadable == 1  # the half event
    reasoning, first, second = answer.messages
    assert [p.text for p in first.parts] == ['{"units":"celsius","location":"London, United Kingdom"}']
    assert [(p.call_id, p.text) for p in second.parts] == [
        ("call_lzBOVwzUEAuTss7Gifvp1Rwi", '{"units":"celsius","location":')
    ]
    (done,) = [d["item"] for d in docs if d["type"] == "response.output_item.done" and d["output_index"] == 0]
    assert texts(reasoning, "reasoning", "summary") == [done["summary"][0]["text"]]
    assert answer.finish == "in_progress" and not answer.usage
    # cut inside the summary: its text so far
    at = raw.index(b'"sequence_number":50,') + 10
    answer = read_answer(WIRE, raw[:at], sse=True)
    (reasoning,) = answer.messages
    (summary,) = texts(reasoning, "reasoning", "summary")
    assert summary and done["summary"][0]["text"].startswith(summary) and summary != done["summary"][0]["text"]


def test_a_failed_response_and_an_error_event_are_the_problem() -> None:
    failed = {
        "type": "response.failed",
        "response": {"status": "failed", "error": {"code": "server_error", "message": "boom"}},
    }
    answer = streamed([failed])
    assert answer.problem == "boom" and answer.finish == "failed"
    answer = streamed([{"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}])
    assert answer.problem == "slow down"


def test_ten_thousand_deltas_are_joined_once() -> None:
    docs: list[dict[str, Any]] = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant"},
        }
    ]
    docs += [
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": f"{i % 10}"}
        for i in range(10_000)
    ]
    docs += [{"type": "response.function_call_arguments.delta", "item_id": "fc_x", "delta": "a"} for _ in range(10_000)]
    started = time.perf_counter()
    answer = streamed(docs)
    assert time.perf_counter() - started < 10
    message, call = answer.messages
    assert texts(message, "text") == ["0123456789" * 1000] and message.note == "id msg_1"
    assert [(p.kind, p.text) for p in call.parts] == [("tool_call", "a" * 10_000)]


@pytest.mark.parametrize(
    "events",
    [
        [
            {"type": "response.output_text.delta", "delta": 5},
            {"type": "response.output_text.delta", "output_index": True},
        ],
        [{"type": "response.output_item.added", "item": 3}, {"type": "response.output_item.done", "item": [1]}],
        [{"type": "response.output_item.done", "output_index": "x", "item": {"type": "reasoning", "summary": 9}}],
        [{"type": "response.completed", "response": {"output": [1, "x", {"type": 5}], "usage": {"input_tokens": "9"}}}],
        [{"type": "response.completed", "response": "nope"}, {"type": 7}, {"nothing": 1}],
        [{"type": "response.output_text.delta", "output_index": -1, "content_index": 10**30, "delta": "x"}],
        [{"type": "response.reasoning_summary_text.delta", "summary_index": None, "delta": "s", "item_id": 4}],
    ],
)
def test_hostile_events_do_not_raise(events: list[dict[str, Any]]) -> None:
    answer = streamed(events)
    assert answer.events == len(events)
    for part in answer.parts():
        assert isinstance(part.text, str)


@pytest.mark.parametrize(
    "body",
    [b"[1, 2]", b'{"output": 5}', b'{"output": [null, {"type": "message", "content": 12}]}', b'"text"', b"not json"],
)
def test_hostile_documents_do_not_raise(body: bytes) -> None:
    answer = read_answer(WIRE, body, sse=False)
    for part in answer.parts():
        assert isinstance(part.text, str)


# --- the view ---------------------------------------------------------------------------------------------------


def test_the_view_shows_the_assembled_text_and_only_a_label_for_encrypted_content() -> None:
    docs = payloads(SUMMARY_STREAM)
    final = final_response(SUMMARY_STREAM)
    rendered = render_answer(streamed(docs))
    text = rendered.text()
    assert "Dynamic object-oriented" in [t for line in rendered.lines for _, t in line]
    assert "**Deciding on Ruby's description**" in text and "usage: input 992" in text
    encrypted = final["output"][0]["encrypted_content"]
    assert encrypted not in text and encrypted[:40] not in text
    assert f"encrypted_content: {len(encrypted):,} characters, sha256 {digest(encrypted)}" in text


def test_the_view_of_a_request_shows_its_items_and_hides_encrypted_content() -> None:
    doc = load(OPENAI / ROUNDTRIP.format(1, "request"))
    text = render_conversation(conversation(WIRE, doc, "/v1/responses"), None).text()
    encrypted = doc["input"][1]["encrypted_content"]
    assert encrypted not in text and encrypted[:40] not in text
    assert f"2,916 characters, sha256 {digest(encrypted)}" in text
    for line in (
        "What is the capital of the country?",
        "tool call get_country",
        "tool result for call_1w9YRdMtRTRucwZShoZYlLJp: Mexico",
    ):
        assert line in text
    assert f"reasoning  input[1]  (id {doc['input'][1]['id']})" in text


def test_a_recording_without_blank_lines_between_events_is_read_line_by_line() -> None:
    answer = read_answer(WIRE, CALLS_STREAM.read_bytes(), sse=True)  # codecompanion recorded its stubs this way
    assert [m.role for m in answer.messages] == ["reasoning", "function_call", "function_call"]
