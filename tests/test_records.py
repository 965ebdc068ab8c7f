"""The fingerprints of tool calls, and the memos that keep them: the same key whichever way it is made, and memos
bounded by the memory they hold, whatever arguments a client sends."""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from llm_reasoning_proxy.shared import records
from llm_reasoning_proxy.shared.limits import MAX_MEMO_BYTES, MEMO_KEY_CHARS, MiB
from llm_reasoning_proxy.shared.records import (
    ReasoningRecord,
    TextMemo,
    ToolCallRef,
    arguments_digest,
    call_fingerprint,
    fingerprint_of,
)


def retained(make: Callable[[int], Any], count: int) -> int:
    """The bytes of Python memory `make(0)` … `make(count - 1)` leave behind once their results are let go of."""
    gc.collect()
    tracemalloc.start()
    try:
        for number in range(count):
            make(number)
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def written_file(number: int, size: int) -> str:
    """The arguments of a call that writes a file of about `size` characters: each number's its own."""
    return json.dumps({"path": f"/src/file_{number}.py", "content": "x = 1\n" * (size // 6)})


@pytest.mark.slow
def test_fingerprints_of_long_arguments_hold_no_more_than_their_bound() -> None:
    """An agent that writes files sends tens of kilobytes a call: 300 calls of 100 KB each were kept whole with
    their canonical text (60 MB; 8,192 of them, 1.6 GB, for as long as the proxy ran)."""
    records._remembered_long_call_fingerprint.clear()

    def ask(number: int) -> None:
        call_fingerprint("m", "write_file", written_file(number, 100_000))

    held = retained(ask, 300)
    assert held <= MAX_MEMO_BYTES + 1 * MiB, f"{held / MiB:.1f} MiB held"
    assert 0 < records._remembered_long_call_fingerprint.size <= MAX_MEMO_BYTES
    # Arguments of usual size are remembered by count, longer ones by their bytes, the longest not at all: a call's
    # fingerprint is the same either way, and the same as its captured record's.
    for size in (10, MEMO_KEY_CHARS - 40, MEMO_KEY_CHARS + 1, 100_000, MAX_MEMO_BYTES // 8):
        text = written_file(1, size)
        spaced = json.dumps(json.loads(text), indent=2)  # the same arguments, written otherwise
        call = ToolCallRef(id="call_1", name="write_file", arguments=text)
        record = ReasoningRecord(wire_format="chat_completions", request_model="m", tool_calls=[call])
        expected = fingerprint_of("m", "write_file", arguments_digest(json.loads(text)))
        for _ in range(2):  # asked, then remembered
            assert call_fingerprint("m", "write_file", text) == expected
            assert call_fingerprint("m", "write_file", spaced) == expected
            assert call_fingerprint("m", "write_file", json.loads(text)) == expected
        assert expected in record.keys() and record.find_call(expected) == call


def test_a_text_memo_forgets_the_least_recently_asked_past_its_bytes() -> None:
    asked = []
    memo = TextMemo(lambda text: asked.append(text) or text[:1], most_bytes=64 * 1024)
    texts = [f"{n:03d}" * 1000 for n in range(40)]  # 3 KB each: some twenty fit
    fit = 64 * 1024 // records._memo_entry_size((texts[0],), "0")
    for text in texts[:fit]:
        memo(text)
    memo(texts[0])  # asked again: remembered, and now the most recently asked
    assert asked == texts[:fit] and memo.size <= 64 * 1024
    memo(texts[fit])  # one more: the least recently asked goes
    memo(texts[0])
    assert asked == texts[: fit + 1]
    memo(texts[1])
    assert asked == [*texts[: fit + 1], texts[1]] and memo.size <= 64 * 1024
    memo("y" * 8192)  # over a sixteenth of the bound: answered, not kept
    memo("y" * 8192)
    assert asked[-2:] == ["y" * 8192] * 2
