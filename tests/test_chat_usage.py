"""The usage a chat completions answer reports, as the report shows it: each provider's own spelling."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from llm_reasoning_proxy.transcripts import read_answer

COPILOT = Path(__file__).parent / "fixtures" / "copilot"


@pytest.mark.parametrize(
    "capture",
    [
        "codecompanion_gemini3_tool_call_reasoning_opaque_stream.sse",
        "opencode_tidewave_reasoning_directly_to_tool_calls.sse",
    ],
)
def test_copilot_reasoning_tokens_are_read_from_the_top_level_of_usage(capture: str) -> None:
    """Copilot reports its models' reasoning tokens as `usage.reasoning_tokens`, not under
    `completion_tokens_details` as OpenAI and DeepSeek do."""
    body = (COPILOT / capture).read_bytes()
    reported = [int(n) for n in re.findall(rb'"reasoning_tokens":(\d+)', body)]
    answer = read_answer("chat_completions", body, sse=True)
    assert answer.usage is not None and answer.usage.reasoning == reported[-1] > 0


def test_openai_and_deepseek_spelling_is_read_first() -> None:
    body = (
        b'{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"},'
        b'"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,'
        b'"completion_tokens_details":{"reasoning_tokens":4},"reasoning_tokens":1}}'
    )
    answer = read_answer("chat_completions", body, sse=False)
    assert answer.usage is not None and answer.usage.reasoning == 4
