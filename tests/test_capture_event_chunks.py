"""Streams delivered one event per chunk, as providers write them: the capture's fast path that passes
over whole events without splitting them must read exactly what a byte-by-byte feed reads."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_reasoning_proxy.formats import by_name

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


@pytest.mark.parametrize("path", STREAMS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_event_aligned_chunks_read_like_single_bytes(path: Path) -> None:
    wire_format = by_name(FORMAT_OF[path.parent.name])
    raw = path.read_bytes()
    by_event = tap_records(wire_format, raw, sse=True, size="events")
    assert by_event == tap_records(wire_format, raw, sse=True, size=1)
    assert b"".join(pieces(raw, "events")) == raw


def test_event_pieces_split_at_boundaries() -> None:
    raw = b"data: 1\n\ndata: 2\r\n\r\n: comment\n\ndata: 3\n\n"
    assert pieces(raw, "events") == [b"data: 1\n\n", b"data: 2\r\n\r\n", b": comment\n\n", b"data: 3\n\n"]
