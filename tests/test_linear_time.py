"""Every response reader takes time linear in what it reads: ten times the fragments, about ten times the time.

A reader that scanned a list for each fragment (an entry of `reasoning_details` by its index, a tool call by its
id, an output item's place) took 17 to 67 seconds over a 3 to 4 MB answer, and froze every conversation through
the proxy meanwhile. The time is the process's CPU time, the fastest of three runs; quadratic growth would be
about 100x, so the bound of 30x leaves room for a busy machine without letting that through.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

import pytest
from llm_reasoning_proxy import wire as formats
from llm_reasoning_proxy.answer.tap import read_recorded

from tests.support import hostile_answers as answers

BASE = 2000
SCALE = 10
CASES: dict[str, tuple[Callable[[int], bytes], str]] = {
    "chat reasoning_details with distinct indexes": (answers.chat_details, "chat_completions"),
    "chat tool calls without index": (answers.chat_calls_without_index, "chat_completions"),
    "chat content of whitespace only": (answers.chat_whitespace_content, "chat_completions"),
    "chat choices each opening a think block": (answers.chat_think_choices, "chat_completions"),
    "responses items without output_index": (answers.responses_items_without_index, "openai_responses"),
    "anthropic thinking deltas and tool_use blocks": (answers.anthropic_blocks, "anthropic_messages"),
    "gemini function call parts": (answers.gemini_parts, "gemini_native"),
}


def cpu_seconds(body: bytes, wire_format: str) -> float:
    """The reader's CPU time over `body`, the fastest of three; the cyclic garbage collector, whose passes come
    at times of their own, is held off while it runs."""
    best = float("inf")
    for _ in range(3):
        reader = formats.by_name(wire_format).reader()
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            read_recorded(reader, body, sse=True)
            reader.records(complete=True)
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    assert reader.response_id is not None  # the answer was read, not skipped
    return best


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_ten_times_the_fragments_cost_about_ten_times_the_time(case: str) -> None:
    make, wire_format = CASES[case]
    small = cpu_seconds(make(BASE), wire_format)
    large = cpu_seconds(make(BASE * SCALE), wire_format)
    assert large < 3 * SCALE * max(small, 0.002), f"{case}: {small:.4f}s for {BASE}, {large:.4f}s for {BASE * SCALE}"


@pytest.mark.slow
def test_countless_choices_each_opening_a_think_block_cost_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader keeps MAX_CHOICES choices, so the case above stops early; without that bound, whether a `<think>`
    block is open in some choice is still known after each chunk without looking at every choice."""
    monkeypatch.setattr("llm_reasoning_proxy.wire.chat_completions.keep.MAX_CHOICES", 1 << 30)
    reader = formats.by_name("chat_completions").reader()
    read_recorded(reader, answers.chat_think_choices(BASE), sse=True)
    assert reader.budget.over is None  # every choice was kept: no bound cut the reading short
    small = cpu_seconds(answers.chat_think_choices(BASE), "chat_completions")
    large = cpu_seconds(answers.chat_think_choices(BASE * SCALE), "chat_completions")
    assert large < 3 * SCALE * max(small, 0.002), f"{small:.4f}s for {BASE}, {large:.4f}s for {BASE * SCALE}"


# --- a request's removal of values issued elsewhere: as many foreign values as a client cares to send ----------


def anthropic_foreign(count: int) -> dict:
    """One earlier assistant message of `count` foreign thinking blocks and a tool_use, then a new question."""
    blocks = [{"type": "thinking", "thinking": "", "signature": f"FOREIGN-{n}"} for n in range(count)]
    blocks.append({"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}})
    return {
        "model": "model-y",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": "q2"},
        ],
    }


def chat_foreign(count: int) -> dict:
    """One earlier assistant message with `count` foreign reasoning_details entries, then a new question."""
    details = [{"type": "reasoning.encrypted", "data": f"FOREIGN-{n}"} for n in range(count)]
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {
        "model": "model-y",
        "messages": [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "reasoning_details": details, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a"},
            {"role": "user", "content": "q2"},
        ],
    }


def converse_foreign(count: int) -> dict:
    """Bedrock Converse: one earlier assistant message of `count` foreign reasoning blocks and a toolUse."""
    blocks: list[dict] = [
        {"reasoningContent": {"reasoningText": {"text": "", "signature": f"FOREIGN-{n}"}}} for n in range(count)
    ]
    blocks.append({"toolUse": {"toolUseId": "tooluse_1", "name": "f", "input": {}}})
    return {
        "messages": [
            {"role": "user", "content": [{"text": "q"}]},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "a"}]}}]},
            {"role": "assistant", "content": [{"text": "done"}]},
            {"role": "user", "content": [{"text": "q2"}]},
        ],
    }


REMOVALS: dict[str, tuple[Callable[[int], dict], str]] = {
    "bedrock converse foreign reasoning blocks": (converse_foreign, "bedrock_converse"),
    "anthropic foreign thinking blocks": (anthropic_foreign, "anthropic_messages"),
    "chat foreign reasoning_details entries": (chat_foreign, "chat_completions"),
}


def removal_cpu_seconds(make: Callable[[int], dict], wire_format: str, count: int) -> float:
    import copy

    def foreign(values: list[str]) -> dict[str, str]:
        return dict.fromkeys(values, "issued for model model-x, not model-y")

    doc = make(count)
    best = float("inf")
    for _ in range(3):
        body = copy.deepcopy(doc)
        gc.collect()
        gc.disable()
        try:
            started = time.process_time()
            actions, _ = formats.by_name(wire_format).remove_foreign(body, foreign)
            best = min(best, time.process_time() - started)
        finally:
            gc.enable()
    assert len(actions) == count
    return best


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REMOVALS))
def test_ten_times_the_foreign_values_cost_about_ten_times_the_time(case: str) -> None:
    make, wire_format = REMOVALS[case]
    small = removal_cpu_seconds(make, wire_format, BASE)
    large = removal_cpu_seconds(make, wire_format, BASE * SCALE)
    assert large < 3 * SCALE * max(small, 0.002), f"{case}: {small:.4f}s for {BASE}, {large:.4f}s for {BASE * SCALE}"


# --- comparing two versions of a conversation (the content view, the report) ------------------------------------


def alike_messages(count: int) -> tuple[list, list]:
    """Two versions of `count` messages alike, differing at both ends: nothing to pair by their start or end."""
    from llm_reasoning_proxy.wire.conversation import Message, Part

    def version(first: str, last: str) -> list:
        middle = [Message("user", [Part("text", text="hi")], f"messages[{i + 1}]") for i in range(count)]
        return [
            Message("user", [Part("text", text=first)], "messages[0]"),
            *middle,
            Message("user", [Part("text", text=last)], "end"),
        ]

    return version("A", "Z"), version("B", "Y")


def comparison_cpu_seconds(count: int) -> float:
    from llm_reasoning_proxy.transcripts.diff import compare

    best = float("inf")
    for _ in range(3):
        before, after = alike_messages(count)
        started = time.process_time()
        compare(before, after)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.slow
def test_comparing_thousands_of_alike_messages_costs_linear_time() -> None:
    small, large = comparison_cpu_seconds(BASE), comparison_cpu_seconds(BASE * SCALE)
    assert large < 3 * SCALE * max(small, 0.002), f"{small:.4f}s for {BASE}, {large:.4f}s for {BASE * SCALE}"


# --- assembling answers for people (the content view, the report) ----------------------------------------------


def responses_deltas_by_item_id(count: int) -> bytes:
    """Text deltas naming a new item by id and no output_index: each one an item after the highest so far."""
    return b"".join(
        b'data: {"type":"response.output_text.delta","item_id":"i%d","delta":"x"}\n\n' % n for n in range(count)
    )


def assembly_cpu_seconds(body: bytes) -> float:
    from llm_reasoning_proxy.transcripts import read_answer

    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        read_answer("openai_responses", body, sse=True)
        best = min(best, time.process_time() - started)
    return best


@pytest.mark.slow
def test_assembling_items_named_only_by_id_costs_linear_time() -> None:
    small = assembly_cpu_seconds(responses_deltas_by_item_id(BASE))
    large = assembly_cpu_seconds(responses_deltas_by_item_id(BASE * SCALE))
    assert large < 3 * SCALE * max(small, 0.002), f"{small:.4f}s for {BASE}, {large:.4f}s for {BASE * SCALE}"


def test_an_answer_of_countless_choices_keeps_its_bound_and_says_so() -> None:
    from llm_reasoning_proxy.shared.limits import MAX_CHOICES, MAX_TOOL_CALLS
    from llm_reasoning_proxy.transcripts import read_answer

    choices = b",".join([b"{}"] * 10 * MAX_CHOICES)
    answer = read_answer("chat_completions", b'data: {"choices":[%s]}\n\n' % choices, sse=True)
    assert len(answer.messages) == MAX_CHOICES and "pieces of the answer past its bounds" in answer.parts()[-1].text
    # Fragments without an index continue the call before them (as the capture reads them): each call has its own.
    calls = b",".join(b'{"index": %d}' % index for index in range(10 * MAX_TOOL_CALLS))
    answer = read_answer("chat_completions", b'data: {"choices":[{"delta":{"tool_calls":[%s]}}]}\n\n' % calls, sse=True)
    assert sum(part.kind == "tool_call" for part in answer.parts()) == MAX_TOOL_CALLS
