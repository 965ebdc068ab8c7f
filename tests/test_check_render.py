"""scripts/check's report, as a person reads it."""

from __future__ import annotations

from llm_reasoning_proxy.offline.check import ExchangeCheck, render


def exchange(**fields: object) -> ExchangeCheck:
    return ExchangeCheck(
        1, "https://api.deepseek.com/chat/completions", "chat_completions", "deepseek-reasoner", **fields
    )


def test_an_answer_is_told_by_the_tools_it_calls_or_that_it_calls_none() -> None:
    with_calls = render([exchange(status=200, calls=["read(call_1)"], captured=["reasoning_content"])])
    assert "    the answer calls read(call_1); reasoning captured: reasoning_content\n" in with_calls
    text_only = render([exchange(status=200, captured=["reasoning_content"])])
    assert "    the answer calls no tool; reasoning captured: reasoning_content\n" in text_only
