"""addon/wire/blocks.py and the stream assemblers built on it (anthropic/stream.py, bedrock_converse/stream.py): one
assembly of an answer's content blocks, which the capture reads with `keep_text` off and the transcript with it on."""

from __future__ import annotations

import json

import pytest
from llm_reasoning_proxy.shared.limits import Budget
from llm_reasoning_proxy.transcripts import read_answer
from llm_reasoning_proxy.wire.anthropic.stream import MessagesStream
from llm_reasoning_proxy.wire.assembly import AnswerLimits
from llm_reasoning_proxy.wire.bedrock_converse.stream import ConverseStream
from llm_reasoning_proxy.wire.blocks import Block
from llm_reasoning_proxy.wire.conversation import Part

ANTHROPIC = [
    ("content_block_start", {"index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
    ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
    ("content_block_delta", {"index": 0, "delta": {"type": "thinking_delta", "thinking": "look."}}),
    ("content_block_delta", {"index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
    ("content_block_stop", {"index": 0}),
    ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": "Sure"}}),
    ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": ", looking."}}),
    ("content_block_stop", {"index": 1}),
    ("content_block_start", {"index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "ls"}}),
    ("content_block_delta", {"index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"path": "."}'}}),
    ("content_block_stop", {"index": 2}),
]


def held(block: Block) -> dict[str, list[str]]:
    return {name: list(pieces.pieces) for name, pieces in block.pieces.items()}


def anthropic_blocks(stream: MessagesStream) -> dict[int, tuple[str | None, dict, dict[str, list[str]], bool]]:
    for kind, doc in ANTHROPIC:
        stream.event(kind, {"type": kind, **doc})
    return {index: (block.kind, block.start, held(block), block.stopped) for index, block in stream.indexed()}


def test_one_anthropic_assembly_holds_the_text_only_when_asked() -> None:
    capture = anthropic_blocks(MessagesStream(keep_text=False, budget=Budget()))
    transcript = anthropic_blocks(MessagesStream(keep_text=True, kept=AnswerLimits()))
    # The same blocks in the same places, the thinking and the call alike ...
    assert capture.keys() == transcript.keys() == {0, 1, 2}
    thinking = {"thinking": ["Let me ", "look."], "signature": ["sig"]}
    assert capture[0] == ("thinking", {"type": "thinking", "thinking": "", "signature": ""}, thinking, True)
    assert capture[0] == transcript[0] and capture[2] == transcript[2]
    # ... and the answer's text only in the transcript: the capture keeps where its block sits.
    assert capture[1] == ("text", {"type": "text"}, {}, True)
    assert transcript[1] == ("text", {"type": "text", "text": "Sure"}, {"text": [", looking."]}, True)


def test_a_capture_keeps_a_block_from_its_start_on_a_transcript_whatever_arrived() -> None:
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "orphan"}}
    capture = MessagesStream(keep_text=False, budget=Budget())
    transcript = MessagesStream(keep_text=True, kept=AnswerLimits())
    for stream in (capture, transcript):
        stream.event("content_block_delta", delta)
    assert capture.blocks == {}
    (block,) = transcript.blocks.values()
    assert block.start == {"type": "thinking"} and block.streamed("thinking") == ["orphan"]


CONVERSE = [
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Hm."}}}),
    ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig"}}}),
    ("contentBlockStop", {"contentBlockIndex": 0}),
    ("contentBlockDelta", {"contentBlockIndex": 1, "delta": {"text": "Looking."}}),
    ("contentBlockStop", {"contentBlockIndex": 1}),
    ("contentBlockStart", {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "t1", "name": "ls"}}}),
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{}"}}}),
    # A text piece at a tool use's index: the transcript shows what came, the capture holds the call alone.
    ("contentBlockDelta", {"contentBlockIndex": 2, "delta": {"text": "stray"}}),
    ("contentBlockStop", {"contentBlockIndex": 2}),
]


def converse_blocks(stream: ConverseStream) -> dict[int, tuple[str | None, dict[str, list[str]], bool]]:
    for name, doc in CONVERSE:
        stream.event(name, doc)
    return {index: (block.kind, held(block), block.stopped) for index, block in stream.indexed()}


def test_one_converse_assembly_holds_the_text_only_when_asked() -> None:
    capture = converse_blocks(ConverseStream(keep_text=False, budget=Budget()))
    transcript = converse_blocks(ConverseStream(keep_text=True, kept=AnswerLimits()))
    assert capture == {
        0: ("reasoningContent", {"reasoning": ["Hm."], "signature": ["sig"]}, True),
        2: ("toolUse", {"input": ["{}"]}, True),
    }
    assert transcript == {
        0: (None, {"reasoning": ["Hm."], "signature": ["sig"]}, True),
        1: (None, {"text": ["Looking."]}, True),
        2: (None, {"input": ["{}"], "text": ["stray"]}, True),
    }


def test_a_stream_reads_within_the_bounds_of_its_reading() -> None:
    with pytest.raises(ValueError):
        MessagesStream(keep_text=True, budget=Budget())
    with pytest.raises(ValueError):
        ConverseStream(keep_text=False, kept=AnswerLimits())


def test_a_delta_of_an_unreadable_type_leaves_the_transcript_reading_on() -> None:
    """A delta whose `type` is no string is passed over like any unknown delta (the transcript's own assembler once
    stopped at one, with "unhashable type")."""
    events = [
        {"type": "message_start", "message": {"model": "m"}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": ["text_delta"], "text": "lost"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "kept"}},
    ]
    body = b"".join(b"data: " + json.dumps(event).encode() + b"\n\n" for event in events)
    answer = read_answer("anthropic_messages", body, sse=True)
    assert answer.problem is None
    assert answer.parts() == [Part("text", text="kept")]
