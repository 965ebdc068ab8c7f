"""The Bedrock Converse transcriber: requests, JSON answers and ConverseStream frames read from real captures, the
SDKs' wrapped event shape, what a stream cut short still gives, hostile frames, and how the view shows signatures."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from llm_reasoning_proxy.shared.limits import MAX_CONTENT_BLOCKS
from llm_reasoning_proxy.transcripts import TRANSCRIBERS, conversation, read_answer
from llm_reasoning_proxy.transcripts.view import render_answer, render_conversation
from llm_reasoning_proxy.wire.bedrock_converse import transcript as transcriber
from llm_reasoning_proxy.wire.conversation import Answer, Part
from llm_reasoning_proxy.wire.event_stream import event_frame

from tests.support.aws_frames import by_hand

FIXTURES = Path(__file__).parent / "fixtures" / "bedrock"
MORE = FIXTURES / "transcripts"
FORMAT = "bedrock_converse"
CLAUDE = "us.anthropic.claude-3-7-sonnet-20250219-v1:0"
PATH = "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
STREAM_PATH = "/model/us.amazon.nova-micro-v1%3A0/converse-stream"
REASONING_STREAM = FIXTURES / "pydanticai_claude_sonnet4_converse_stream_reasoning_0_response_200.eventstream"
REDACTED_STREAM = FIXTURES / "pydanticai_claude37_converse_stream_redacted_reasoning_0_response_200.eventstream"
TOOL_STREAM = MORE / "pydanticai_nova_micro_converse_stream_tool_use_roundtrip_0_response_200.eventstream"
STREAMS = [
    REASONING_STREAM,
    REDACTED_STREAM,
    TOOL_STREAM,
    MORE / "pydanticai_nova_micro_converse_stream_tool_use_roundtrip_1_response_200.eventstream",
]
TOOL_ROUNDTRIP = FIXTURES / "pydanticai_claude37_converse_reasoning_tool_use_roundtrip_1_request.json"
TOOL_ANSWER = FIXTURES / "pydanticai_claude37_converse_reasoning_tool_use_roundtrip_0_response_200.json"
REDACTED_ROUNDTRIP = FIXTURES / "pydanticai_claude37_converse_redacted_reasoning_roundtrip_1_request.json"
NOVA_ROUNDTRIP = MORE / "pydanticai_nova_micro_converse_stream_tool_use_roundtrip_1_request.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def events_of(raw: bytes) -> list[tuple[str, dict]]:
    """A stream's events read the simplest way: each frame's event type and JSON payload."""
    return [(headers[":event-type"], json.loads(payload)) for headers, payload in by_hand(raw)]


def oracle(raw: bytes) -> dict[int, dict[str, str]]:
    """What each content block's deltas add up to, by the simplest reading of the frames."""
    blocks: dict[int, dict[str, str]] = {}
    for kind, doc in events_of(raw):
        if kind == "contentBlockStart":
            blocks.setdefault(doc["contentBlockIndex"], {}).update(doc["start"]["toolUse"])
        if kind != "contentBlockDelta":
            continue
        block, delta = blocks.setdefault(doc["contentBlockIndex"], {}), doc["delta"]
        for key, value in {**delta.get("reasoningContent", {}), **delta.get("toolUse", {})}.items():
            block[key] = block.get(key, "") + value
        if "text" in delta:
            block["answer"] = block.get("answer", "") + delta["text"]
    return blocks


def frames(*events: tuple[str, dict]) -> bytes:
    return b"".join(event_frame(kind, json.dumps(doc).encode()) for kind, doc in events)


def only(answer: Answer, kind: str) -> list[Part]:
    return [part for part in answer.parts() if part.kind == kind]


# requests ------------------------------------------------------------------------------------
def test_a_tool_loop_request_reads_as_its_messages() -> None:
    doc = load(TOOL_ROUNDTRIP)
    text = doc["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    c = conversation(FORMAT, doc, PATH)
    assert (c.model, c.stream, c.tools) == (CLAUDE, False, ["get_user_country"])
    assert c.settings == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert [(m.role, m.where) for m in c.messages] == [
        ("user", "messages[0]"),
        ("assistant", "messages[1]"),
        ("user", "messages[2]"),
    ]
    reasoning, signature, answer, call = c.messages[1].parts
    assert (reasoning.kind, reasoning.field, reasoning.text) == ("reasoning", "reasoningContent", text["text"])
    assert (signature.kind, signature.field, signature.value) == ("opaque", "signature", text["signature"])
    assert (signature.length, signature.digest) == (252, sha(text["signature"]))
    assert answer.text == "I'll need to check what country you're from to answer that question."
    assert (call.kind, call.call_id, call.name, call.text) == (
        "tool_call",
        "tooluse_W9DaUFg4Tj2cRPpndqxWSg",
        "get_user_country",
        "{}",
    )
    (result,) = c.messages[2].parts
    assert (result.kind, result.call_id, result.text) == ("tool_result", "tooluse_W9DaUFg4Tj2cRPpndqxWSg", "Mexico")


def test_a_redacted_reasoning_block_is_opaque_whole() -> None:
    doc = load(REDACTED_ROUNDTRIP)
    blob = doc["messages"][1]["content"][0]["reasoningContent"]["redactedContent"]
    c = conversation(FORMAT, doc, PATH)
    redacted, text = c.messages[1].parts
    assert (redacted.kind, redacted.field, redacted.value) == ("opaque", "redactedContent", blob)
    assert (redacted.length, redacted.digest) == (len(blob), sha(blob))
    assert text.kind == "text" and c.messages[2].parts == [Part("text", text="What was that?")]


def test_a_streamed_request_with_a_system_prompt_and_tool_results() -> None:
    c = conversation(FORMAT, load(NOVA_ROUNDTRIP), STREAM_PATH)
    assert (c.model, c.stream, c.tools) == ("us.amazon.nova-micro-v1:0", True, ["get_capital", "get_temperature"])
    assert c.settings == {}
    assert [(m.role, m.where) for m in c.messages] == [
        ("system", "system"),
        ("user", "messages[0]"),
        ("assistant", "messages[1]"),
        ("user", "messages[2]"),
    ]
    assert c.messages[0].parts == [Part("text", text="You are a helpful chatbot.")]
    call = c.messages[2].parts[1]
    assert (call.call_id, call.name, json.loads(call.text)) == (
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        "get_temperature",
        {"city": "Paris"},
    )
    assert c.messages[3].parts == [Part("tool_result", text="30°C", call_id="tooluse_lAG_zP8QRHmSYOwZzzaCqA")]


def test_every_member_becomes_its_part() -> None:
    doc = {
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "additionalModelRequestFields": {"reasoningConfig": {"type": "enabled"}, "top_k": 5},
        "toolConfig": {"tools": [{"toolSpec": {"name": "ls"}}, {"cachePoint": {}}, "junk"]},
        "messages": [
            {
                "role": "user",
                "content": [
                    {"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo" * 10}}},
                    {"document": {"format": "pdf", "name": "a", "source": {"s3Location": {"uri": "s3://b/a.pdf"}}}},
                    {"video": {"format": "mp4", "source": {"s3Location": {"uri": "s3://b/v.mp4"}}}},
                    {"guardContent": {"text": {"text": "x"}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"reasoningContent": "odd"},
                    {"toolUse": {"toolUseId": "t1", "name": "ls", "input": {"p": "."}}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [
                                {"text": "a"},
                                {"json": {"files": [1]}},
                                {"image": {"format": "png", "source": {"bytes": "AAAA"}}},
                            ],
                        }
                    },
                    {"toolResult": {"toolUseId": "t2", "content": [{"text": "denied"}], "status": "error"}},
                ],
            },
        ],
    }
    c = conversation(FORMAT, doc, "/model/amazon.nova-pro-v1:0/converse")
    assert (c.model, c.tools, c.settings) == ("amazon.nova-pro-v1:0", ["ls"], {"reasoningConfig": {"type": "enabled"}})
    system, media, assistant, results = c.messages
    assert [p.kind for p in system.parts] == ["text", "other"] and system.parts[1].field == "system[1]"
    assert [(p.kind, p.name, p.text) for p in media.parts[:3]] == [
        ("media", "image", "png, 110 characters of base64"),
        ("media", "document", "a, pdf, s3://b/a.pdf"),
        ("media", "video", "mp4, s3://b/v.mp4"),
    ]
    assert (media.parts[3].kind, media.parts[3].field) == ("other", "messages[0].content[3]")
    assert [p.kind for p in assistant.parts] == ["other", "tool_call"]
    assert json.loads(assistant.parts[1].text) == {"p": "."}
    assert [(p.call_id, p.text) for p in results.parts] == [
        ("t1", 'a\n{"files":[1]}\n[image: png, 4 characters of base64]'),
        ("t2", "[error] denied"),
    ]


@pytest.mark.parametrize(
    "doc",
    [
        None,
        "text",
        {"messages": 3, "system": "plain", "toolConfig": []},
        {"messages": [1, None, {"role": 2, "content": 9}, {"content": [1, {}, {"text": 5}, {"toolUse": 1}]}]},
        {
            "messages": [
                {"role": "assistant", "content": [{"reasoningContent": {"reasoningText": 5, "redactedContent": 7}}]}
            ]
        },
        {
            "messages": [
                {"role": "user", "content": [{"toolResult": {"content": 5}}, {"image": None}, {"image": {"source": 1}}]}
            ]
        },
        {"additionalModelRequestFields": [], "messages": [{"role": "user", "content": "plain"}]},
    ],
)
def test_a_request_of_any_shape_is_read_without_raising(doc: object) -> None:
    c = conversation(FORMAT, doc, "/model/x/converse")
    assert c.wire_format == FORMAT and c.model == "x"
    assert render_conversation(c, None).lines


# streamed answers ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_a_stream_gives_the_blocks_its_frames_build(path: Path) -> None:
    raw = path.read_bytes()
    answer = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    assert answer.streamed and answer.unreadable == 0 and answer.problem is None
    assert answer.events == len(by_hand(raw))
    (message,) = answer.messages
    assert (message.role, message.where) == ("assistant", "output.message")
    got = iter(message.parts)
    for _, block in sorted(oracle(raw).items()):
        if "text" in block or "signature" in block:
            reasoning, signature = next(got), next(got)
            assert (reasoning.kind, reasoning.text) == ("reasoning", block["text"])
            assert (signature.field, signature.value) == ("signature", block["signature"])
        if "redactedContent" in block:
            redacted = next(got)
            assert (redacted.field, redacted.value) == ("redactedContent", block["redactedContent"])
        if "answer" in block:
            assert next(got) == Part("text", text=block["answer"])
        if "toolUseId" in block:
            call = next(got)
            assert (call.call_id, call.name) == (block["toolUseId"], block["name"])
            assert json.loads(call.text) == json.loads(block["input"])
    assert next(got, None) is None
    stop = next(doc for kind, doc in events_of(raw) if kind == "messageStop")
    usage = next(doc for kind, doc in events_of(raw) if kind == "metadata")["usage"]
    assert answer.finish == stop["stopReason"]
    assert (answer.usage.input, answer.usage.output, answer.usage.total) == (
        usage["inputTokens"],
        usage["outputTokens"],
        usage["totalTokens"],
    )


def test_the_reasoning_stream_gives_its_text_and_signature() -> None:
    answer = read_answer(FORMAT, REASONING_STREAM.read_bytes(), sse=False, aws_frames=True)
    reasoning, signature, text = answer.parts()
    assert reasoning.text == (
        'The user has greeted me with a simple "Hello". I should respond in a friendly and welcoming manner. This is a '
        "straightforward greeting, so I'll respond warmly and ask how I can help them today."
    )
    assert (signature.length, signature.value[:12]) == (496, "Eu0CCkgIBxAB")
    assert text.text == "Hello! It's nice to meet you. How can I help you today?"
    assert (answer.finish, answer.usage.input, answer.usage.output, answer.usage.total) == ("end_turn", 36, 73, 109)
    assert answer.model is None  # Converse answers do not name it; the request's path does


def test_the_tool_stream_assembles_the_tool_input() -> None:
    answer = read_answer(FORMAT, TOOL_STREAM.read_bytes(), sse=False, aws_frames=True)
    text, call = answer.parts()
    assert text.text.startswith("<thinking> To find the temperature of the capital of France")
    assert (call.call_id, call.name, json.loads(call.text)) == (
        "tooluse_lAG_zP8QRHmSYOwZzzaCqA",
        "get_temperature",
        {"city": "Paris"},
    )
    assert (answer.finish, answer.usage.input, answer.usage.output, answer.usage.total) == ("tool_use", 471, 91, 562)


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
def test_events_wrapped_in_their_name_read_the_same(path: Path) -> None:
    raw = path.read_bytes()
    assembler = TRANSCRIBERS[FORMAT].assembler()
    for kind, doc in events_of(raw):
        assembler.event({kind: doc}, None)
    wrapped = assembler.finish()
    expected = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    assert wrapped.parts() == expected.parts() and wrapped.parts()
    assert (wrapped.usage, wrapped.finish) == (expected.usage, expected.finish)


def test_a_wrapped_exception_is_the_answers_problem() -> None:
    assembler = TRANSCRIBERS[FORMAT].assembler()
    assembler.event({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hel"}}}, None)
    assembler.event({"throttlingException": {"message": "Too many requests"}}, None)
    answer = assembler.finish()
    assert answer.problem == "throttlingException: Too many requests"
    assert answer.parts() == [Part("text", text="Hel")]


# JSON answers ----------------------------------------------------------------------------------
def test_a_json_answer_reads_as_one_assistant_message() -> None:
    doc = load(TOOL_ANSWER)
    text = doc["output"]["message"]["content"][0]["reasoningContent"]["reasoningText"]
    answer = read_answer(FORMAT, TOOL_ANSWER.read_bytes(), sse=False)
    (message,) = answer.messages
    assert (message.role, message.where) == ("assistant", "output.message")
    assert [p.kind for p in message.parts] == ["reasoning", "opaque", "text", "tool_call"]
    assert message.parts[0].text == text["text"]
    assert (message.parts[1].length, message.parts[1].digest) == (len(text["signature"]), sha(text["signature"]))
    assert (message.parts[3].call_id, message.parts[3].name) == ("tooluse_W9DaUFg4Tj2cRPpndqxWSg", "get_user_country")
    usage = doc["usage"]
    assert answer.finish == "tool_use"
    assert (answer.usage.input, answer.usage.output, answer.usage.total) == (397, 130, 527)
    assert (answer.usage.cache_read, answer.usage.cache_write) == (
        usage["cacheReadInputTokens"],
        usage["cacheWriteInputTokens"],
    )


def test_bedrocks_error_body_is_the_problem() -> None:
    answer = read_answer(
        FORMAT, (FIXTURES / "pydanticai_converse_invalid_model_0_response_400.json").read_bytes(), sse=False
    )
    assert answer.problem == "The provided model identifier is invalid." and answer.messages == []


# streams cut short -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", STREAMS, ids=lambda p: p.name)
@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.8])
def test_a_stream_cut_anywhere_gives_what_arrived(path: Path, fraction: float) -> None:
    raw = path.read_bytes()
    cut = raw[: int(len(raw) * fraction)]
    answer = read_answer(FORMAT, cut, sse=False, aws_frames=True)
    whole = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    ends, at = [], 0
    while at < len(raw):  # where each frame ends: its first 4 bytes are its length
        at += int.from_bytes(raw[at : at + 4], "big")
        ends.append(at)
    assert answer.events == sum(end <= len(cut) for end in ends) < whole.events
    assert len(answer.parts()) <= len(whole.parts())
    for part, full in zip(answer.parts(), whole.parts()):
        assert (part.kind, part.field, part.call_id) == (full.kind, full.field, full.call_id)
        assert (full.value or full.text).startswith(part.value or part.text)


def test_a_tool_input_cut_short_is_shown_as_it_arrived() -> None:
    raw = frames(
        ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "t1", "name": "ls"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"path": "/ho'}}}),
    )
    (call,) = read_answer(FORMAT, raw, sse=False, aws_frames=True).parts()
    assert (call.kind, call.call_id, call.name, call.text) == ("tool_call", "t1", "ls", '{"path": "/ho')


# hostile input ---------------------------------------------------------------------------------
def test_ten_thousand_deltas_are_joined_once_and_fast() -> None:
    delta = ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "ab "}}})
    raw = frames(*[delta] * 10_000)
    began = time.perf_counter()
    answer = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    assert time.perf_counter() - began < 2.0
    (reasoning,) = answer.parts()
    assert reasoning.text == "ab " * 10_000 and answer.events == 10_000


@pytest.mark.parametrize("index", [10**12, MAX_CONTENT_BLOCKS, -1, True, "0", 1.5, None])
def test_an_index_out_of_bounds_allocates_nothing(index: object) -> None:
    raw = frames(
        ("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": "far"}}),
        ("contentBlockStart", {"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": "t", "name": "n"}}}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "near"}}),
    )
    assembler = TRANSCRIBERS[FORMAT].assembler()
    for kind, doc in events_of(raw):
        assembler.event(doc, kind)
    assert list(assembler._stream.blocks) == [0]
    assert assembler.finish().parts() == [Part("text", text="near")]


def test_many_far_indexes_stay_fast_and_small() -> None:
    raw = frames(
        *[("contentBlockDelta", {"contentBlockIndex": 10**9 + i, "delta": {"text": "x"}}) for i in range(5_000)]
    )
    began = time.perf_counter()
    answer = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    assert time.perf_counter() - began < 2.0 and answer.parts() == []


def test_hostile_frames_do_not_raise() -> None:
    raw = (
        frames(
            ("messageStart", {"role": 5}),
            ("contentBlockStart", {"contentBlockIndex": 0, "start": "toolUse"}),
            ("contentBlockStart", {"contentBlockIndex": 0, "start": {"toolUse": 7}}),
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": []}),
            ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": {"not": "text"}}}}),
            (
                "contentBlockDelta",
                {"contentBlockIndex": 1, "delta": {"reasoningContent": {"text": 1, "signature": None}}},
            ),
            ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"mystery": {"x": 1}}}),
            ("contentBlockStop", {"contentBlockIndex": 10**12}),
            ("messageStop", {"stopReason": ["end"]}),
            ("metadata", {"usage": {"inputTokens": "7", "outputTokens": True}}),
            ("unknownEvent", {"x": 1}),
        )
        + event_frame("contentBlockDelta", b"[1, 2, 3]")
        + event_frame("contentBlockDelta", b"not json")
    )
    answer = read_answer(FORMAT, raw, sse=False, aws_frames=True)
    assert answer.unreadable == 1 and answer.finish is None and answer.usage.input is None
    assert render_answer(answer).lines


@pytest.mark.parametrize(
    "doc",
    [
        {"output": 5},
        {"output": {"message": {"content": 5}}, "usage": "lots", "stopReason": 1},
        {"output": {"message": {"role": "assistant", "content": [1, None, {}, {"text": 1}, {"a": 1, "b": 2}]}}},
        {"message": 5},
    ],
)
def test_hostile_json_answers_do_not_raise(doc: dict) -> None:
    answer = read_answer(FORMAT, json.dumps(doc).encode(), sse=False)
    assert render_answer(answer).lines


def test_past_the_assembly_bound_the_rest_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from llm_reasoning_proxy.wire import assembly as base

    monkeypatch.setattr(base, "MAX_ASSEMBLED_CHARS", 100)
    raw = frames(*[("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "y" * 30}})] * 10)
    text, note = read_answer(FORMAT, raw, sse=False, aws_frames=True).parts()
    assert text.text == "y" * 90 and (note.field, note.text) == ("cut", "210 more characters streamed, not kept here")


# the view --------------------------------------------------------------------------------------
def test_the_view_shows_reasoning_and_only_the_length_and_hash_of_a_signature() -> None:
    answer = read_answer(FORMAT, REASONING_STREAM.read_bytes(), sse=False, aws_frames=True)
    reasoning, signature, _ = answer.parts()
    shown = render_answer(answer).text()
    assert reasoning.text in shown and "reasoning (reasoningContent): " in shown
    assert f"signature: 496 characters, sha256 {signature.digest}" in shown
    assert signature.value not in shown and signature.value[:40] not in shown
    assert "usage: input 36, output 73, total 109" in shown


def test_the_request_view_hides_signatures_and_redacted_content() -> None:
    doc = load(REDACTED_ROUNDTRIP)
    blob = doc["messages"][1]["content"][0]["reasoningContent"]["redactedContent"]
    shown = render_conversation(conversation(FORMAT, doc, PATH), None).text()
    assert f"redactedContent: {len(blob):,} characters, sha256 {sha(blob)}" in shown
    assert blob[:40] not in shown
    doc = load(TOOL_ROUNDTRIP)
    text = doc["messages"][1]["content"][0]["reasoningContent"]["reasoningText"]
    shown = render_conversation(conversation(FORMAT, doc, PATH), None).text()
    assert (
        text["text"].split("\n")[0] in shown and f"signature: 252 characters, sha256 {sha(text['signature'])}" in shown
    )
    assert text["signature"][:40] not in shown


def test_the_transcriber_is_registered() -> None:
    assert TRANSCRIBERS[FORMAT] is transcriber.TRANSCRIBER
