"""Streams delivered one event per chunk, as providers write them: the capture's fast path that passes
over whole events without splitting them must read exactly what a byte-by-byte feed reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_reasoning_proxy.wire import by_name
from llm_reasoning_proxy.wire.gemini.format import text_key

from tests.support.capture import pieces, tap_records

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT_OF = {
    "copilot": "chat_completions",
    "deepseek": "chat_completions",
    "openrouter": "chat_completions",
    "openai-responses": "openai_responses",
    "anthropic": "anthropic_messages",
    "gemini": "gemini_native",
}
STREAMS = sorted(path for folder in FORMAT_OF for path in (FIXTURES / folder).glob("*.sse"))
# The one capture with no reasoning state in it (Gemini 3's answer after its function call): both feeds would read
# nothing. It gets the last event Gemini 3 often ends a stream with, an empty text part holding the answer's
# signature, so that both feeds must key the same answer text, every chunk of it.
UNSIGNED = FIXTURES / "gemini" / "pydanticai_gemini3pro_stream_functioncall_signature_roundtrip_1_response_200.sse"
SIGNED_END = b'data: {"candidates": [{"content": {"parts": [{"text": "", "thoughtSignature": "c2lnbmVk"}]}}]}\r\n\r\n'


def stream(path: Path) -> bytes:
    raw = path.read_bytes()
    return raw + SIGNED_END if path == UNSIGNED else raw


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_event_aligned_chunks_read_like_single_bytes(path: Path) -> None:
    wire_format = by_name(FORMAT_OF[path.parent.name])
    raw = stream(path)
    by_event = tap_records(wire_format, raw, sse=True, size="events")
    assert by_event, "nothing read: comparing the two feeds would say nothing"
    assert by_event == tap_records(wire_format, raw, sse=True, size=1)
    assert b"".join(pieces(raw, "events")) == raw


def test_the_unsigned_answer_is_keyed_by_all_of_its_text() -> None:
    (record,) = tap_records(by_name("gemini_native"), stream(UNSIGNED), sse=True, size="events")
    assert record.extra_keys == [text_key("The capital of Mexico is Mexico City.")]


def test_event_pieces_split_at_boundaries() -> None:
    raw = b"data: 1\n\ndata: 2\r\n\r\n: comment\n\ndata: 3\n\n"
    assert pieces(raw, "events") == [b"data: 1\n\n", b"data: 2\r\n\r\n", b": comment\n\n", b"data: 3\n\n"]
