"""The Gemini native transcriber: real captures read as conversations and answers (streamed, JSON, JSON arrays)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from llm_reasoning_proxy.transcripts import conversation, read_answer
from llm_reasoning_proxy.transcripts.diff import compare
from llm_reasoning_proxy.transcripts.view import render_answer, render_conversation
from llm_reasoning_proxy.wire.conversation import Answer, Message, Part, digest

FIXTURES = Path(__file__).parent / "fixtures" / "gemini"
WIRE = "gemini_native"
STREAM_PATH = "/v1beta/models/gemini-3-pro-preview:streamGenerateContent?alt=sse"
VERTEX_PATH = "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro:generateContent"
THOUGHTS = FIXTURES / "pydanticai_gemini25pro_stream_thought_parts_text_signature_0_response_200.sse"
CALL_STREAM = FIXTURES / "pydanticai_gemini3pro_stream_functioncall_signature_roundtrip_0_response_200.sse"
TEXT_STREAM = FIXTURES / "pydanticai_gemini3pro_stream_functioncall_signature_roundtrip_1_response_200.sse"
ROUNDTRIP_REQUEST = FIXTURES / "pydanticai_gemini3pro_stream_functioncall_signature_roundtrip_1_request.json"
DUMMY = "pydanticai_gemini3pro_dummy_signature_context_engineering_{}.json"
CODECOMPANION = FIXTURES / "codecompanion_functioncall_thoughtsignature_stream.sse"


def load(path: Path) -> Any:
    return json.loads(path.read_text())


def chunks(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line[len("data:") :]) for line in path.read_text().splitlines() if line.startswith("data:")]


def sse(docs: list[Any]) -> bytes:
    return "".join(f"data: {json.dumps(doc)}\n\n" for doc in docs).encode()


def kinds(message: Message) -> list[tuple[str, str]]:
    return [(p.kind, p.field) for p in message.parts]


def parts_of(path: Path) -> list[dict[str, Any]]:
    return [p for doc in chunks(path) for c in doc["candidates"] for p in c["content"]["parts"]]


def thought_and_answer(path: Path) -> tuple[str, str]:
    parts = parts_of(path)
    return (
        "".join(p["text"] for p in parts if p.get("thought")),
        "".join(p["text"] for p in parts if "text" in p and not p.get("thought")),
    )


def streamed(path: Path) -> Answer:
    return read_answer(WIRE, path.read_bytes(), sse=True)


# --- requests ---------------------------------------------------------------------------------------------------


def test_a_replayed_function_call_with_its_signature_and_its_response() -> None:
    doc = load(FIXTURES / DUMMY.format("request"))
    request = conversation(WIRE, doc, STREAM_PATH)
    assert request.model == "gemini-3-pro-preview" and request.stream is True
    assert request.tools == ["get_country", "final_result"] and request.settings == {}
    assert [(m.role, m.where) for m in request.messages] == [
        ("user", "contents[0]"),
        ("model", "contents[1]"),
        ("user", "contents[2]"),
    ]
    question, model, result = request.messages
    assert [p.text for p in question.parts] == ["What is the capital of the country?"]
    call, signature = model.parts
    assert (call.kind, call.name, call.call_id, call.text) == (
        "tool_call",
        "get_country",
        "call_1w9YRdMtRTRucwZShoZYlLJp",
        "{}",
    )
    value = doc["contents"][1]["parts"][0]["thoughtSignature"]
    assert (signature.kind, signature.field, signature.call_id) == ("opaque", "thoughtSignature", call.call_id)
    assert signature.length == len(value) == 48 and signature.digest == digest(value)
    (response,) = result.parts
    assert (response.kind, response.name, response.call_id) == ("tool_result", "get_country", call.call_id)
    assert json.loads(response.text) == {"return_value": "Mexico"}
    assert model.key() == ("model", ("call_1w9YRdMtRTRucwZShoZYlLJp",))


def test_a_system_instruction_and_the_thinking_config() -> None:
    doc = load(FIXTURES / "pydanticai_gemini25pro_stream_thought_parts_text_signature_0_request.json")
    request = conversation(WIRE, doc, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse")
    assert request.model == "gemini-2.5-pro" and request.stream is True
    assert request.settings == {"thinkingConfig": {"includeThoughts": True}} and request.tools == ["dummy"]
    system, user = request.messages
    assert (system.role, system.where, [p.text for p in system.parts]) == (
        "system",
        "systemInstruction",
        ["You are a helpful assistant."],
    )
    assert (user.role, [p.text for p in user.parts]) == ("user", ["How do I cross the street?"])


@pytest.mark.parametrize(
    ("path", "model", "stream"),
    [
        (VERTEX_PATH, "gemini-3-pro", False),
        (VERTEX_PATH.replace(":generateContent", ":streamGenerateContent"), "gemini-3-pro", True),
        ("/v1beta/models/gemini-2.5-flash:generateContent?key=k", "gemini-2.5-flash", False),
        ("/v1beta/models/gemini-2.5-flash:generateContent?x=:streamGenerateContent", "gemini-2.5-flash", False),
        ("/upload/elsewhere", None, False),
    ],
)
def test_the_model_and_streaming_come_from_the_path(path: str, model: str | None, stream: bool) -> None:
    request = conversation(WIRE, {"contents": []}, path)
    assert (request.model, request.stream) == (model, stream)


def test_a_snake_case_request_thought_parts_media_and_unknown_parts() -> None:
    doc = {
        "system_instruction": {"parts": [{"text": "sys"}]},
        "generation_config": {"thinking_config": {"thinking_budget": 1024}},
        "tools": [{"function_declarations": [{"name": "f"}]}, {"googleSearch": {}}],
        "contents": [
            {"role": "user", "parts": [{"text": "look"}, {"inline_data": {"mime_type": "image/png", "data": "QUJD"}}]},
            {
                "role": "model",
                "parts": [
                    {"text": "pondering", "thought": True},
                    {"text": "answer", "thought_signature": "SIGTEXT"},
                    {"function_call": {"name": "f", "args": {"a": [1, 2]}}, "thought_signature": "SIGCALL"},
                    {"executableCode": {"language": "PYTHON", "code": "1+1"}},
                ],
            },
            {"role": "user", "parts": [{"function_response": {"name": "f", "response": {"ok": True}}}]},
            {"parts": [{"fileData": {"mimeType": "application/pdf", "fileUri": "gs://b/x.pdf"}}]},
        ],
    }
    request = conversation(WIRE, doc, VERTEX_PATH)
    assert request.settings == {"thinking_config": {"thinking_budget": 1024}}
    assert request.tools == ["f", "googleSearch"]
    system, user, model, result, file = request.messages
    assert (system.role, system.where, [p.text for p in system.parts]) == ("system", "system_instruction", ["sys"])
    assert [(p.kind, p.name, p.text) for p in user.parts] == [
        ("text", None, "look"),
        ("media", "image/png", "4 characters of base64"),
    ]
    assert kinds(model) == [
        ("reasoning", "thought"),
        ("text", ""),
        ("opaque", "thought_signature"),
        ("tool_call", ""),
        ("opaque", "thought_signature"),
        ("other", "contents[1].parts[3]"),
    ]
    thought, answer, text_signature, call, call_signature, code = model.parts
    assert (thought.text, answer.text, text_signature.value, text_signature.call_id) == (
        "pondering",
        "answer",
        "SIGTEXT",
        None,
    )
    assert (call.name, call.call_id, json.loads(call.text)) == ("f", None, {"a": [1, 2]})
    # Gemini 3 sends calls without an id: the signature is tied to the call by its name
    assert (call_signature.value, call_signature.call_id) == ("SIGCALL", "f")
    assert json.loads(code.text) == doc["contents"][1]["parts"][3]
    assert [(p.kind, p.name, p.call_id, p.text) for p in result.parts] == [("tool_result", "f", None, '{"ok":true}')]
    assert (file.role, [(p.kind, p.name, p.text) for p in file.parts]) == (
        "user",
        [("media", "application/pdf", "gs://b/x.pdf")],
    )


@pytest.mark.parametrize(
    "doc",
    [
        None,
        7,
        [1, 2],
        {"contents": 42},
        {"contents": [1, "text", None, {"parts": 5}, {"role": 3, "parts": [None, 4, {"text": 5}, {}]}]},
        {"contents": [{"parts": [{"functionCall": "f"}, {"functionResponse": [1]}, {"thoughtSignature": 12}]}]},
        {"systemInstruction": 3, "tools": "x", "generationConfig": [], "contents": [{"parts": [{"inlineData": 1}]}]},
    ],
)
def test_a_request_of_the_wrong_shape_does_not_raise(doc: Any) -> None:
    request = conversation(WIRE, doc, STREAM_PATH)
    for message in request.messages:
        for part in message.parts:
            assert isinstance(part.text, str)


def test_a_content_that_is_a_number_and_parts_that_are_not_dicts_are_kept_as_other() -> None:
    request = conversation(WIRE, {"contents": [7, {"role": "user", "parts": [3, {"text": "ok"}]}]})
    first, second = request.messages
    assert (first.role, [(p.kind, p.text) for p in first.parts]) == ("?", [("other", "7")])
    assert [(p.kind, p.field, p.text) for p in second.parts] == [
        ("other", "contents[1].parts[0]", "3"),
        ("text", "", "ok"),
    ]


# --- answers ----------------------------------------------------------------------------------------------------


def test_a_streamed_answer_joins_thought_and_answer_text_and_keeps_the_signature_with_its_text() -> None:
    answer = streamed(THOUGHTS)
    assert answer.streamed and answer.events == 23 and answer.unreadable == 0
    assert answer.model == "gemini-2.5-pro" and answer.finish == "STOP"
    usage = chunks(THOUGHTS)[-1]["usageMetadata"]
    assert (
        (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total)
        == (
            usage["promptTokenCount"],
            usage["candidatesTokenCount"],
            usage["thoughtsTokenCount"],
            usage["totalTokenCount"],
        )
        == (34, 469, 787, 1290)
    )
    (message,) = answer.messages
    assert (message.role, message.where) == ("model", "candidates[0]")
    assert kinds(message) == [("reasoning", "thought"), ("text", ""), ("opaque", "thoughtSignature")]
    thought, text, signature = message.parts
    assert (thought.text, text.text) == thought_and_answer(THOUGHTS)
    assert thought.text.startswith("**Clarifying User Goals**") and "**Crafting Safe Instructions**" in thought.text
    assert text.text.startswith("This is a great question!")
    (value,) = [p["thoughtSignature"] for p in parts_of(THOUGHTS) if "thoughtSignature" in p]
    assert signature.length == len(value) and signature.digest == digest(value) and signature.value == value


def test_a_streamed_function_call_without_an_id_keeps_its_signature_and_the_empty_text_part_adds_nothing() -> None:
    answer = streamed(CALL_STREAM)
    assert answer.model == "gemini-3-pro-preview" and answer.finish == "STOP"
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total) == (29, 10, 202, 241)
    (message,) = answer.messages
    call, signature = message.parts
    assert (call.kind, call.name, call.call_id, call.text) == ("tool_call", "get_country", None, "{}")
    value = chunks(CALL_STREAM)[0]["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert (signature.kind, signature.call_id, signature.length, signature.digest) == (
        "opaque",
        "get_country",
        1408,
        digest(value),
    )
    # the client sent it back re-encoded in URL-safe base64: the same length, another value
    request = conversation(WIRE, load(ROUNDTRIP_REQUEST), STREAM_PATH)
    (replayed,) = [p for p in request.messages[1].parts if p.kind == "opaque"]
    assert replayed.length == signature.length and replayed.digest != signature.digest
    assert replayed.call_id == "pyd_ai_29bf73b69e02448588e15893d47a3e7e"


def test_streamed_text_pieces_are_one_text_part() -> None:
    answer = streamed(TEXT_STREAM)
    assert [(p.kind, p.text) for p in answer.parts()] == [("text", "The capital of Mexico is Mexico City.")]
    assert (answer.usage.input, answer.usage.output, answer.usage.total) == (257, 8, 265)
    assert answer.usage.reasoning is None


def test_a_chunk_with_a_thought_and_a_call_with_an_id() -> None:
    answer = streamed(CODECOMPANION)
    (message,) = answer.messages
    assert [(p.kind, p.name, p.call_id, p.text) for p in message.parts] == [
        ("reasoning", None, None, "I should search for the README file..."),
        ("tool_call", "file_search", "abc123", '{"query":"README.md"}'),
        ("opaque", None, "abc123", ""),
    ]
    assert message.parts[2].value == "Ev0BCvoBAb4"
    assert (answer.usage.input, answer.usage.output, answer.usage.total) == (5171, 18, 5239)


def test_a_json_array_of_chunks_reads_as_the_stream_does() -> None:
    body = json.dumps(chunks(THOUGHTS)).encode()
    array = read_answer(WIRE, body, sse=False)
    stream = streamed(THOUGHTS)
    assert array.streamed is False and array.events == 23
    assert [(p.kind, p.field, p.text, p.value) for p in array.parts()] == [
        (p.kind, p.field, p.text, p.value) for p in stream.parts()
    ]
    assert array.usage == stream.usage and array.finish == "STOP"


def test_a_json_answer_with_a_signed_function_call() -> None:
    doc = load(FIXTURES / DUMMY.format("response_200"))
    answer = read_answer(WIRE, (FIXTURES / DUMMY.format("response_200")).read_bytes(), sse=False)
    assert answer.streamed is False and answer.model == "gemini-3-pro-preview" and answer.finish == "STOP"
    assert (answer.usage.input, answer.usage.output, answer.usage.reasoning, answer.usage.total) == (107, 23, 123, 253)
    (message,) = answer.messages
    call, signature = message.parts
    assert (call.name, call.call_id, json.loads(call.text)) == (
        "final_result",
        None,
        {"city": "Mexico City", "country": "Mexico"},
    )
    value = doc["candidates"][0]["content"]["parts"][0]["thoughtSignature"]
    assert (signature.call_id, signature.length, signature.digest) == ("final_result", len(value), digest(value))


def test_a_json_answer_keeps_its_parts_as_they_came() -> None:
    doc = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "a"}, {"text": "b", "thoughtSignature": "S"}]},
                "index": 0,
            },
            {"finishReason": "SAFETY", "index": 1},
        ],
        "usageMetadata": {"promptTokenCount": 3, "cachedContentTokenCount": 2},
    }
    answer = read_answer(WIRE, json.dumps(doc).encode(), sse=False)
    first, second = answer.messages
    assert [(p.kind, p.text or p.value) for p in first.parts] == [("text", "a"), ("text", "b"), ("opaque", "S")]
    assert (second.where, second.parts) == ("candidates[1]", [])
    assert answer.finish == "SAFETY" and answer.usage.cache_read == 2


def test_an_error_answer_is_the_problem() -> None:
    error = {"error": {"code": 400, "message": "Corrupted thought signature.", "status": "INVALID_ARGUMENT"}}
    for body, sse_ in ((json.dumps(error), False), (json.dumps([error]), False), (sse([error]).decode(), True)):
        answer = read_answer(WIRE, body.encode(), sse=sse_)
        assert answer.problem == "Corrupted thought signature." and answer.messages == []
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}
    assert read_answer(WIRE, json.dumps(blocked).encode(), sse=False).finish == "PROHIBITED_CONTENT"


def test_a_stream_cut_in_the_middle_gives_what_arrived() -> None:
    raw = THOUGHTS.read_bytes()
    at = raw.index(b"Stop at the Edge") + 5  # in the middle of an answer text chunk
    answer = read_answer(WIRE, raw[:at], sse=True)
    assert answer.unreadable == 1 and answer.finish is None
    (message,) = answer.messages
    thought, text, signature = message.parts
    whole_thought, whole_text = thought_and_answer(THOUGHTS)
    assert thought.text == whole_thought
    assert whole_text.startswith(text.text) and len(text.text) < len(whole_text) and "Stop at the Edge" not in text.text
    assert signature.kind == "opaque"
    at = raw.index(b"Prioritizing Safe Crossing")  # inside the thoughts
    (message,) = read_answer(WIRE, raw[:at], sse=True).messages
    (thought,) = message.parts
    assert whole_thought.startswith(thought.text) and "**Developing a Safety Protocol**" in thought.text


def test_runs_of_thought_and_text_are_joined_apart_and_calls_stay_between_them() -> None:
    def chunk(*parts: dict[str, Any]) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "index": 0}]}

    docs = [
        chunk({"text": "t1", "thought": True}),
        chunk({"text": "t2", "thought": True}),
        chunk({"text": "a1", "thoughtSignature": "S1"}, {"text": "a2"}),
        chunk({"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "S2"}),
        chunk({"functionCall": {"name": "g", "args": {"x": 1}, "id": "g1"}}),
        chunk({"text": "a3"}),
        chunk({"text": "", "thoughtSignature": "S3"}),
        {"candidates": [{"content": {"parts": [{"text": "other candidate"}]}, "index": 1, "finishReason": "STOP"}]},
    ]
    answer = read_answer(WIRE, sse(docs), sse=True)
    first, second = answer.messages
    assert [(p.kind, p.text or p.value, p.call_id) for p in first.parts] == [
        ("reasoning", "t1t2", None),
        ("text", "a1a2", None),
        ("opaque", "S1", None),
        ("tool_call", "{}", None),
        ("opaque", "S2", "f"),
        ("tool_call", '{"x":1}', "g1"),
        ("text", "a3", None),
        ("opaque", "S3", None),
    ]
    assert (second.where, [p.text for p in second.parts]) == ("candidates[1]", ["other candidate"])


@pytest.mark.slow
def test_ten_thousand_chunks_are_joined_once() -> None:
    docs = [{"candidates": [{"content": {"parts": [{"text": f"{i % 10}"}]}}]} for i in range(10_000)]
    docs += [{"candidates": [{"content": {"parts": [{"text": "t", "thought": True}]}}]} for _ in range(10_000)]
    started = time.perf_counter()
    answer = read_answer(WIRE, sse(docs), sse=True)
    assert time.perf_counter() - started < 10
    assert answer.events == 20_000
    assert [(p.kind, p.text) for p in answer.parts()] == [("text", "0123456789" * 1000), ("reasoning", "t" * 10_000)]


@pytest.mark.parametrize(
    "docs",
    [
        [{"candidates": 5}, {"candidates": [1, None, "x"]}, {"usageMetadata": [1]}, {"modelVersion": 3}],
        [{"candidates": [{"content": 5}, {"content": {"parts": 7}}, {"content": {"parts": [None, 1, {"text": 3}]}}]}],
        [{"candidates": [{"index": True, "content": {"role": 5, "parts": [{"functionCall": 1}, {"thought": True}]}}]}],
        [{"candidates": [{"index": 10**30, "content": {"parts": [{"text": "x", "thoughtSignature": {"a": 1}}]}}]}],
        [{"error": "flat"}, {"error": 5}, {"promptFeedback": 1}],
    ],
)
def test_hostile_chunks_do_not_raise(docs: list[Any]) -> None:
    for answer in (read_answer(WIRE, sse(docs), sse=True), read_answer(WIRE, json.dumps(docs).encode(), sse=False)):
        for part in answer.parts():
            assert isinstance(part.text, str)
    for doc in docs:
        read_answer(WIRE, json.dumps(doc).encode(), sse=False)


# --- the view ---------------------------------------------------------------------------------------------------


def test_the_view_shows_the_joined_text_and_only_a_label_for_the_signature() -> None:
    rendered = render_answer(streamed(THOUGHTS))
    text = rendered.text()
    whole_thought, whole_text = thought_and_answer(THOUGHTS)
    assert "This is a great question! Safely crossing the street is all about being aware and predictable." in text
    assert whole_text.split("\n")[2] in [t for line in rendered.lines for _, t in line]
    assert "reasoning (thought): **Clarifying User Goals**" in text
    (value,) = [p["thoughtSignature"] for p in parts_of(THOUGHTS) if "thoughtSignature" in p]
    assert value not in text and value[:24] not in text
    assert f"thoughtSignature: {len(value):,} characters, sha256 {digest(value)}" in text
    assert "usage: input 34, output 469, reasoning 787, total 1,290" in text


def test_the_view_of_a_request_shows_the_call_and_hides_its_signature() -> None:
    doc = load(ROUNDTRIP_REQUEST)
    text = render_conversation(conversation(WIRE, doc, STREAM_PATH), None).text()
    value = doc["contents"][1]["parts"][0]["thoughtSignature"]
    assert value not in text and value[:24] not in text
    call_id = "pyd_ai_29bf73b69e02448588e15893d47a3e7e"
    assert f"thoughtSignature of {call_id}: 1,408 characters, sha256 {digest(value)}" in text
    assert f"tool call get_country  id {call_id}" in text
    assert f'tool result for {call_id}: {{"return_value":"Mexico"}}' in text


# --- comparisons ------------------------------------------------------------------------------------------------


def _contents(*names: str) -> list[Message]:
    contents: list[Any] = [{"role": "user", "parts": [{"text": "q"}]}]
    for name in names:
        contents.append({"role": "model", "parts": [{"functionCall": {"name": name, "args": {"n": name}}}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {"name": name, "response": {"r": name}}}]})
    return conversation(WIRE, {"contents": contents}).messages


def test_a_restored_signature_on_an_id_less_call_is_marked_in_place() -> None:
    before = _contents("a", "b")
    after = _contents("a", "b")
    after[3].parts.append(Part.opaque("thoughtSignature", "SIG", "b"))
    changes = compare(before, after)
    assert (changes.added, changes.removed) == (1, 0)
    assert [p.mark for p in changes.messages[3].parts] == [None, "restored"]


def test_a_dropped_content_with_an_id_less_call_does_not_pair_with_the_next_call() -> None:
    changes = compare(_contents("a", "b"), _contents("b"), added="new", removed="dropped")
    calls = [
        (m.mark, [p.name for p in m.parts if p.kind == "tool_call"]) for m in changes.messages if m.role == "model"
    ]
    assert calls == [("dropped", ["a"]), (None, ["b"])]
