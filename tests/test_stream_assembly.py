"""The stream assemblers of Gemini and Responses (addon/wire/<format>/stream.py): the capture reads an answer through
one without its text, the transcript through one with it."""

from __future__ import annotations

import json
from pathlib import Path

from llm_reasoning_proxy.answer.tap import read_recorded
from llm_reasoning_proxy.transcripts import read_answer
from llm_reasoning_proxy.wire import by_name
from llm_reasoning_proxy.wire.gemini.stream import GeminiStream, Run
from llm_reasoning_proxy.wire.gemini.transcript import GeminiAssembler
from llm_reasoning_proxy.wire.responses.stream import ResponsesStream

FIXTURES = Path(__file__).parent / "fixtures"
GEMINI_THOUGHTS = FIXTURES / "gemini" / "pydanticai_gemini25pro_stream_thought_parts_text_signature_0_response_200.sse"
RESPONSES_STREAM = FIXTURES / "openai-responses" / "pydanticai_gpt5_stream_reasoning_function_calls_0_response_200.sse"


def answer_texts(path: Path) -> list[str]:
    """Every text piece a Gemini stream carries."""
    docs = [json.loads(line[5:]) for line in path.read_text().splitlines() if line.startswith("data:")]
    return [p["text"] for d in docs for c in d["candidates"] for p in c["content"]["parts"] if p.get("text")]


def test_gemini_capture_holds_no_text_and_the_transcript_joins_it() -> None:
    reader = by_name("gemini_native").reader()
    assert isinstance(reader, GeminiStream) and not reader.keep_text
    read_recorded(reader, GEMINI_THOUGHTS.read_bytes(), sse=True)
    (candidate,) = reader.candidates.values()
    assert candidate.items is None and candidate.answer_chars > 0  # hashed as it came, never kept
    (record,) = reader.records(complete=True)
    assert record.fields["signedTextPart"] == "first" and record.extra_keys

    assembler = GeminiAssembler()
    read_recorded(assembler, GEMINI_THOUGHTS.read_bytes(), sse=True)
    (candidate,) = assembler.stream.candidates.values()
    runs = [item for item in candidate.items if isinstance(item, Run)]
    assert [run.kind for run in runs] == ["thought", "text"]
    assert "".join(run.text() for run in runs) == "".join(answer_texts(GEMINI_THOUGHTS))
    assert runs[1].signatures  # the answer's signature, on the run it came on


def test_responses_capture_holds_what_records_need_and_the_transcript_every_item() -> None:
    raw = RESPONSES_STREAM.read_bytes()
    reader = by_name("openai_responses").reader()
    assert isinstance(reader, ResponsesStream) and not reader.keep_text
    read_recorded(reader, raw, sse=True)
    held = [reader.items[index].done for index in sorted(reader.items)]
    assert [item["type"] for item in held] == ["reasoning", "function_call"]
    assert "arguments" not in held[1] and "arguments_sha256" in held[1]  # a digest, not the arguments
    assert all(reader.items[index].added is None for index in reader.items)  # stubs are not read

    answer = read_answer("openai_responses", raw, sse=True)
    assert [message.role for message in answer.messages] == ["reasoning", "function_call"]
    assert answer.messages[1].parts[0].text == '{"result":6666}'


def test_a_stream_cut_before_its_items_end_is_assembled_from_its_deltas() -> None:
    stream = ResponsesStream(keep_text=True)
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1"}},
        {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Hel"},
        {"type": "response.output_text.delta", "item_id": "msg_1", "content_index": 0, "delta": "lo"},
    ]
    for event in events:
        stream.event(event, None)
    item, left_out = stream.items[0].assembled()
    assert item["content"] == [{"type": "output_text", "text": "Hello"}] and left_out == 0
