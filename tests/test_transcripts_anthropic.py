"""The Anthropic Messages transcriber: requests, JSON answers and streams (SSE, and Bedrock's InvokeModel frames)
read from real captures, what a stream cut short still gives, hostile input, and how the view shows signatures."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import time
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared.limits import MAX_CONTENT_BLOCKS
from llm_reasoning_proxy.transcripts import TRANSCRIBERS, conversation, read_answer
from llm_reasoning_proxy.transcripts.view import render_answer, render_conversation
from llm_reasoning_proxy.wire.anthropic import transcript as transcriber
from llm_reasoning_proxy.wire.conversation import Answer, Part
from llm_reasoning_proxy.wire.event_stream import event_frame

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic"
MORE = FIXTURES / "transcripts"
FORMAT = "anthropic_messages"
THINKING_STREAM = FIXTURES / "codecompanion_claude37_thinking_signature_delta_stream.sse"
REDACTED_STREAM = FIXTURES / "pydanticai_claude45_redacted_thinking_stream_0_response_200.sse"
TOOL_STREAM = MORE / "codecompanion_claude35_tool_use_input_json_delta_stream.sse"
CODE_STREAM = MORE / "pydanticai_claude_sonnet46_code_execution_thinking_stream_0_response_200.sse"
STREAMS = [THINKING_STREAM, REDACTED_STREAM, TOOL_STREAM, CODE_STREAM]
TOOL_ROUNDTRIP = FIXTURES / "pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_1_request.json"
TOOL_ANSWER = FIXTURES / "pydanticai_claude_sonnet4_thinking_tool_use_roundtrip_0_response_200.json"
REDACTED_ROUNDTRIP = FIXTURES / "pydanticai_claude45_redacted_thinking_roundtrip_1_request.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def data_lines(raw: bytes) -> list[dict]:
    """A stream's events, read the simplest way: one JSON document per `data:` line."""
    return [json.loads(line[len(b"data:") :]) for line in raw.splitlines() if line.startswith(b"data:")]


def oracle(raw: bytes) -> list[dict]:
    """The content blocks a stream builds, by the simplest reading of its events (partial_json kept as text)."""
    blocks: dict[int, dict] = {}
    for doc in data_lines(raw):
        if doc["type"] == "content_block_start":
            blocks[doc["index"]] = dict(doc["content_block"], partial_json="")
        elif doc["type"] == "content_block_delta":
            delta, block = doc["delta"], blocks[doc["index"]]
            key = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}.get(
                delta["type"]
            )
            if key is not None:
                block[key] += delta[key]
            elif delta["type"] == "input_json_delta":
                block["partial_json"] += delta["partial_json"]
    return [blocks[i] for i in sorted(blocks)]


def stream(*docs: dict) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (doc["type"].encode(), json.dumps(doc).encode()) for doc in docs)


def kinds(answer: Answer) -> list[str]:
    return [part.kind for part in answer.parts()]


def only(parts: list[Part], kind: str) -> list[Part]:
    return [part for part in parts if part.kind == kind]


# requests ------------------------------------------------------------------------------------
def test_a_tool_loop_request_reads_as_its_messages() -> None:
    doc = load(TOOL_ROUNDTRIP)
    thinking = doc["messages"][1]["content"][0]
    c = conversation(FORMAT, doc, "/v1/messages")
    assert (c.model, c.stream, c.tools) == ("claude-sonnet-4-0", False, ["get_user_country"])
    assert c.settings == {"thinking": {"budget_tokens": 3000, "type": "enabled"}}
    assert [(m.role, m.where) for m in c.messages] == [
        ("user", "messages[0]"),
        ("assistant", "messages[1]"),
        ("user", "messages[2]"),
    ]
    assistant = c.messages[1].parts
    assert [p.kind for p in assistant] == ["reasoning", "opaque", "text", "tool_call"]
    assert (assistant[0].field, assistant[0].text) == ("thinking", thinking["thinking"])
    signature = assistant[1]
    assert signature.field == "signature" and signature.value == thinking["signature"]
    assert (signature.length, signature.digest) == (736, sha(thinking["signature"]))
    call = assistant[3]
    assert (call.call_id, call.name, json.loads(call.text)) == (
        "toolu_01YGzqpRE16Vricda3Aqcejo",
        "get_user_country",
        {},
    )
    (result,) = c.messages[2].parts
    assert (result.kind, result.call_id, result.text) == ("tool_result", "toolu_01YGzqpRE16Vricda3Aqcejo", "Mexico")
    assert c.messages[1].call_ids() == ("toolu_01YGzqpRE16Vricda3Aqcejo",) == c.messages[2].call_ids()


def test_a_replayed_redacted_block_is_opaque_whole() -> None:
    doc = load(REDACTED_ROUNDTRIP)
    data = doc["messages"][1]["content"][0]["data"]
    c = conversation(FORMAT, doc, "/v1/messages")
    assert [m.role for m in c.messages] == ["user", "assistant", "user"]
    redacted, text = c.messages[1].parts
    assert (redacted.kind, redacted.field, redacted.value) == ("opaque", "redacted_thinking", data)
    assert (redacted.length, redacted.digest) == (len(data), sha(data)) and redacted.text == ""
    assert text.kind == "text" and text.text.startswith("I notice that your message")
    assert c.messages[2].parts == [Part("text", text="What was that?")]


VERTEX = "/v1/projects/p/locations/us-east5/publishers/anthropic/models"
BEDROCK_CLAUDE = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"


@pytest.mark.parametrize(
    ("path", "model", "streamed"),
    [
        (f"{VERTEX}/claude-sonnet-4@20250514:rawPredict", "claude-sonnet-4@20250514", False),
        (f"{VERTEX}/claude-opus-4-1@20250805:streamRawPredict", "claude-opus-4-1@20250805", True),
        ("/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/invoke", BEDROCK_CLAUDE, False),
        (f"/model/{BEDROCK_CLAUDE}/invoke-with-response-stream", BEDROCK_CLAUDE, True),
    ],
)
def test_the_model_comes_from_the_path_on_vertex_and_bedrock(path: str, model: str, streamed: bool) -> None:
    doc = load(TOOL_ROUNDTRIP)
    del doc["model"], doc["stream"]
    doc["anthropic_version"] = "bedrock-2023-05-31"
    c = conversation(FORMAT, doc, path)
    assert (c.model, c.stream) == (model, streamed)
    assert [m.role for m in c.messages] == ["user", "assistant", "user"]


def test_every_block_type_becomes_its_part() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo" * 100}}
    server_use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}
    search = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}
    doc = {
        "model": "claude-opus-4-1",
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high", "format": {"type": "json_schema"}},
        "tools": [{"name": "ls", "input_schema": {}}, {"type": "web_search_20250305", "name": "web_search"}, "junk"],
        "messages": [
            {"role": "user", "content": "plain text"},
            {
                "role": "user",
                "content": [
                    image,
                    {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                    {"type": "mystery", "x": 1},
                ],
            },
            {"role": "assistant", "content": [server_use, search, {"type": "redacted_thinking", "data": "RED"}]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "one"}, image]},
                    {"type": "tool_result", "tool_use_id": "b", "content": "two", "is_error": True},
                    {"type": "tool_result", "tool_use_id": "c", "content": [{"type": "text", "text": "x"}, {"k": 1}]},
                ],
            },
        ],
    }
    c = conversation(FORMAT, doc, "/v1/messages")
    assert c.tools == ["ls", "web_search"]
    assert c.settings == {"thinking": {"type": "adaptive"}, "output_config.effort": "high"}
    system, plain, media, assistant, results = c.messages
    assert (system.role, system.where, [p.text for p in system.parts]) == (
        "system",
        "system",
        ["Be brief.", "Be kind."],
    )
    assert plain.parts == [Part("text", text="plain text")]
    assert [(p.kind, p.name) for p in media.parts] == [("media", "image"), ("media", "document"), ("other", None)]
    assert media.parts[0].text == "image/png, base64, 1,100 characters"  # the data itself is never shown
    assert media.parts[1].text == "url https://example.com/a.pdf"
    assert (media.parts[2].field, json.loads(media.parts[2].text)) == (
        "messages[1].content[2]",
        {"type": "mystery", "x": 1},
    )
    assert [p.kind for p in assistant.parts] == ["other", "other", "opaque"]
    assert json.loads(assistant.parts[0].text) == server_use and json.loads(assistant.parts[1].text) == search
    assert [(p.call_id, p.text) for p in results.parts] == [
        ("a", "one\n[image: image/png, base64, 1,100 characters]"),
        ("b", "[error] two"),
        ("c", 'x\n{"k":1}'),
    ]
    assert conversation(FORMAT, {"system": "You are terse.", "messages": []}).messages[0].parts == [
        Part("text", text="You are terse.")
    ]


@pytest.mark.parametrize(
    "doc",
    [
        None,
        42,
        [1, 2],
        {"messages": 7},
        {"messages": [1, "x", None, {"role": 3, "content": 5}, {"content": [1, None, [], {"type": 9}]}]},
        {"messages": [{"role": "assistant", "content": [{"type": "thinking", "thinking": 1, "signature": 2}]}]},
        {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": 1, "name": [], "input": "x"}]}]},
        {"messages": [{"role": "user", "content": [{"type": "image", "source": "nope"}]}], "tools": "all"},
        {"model": 5, "system": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "content": 3}]}]},
    ],
)
def test_a_request_of_any_shape_is_read_without_raising(doc: object) -> None:
    c = conversation(FORMAT, doc, "/v1/messages")
    assert c.wire_format == FORMAT
    assert render_conversation(c, None).lines


# streamed answers ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_a_stream_gives_the_blocks_its_events_build(path: Path) -> None:
    raw = path.read_bytes()
    answer = read_answer(FORMAT, raw, sse=True)
    expected = oracle(raw)
    assert answer.streamed and answer.unreadable == 0 and answer.problem is None
    assert answer.events == len(data_lines(raw))
    (message,) = answer.messages
    assert (message.role, message.where) == ("assistant", "content")
    got = iter(message.parts)
    for block in expected:
        if block["type"] == "thinking":
            reasoning, signature = next(got), next(got)
            assert (reasoning.kind, reasoning.field, reasoning.text) == ("reasoning", "thinking", block["thinking"])
            assert (signature.kind, signature.value) == ("opaque", block["signature"])
        elif block["type"] == "redacted_thinking":
            assert next(got).value == block["data"]
        elif block["type"] == "text":
            assert next(got).text == block["text"]
        elif block["type"] == "tool_use":
            call = next(got)
            assert (call.kind, call.call_id, call.name) == ("tool_call", block["id"], block["name"])
            assert json.loads(call.text) == json.loads(block["partial_json"])
        else:
            part = next(got)
            assert part.kind == "other" and json.loads(part.text)["type"] == block["type"]
    assert next(got, None) is None


def test_the_thinking_stream_gives_its_text_signature_and_usage() -> None:
    raw = THINKING_STREAM.read_bytes()
    answer = read_answer(FORMAT, raw, sse=True)
    reasoning, signature, text = answer.parts()
    assert reasoning.text.startswith("The user is asking me to describe the Ruby programming language in just two")
    assert reasoning.text == oracle(raw)[0]["thinking"] and len(reasoning.text) == 794
    assert (signature.field, signature.length) == ("signature", 248)
    assert text.text == "**Elegant simplicity**\n\nNeed more details about Ruby's features?"
    assert (answer.model, answer.finish) == ("claude-3-7-sonnet-20250219", "end_turn")
    # message_start says input 484 and output 2 so far; message_delta's final output count wins.
    assert (answer.usage.input, answer.usage.output, answer.usage.cache_read, answer.usage.cache_write) == (
        484,
        data_lines(THINKING_STREAM.read_bytes())[-2]["usage"]["output_tokens"],
        0,
        0,
    )
    assert answer.usage.reasoning is None and answer.usage.total is None


def test_streamed_tool_input_is_assembled_from_its_json_deltas() -> None:
    answer = read_answer(FORMAT, TOOL_STREAM.read_bytes(), sse=True)
    text, london, paris = answer.parts()
    assert text.text == "I'll check the weather for both cities using Celsius units."
    assert (london.call_id, london.name) == ("toolu_01QRThyzKt6NibK3m1DjUTkE", "weather")
    assert json.loads(london.text) == {"location": "London, UK", "units": "celsius"}
    assert (paris.call_id, json.loads(paris.text)) == (
        "toolu_015A1zQUwKw1YE3CYvRRUdXZ",
        {"location": "Paris, France", "units": "celsius"},
    )
    assert (answer.finish, answer.usage.input, answer.usage.output) == ("tool_use", 905, 137)
    # A JSON answer's tool call reads the same way: compact JSON text of the input.
    (call,) = only(read_answer(FORMAT, TOOL_ANSWER.read_bytes(), sse=False).parts(), "tool_call")
    assert call.text == "{}"


def test_a_server_tool_stream_keeps_its_blocks_and_the_final_usage() -> None:
    answer = read_answer(FORMAT, CODE_STREAM.read_bytes(), sse=True)
    assert kinds(answer) == ["reasoning", "opaque", "text", "other", "other", "text"]
    use = json.loads(answer.parts()[3].text)
    assert use["type"] == "server_tool_use" and use["input"] == {
        "command": 'echo "65465-6544 * 65464-6+1.02255" | bc -l'
    }
    assert answer.parts()[4].field == "content[3]"
    assert answer.parts()[0].text == "Let me calculate this mathematical expression."
    # message_delta repeats the usage with the server tool's input counted: the later counts win.
    assert (answer.usage.input, answer.usage.output, answer.usage.cache_read) == (4714, 304, 0)


def test_redacted_blocks_arrive_whole_in_their_start() -> None:
    raw = REDACTED_STREAM.read_bytes()
    answer = read_answer(FORMAT, raw, sse=True)
    starts = [d["content_block"] for d in data_lines(raw) if d["type"] == "content_block_start"]
    redacted = [b["data"] for b in starts if b["type"] == "redacted_thinking"]
    assert redacted and [p.value for p in only(answer.parts(), "opaque")] == redacted
    assert all(p.field == "redacted_thinking" for p in only(answer.parts(), "opaque"))


def test_a_stream_without_blank_lines_between_events_is_read_line_by_line() -> None:
    raw = THINKING_STREAM.read_bytes()
    assert b"\n\n" not in raw  # the capture has none: one SSE event holds every data line
    spaced = read_answer(FORMAT, stream(*data_lines(raw)), sse=True)
    assert read_answer(FORMAT, raw, sse=True).parts() == spaced.parts()


def chunk_frame(event: dict) -> bytes:
    payload = {"bytes": base64.b64encode(json.dumps(event).encode()).decode(), "p": "abcdefghij"}
    return event_frame("chunk", json.dumps(payload).encode())


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_bedrock_invoke_stream_frames_read_like_the_stream_they_carry(path: Path) -> None:
    raw = path.read_bytes()
    frames = b"".join(chunk_frame(doc) for doc in data_lines(raw))
    answer = read_answer(FORMAT, frames, sse=False, aws_frames=True)
    expected = read_answer(FORMAT, raw, sse=True)
    assert answer.parts() == expected.parts() and answer.parts()
    assert (answer.model, answer.usage, answer.finish) == (expected.model, expected.usage, expected.finish)


# JSON answers ----------------------------------------------------------------------------------
def test_a_json_answer_reads_as_one_assistant_message() -> None:
    doc = load(TOOL_ANSWER)
    answer = read_answer(FORMAT, TOOL_ANSWER.read_bytes(), sse=False)
    assert not answer.streamed and (answer.model, answer.finish) == ("claude-sonnet-4-20250514", "tool_use")
    (message,) = answer.messages
    assert (message.role, message.where) == ("assistant", "content")
    assert [p.kind for p in message.parts] == ["reasoning", "opaque", "text", "tool_call"]
    assert message.parts[0].text == doc["content"][0]["thinking"]
    assert (message.parts[1].length, message.parts[1].digest) == (736, sha(doc["content"][0]["signature"]))
    assert message.parts[3].call_id == "toolu_01YGzqpRE16Vricda3Aqcejo"
    usage = doc["usage"]
    assert (answer.usage.input, answer.usage.output) == (usage["input_tokens"], usage["output_tokens"])
    assert (answer.usage.cache_read, answer.usage.cache_write, answer.usage.reasoning) == (0, 0, None)


def test_an_error_answer_is_its_problem() -> None:
    body = b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'
    answer = read_answer(FORMAT, body, sse=False)
    assert answer.problem == "overloaded_error: Overloaded" and answer.messages == []


def test_an_error_event_ends_a_stream_with_what_arrived() -> None:
    docs = data_lines(THINKING_STREAM.read_bytes())[:6]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    answer = read_answer(FORMAT, stream(*docs, error), sse=True)
    assert answer.problem == "overloaded_error: Overloaded"
    (reasoning,) = answer.parts()
    assert reasoning.text == "".join(d["delta"]["thinking"] for d in docs if d["type"] == "content_block_delta")


# streams cut short -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_a_stream_cut_anywhere_gives_what_arrived(path: Path, fraction: float) -> None:
    raw = path.read_bytes()
    cut = raw[: int(len(raw) * fraction)]
    answer = read_answer(FORMAT, cut, sse=True)
    whole = read_answer(FORMAT, raw, sse=True)
    streamed_input = {block.get("id"): block["partial_json"] for block in oracle(raw)}
    assert answer.parts() or len(cut) < 1000
    for part in answer.parts():
        if part.kind == "tool_call":  # whole: its input as JSON; cut short: as much of the JSON text as arrived
            try:
                assert json.loads(part.text) == json.loads(streamed_input[part.call_id])
            except ValueError:
                assert streamed_input[part.call_id].startswith(part.text)
            continue
        same = [p for p in whole.parts() if (p.kind, p.field, p.call_id) == (part.kind, part.field, part.call_id)]
        assert any((p.value or p.text).startswith(part.value or part.text) for p in same) or part.kind == "other"


def test_a_tool_input_cut_short_is_shown_as_it_arrived() -> None:
    docs = data_lines(TOOL_STREAM.read_bytes())
    stop = next(i for i, d in enumerate(docs) if d.get("delta", {}).get("partial_json") == '"London, ')
    answer = read_answer(FORMAT, stream(*docs[: stop + 1]), sse=True)
    call = only(answer.parts(), "tool_call")[0]
    assert call.text == '{"location": "London, ' and answer.finish is None


def test_deltas_whose_start_never_came_are_kept() -> None:
    answer = read_answer(
        FORMAT,
        stream(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hm"}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "SIG"}},
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        ),
        sse=True,
    )
    assert [(p.kind, p.text or p.value) for p in answer.parts()] == [
        ("reasoning", "Hm"),
        ("opaque", "SIG"),
        ("text", "Hi"),
    ]


def test_citations_deltas_are_kept_beside_their_text() -> None:
    citation = {"type": "char_location", "cited_text": "x", "document_index": 0}
    answer = read_answer(
        FORMAT,
        stream(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "citations_delta", "citation": citation}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "cited"}},
        ),
        sse=True,
    )
    text, citations = answer.parts()
    assert text.text == "cited" and json.loads(citations.text) == [citation]


# hostile input ---------------------------------------------------------------------------------
def test_ten_thousand_deltas_are_joined_once_and_fast() -> None:
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}
    deltas = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": f"{i} "}}
        for i in range(10_000)
    ]
    raw = stream(start, *deltas)
    began = time.perf_counter()
    answer = read_answer(FORMAT, raw, sse=True)
    assert time.perf_counter() - began < 2.0
    (reasoning,) = answer.parts()
    assert reasoning.text == "".join(f"{i} " for i in range(10_000)) and answer.events == 10_001


def test_hostile_events_do_not_raise() -> None:
    events = [
        {"type": "message_start", "message": "nope"},
        {"type": "message_start", "message": {"model": 5, "usage": [], "role": None}},
        {"type": "content_block_start", "index": 10**12, "content_block": {"type": "text", "text": "far"}},
        {"type": "content_block_start", "index": -1, "content_block": {"type": "text", "text": "below"}},
        {"type": "content_block_start", "index": MAX_CONTENT_BLOCKS, "content_block": {"type": "text", "text": "past"}},
        {"type": "content_block_start", "index": True, "content_block": {"type": "text", "text": "bool"}},
        {"type": "content_block_start", "index": 0, "content_block": 7},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": 1, "input": "?"}},
        {"type": "content_block_delta", "index": 1, "delta": "text"},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": 5}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "mystery_delta", "x": "y"}},
        {"type": "content_block_delta", "index": "0", "delta": {"type": "text_delta", "text": "str index"}},
        {"type": "message_delta", "delta": [], "usage": {"output_tokens": "many"}},
        {"type": "error", "error": "plain"},
    ]
    answer = read_answer(FORMAT, stream(*events) + b"data: [1, 2]\n\ndata: not json\n\n", sse=True)
    assert answer.unreadable == 1 and answer.problem == "plain"
    assert [p.kind for p in answer.parts()] == ["other", "tool_call"]  # the far, negative and bool indexes are ignored
    assert render_answer(answer).lines


@pytest.mark.parametrize(
    "doc",
    [
        {"content": 5},
        {"content": [1, None, "x", {"type": None}], "usage": "lots", "model": []},
        {"type": "error", "error": None},
        {"content": [{"type": "thinking", "thinking": None, "signature": None}], "stop_reason": 3},
    ],
)
def test_hostile_json_answers_do_not_raise(doc: dict) -> None:
    answer = read_answer(FORMAT, json.dumps(doc).encode(), sse=False)
    assert render_answer(answer).lines


def test_past_the_assembly_bound_the_rest_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.wire import assembly as base

    monkeypatch.setattr(base, "MAX_ASSEMBLED_CHARS", 100)
    start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x" * 30}}
    answer = read_answer(FORMAT, stream(start, *[delta] * 10), sse=True)
    text, note = answer.parts()
    assert text.text == "x" * 90 and (note.field, note.text) == ("cut", "210 more characters streamed, not kept here")


# the view --------------------------------------------------------------------------------------
def test_the_view_shows_thinking_and_only_the_length_and_hash_of_a_signature() -> None:
    answer = read_answer(FORMAT, THINKING_STREAM.read_bytes(), sse=True)
    reasoning, signature, _ = answer.parts()
    shown = render_answer(answer).text()
    for line in reasoning.text.split("\n"):
        assert line in shown
    assert f"signature: 248 characters, sha256 {signature.digest}" in shown
    assert signature.value not in shown and signature.value[:40] not in shown
    assert "usage: input 484" in shown and "finish: end_turn" in shown


def test_the_request_view_hides_signatures_and_redacted_data() -> None:
    doc = load(TOOL_ROUNDTRIP)
    doc["messages"][1]["content"].insert(1, {"type": "redacted_thinking", "data": "R" * 500})
    signature = doc["messages"][1]["content"][0]["signature"]
    shown = render_conversation(conversation(FORMAT, copy.deepcopy(doc), "/v1/messages"), None).text()
    assert doc["messages"][1]["content"][0]["thinking"].split("\n")[0] in shown
    assert f"signature: 736 characters, sha256 {sha(signature)}" in shown
    assert f"redacted_thinking: 500 characters, sha256 {sha('R' * 500)}" in shown
    assert signature[:40] not in shown and "R" * 40 not in shown
    assert "tool call get_user_country  id toolu_01YGzqpRE16Vricda3Aqcejo" in shown


def test_the_transcriber_is_registered() -> None:
    assert TRANSCRIBERS[FORMAT] is transcriber.TRANSCRIBER
