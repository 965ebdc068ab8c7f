"""End to end: reasoning that passed through a gateway, sent on to another model behind it.

* OpenRouter chat completions: a finished tool loop on one model keeps its `reasoning_details`, among them
  `reasoning.encrypted` entries; the user switches to an `x-ai/…` model, and xAI cannot decrypt them ("Could not
  decrypt the provided encrypted_content. …", which https://github.com/hackerai-tech/hackerai/pull/996 avoids by
  removing them before every request that can route to xAI).
* The Responses API through a gateway (OpenRouter's `/api/v1/responses`): a conversation on one model, then another,
  whose server refuses the first one's reasoning items (`invalid_encrypted_content`).

The proxy saw each value issued for the first model, so it takes them out; the fakes refuse them with the real texts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from tests import test_e2e_responses as responses
from tests.support.fake_chat import XAI_UNDECRYPTABLE
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import TOOLS, client, first_turn, history_as_sent, logged_events

pytestmark = pytest.mark.e2e

GEMINI = "google/gemini-3-pro-preview"
GROK = "x-ai/grok-4"
FOLLOW_UP = {"role": "user", "content": "And what is in the other directory?"}


def chat(llm: openai.OpenAI, model: str, messages: list[dict[str, Any]], *, stream: bool) -> str:
    """One chat request; the answer's text (its tool calls are not needed here)."""
    if not stream:
        return llm.chat.completions.create(model=model, messages=messages, tools=TOOLS).choices[0].message.content or ""
    chunks = llm.chat.completions.create(model=model, messages=messages, tools=TOOLS, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


def encrypted_entries(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in message.get("reasoning_details") or [] if e.get("type") == "reasoning.encrypted"]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_openrouter_encrypted_reasoning_of_another_model_never_reaches_xai(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key, path="/api/v1")
    turn = first_turn(proxied, GEMINI, stream=stream)
    call_id = turn["tool_calls"][0]["id"]
    messages = history_as_sent(turn, drop=(), content=None)
    # The client keeps reasoning_details whole, as it assembled them (a stream's too).
    messages[1]["reasoning_details"] = fake.issued[call_id]["reasoning_details"]
    assert encrypted_entries(messages[1])
    answer = chat(proxied, GEMINI, messages, stream=stream)
    history = [*messages, {"role": "assistant", "content": answer}, FOLLOW_UP]

    with pytest.raises(openai.BadRequestError) as refused:
        chat(client(fake.url, api_key, path="/api/v1"), GROK, history, stream=stream)
    raw = json.loads(refused.value.body["metadata"]["raw"])
    assert raw["error"] == XAI_UNDECRYPTABLE and refused.value.body["metadata"]["provider_name"] == "xAI"

    chat(proxied, GROK, history, stream=stream)  # answered
    sent = fake.last().doc["messages"]
    assert not encrypted_entries(sent[1])
    assert sent[1]["tool_calls"] == history[1]["tool_calls"] and sent[2:] == history[2:]

    (repaired,) = [e for e in logged_events(proxy_state / "events.jsonl", "repaired", call_id) if e.get("actions")]
    removed = [a for a in repaired["actions"] if a["kind"] == "foreign_removed"]
    assert [(a["location"], a["reason"]) for a in removed] == [
        ("messages[1]", f"issued for model {GEMINI}, not {GROK}")
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_responses_reasoning_of_another_model_through_a_gateway_is_removed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    first_model, second_model = "openai/gpt-5", "openai/gpt-5-mini"
    llm = client(proxy.url, api_key, path="/api/v1")
    arguments = {"tools": responses.TOOLS, **responses.STATELESS}
    first = llm.responses.create(model=first_model, input=[responses.QUESTION], **arguments)
    output = [item.to_dict() for item in first.output]
    items = [responses.QUESTION, *output, *responses.results(output)]
    second = llm.responses.create(model=first_model, input=items, **arguments)
    history = [*items, *(item.to_dict() for item in second.output), {"role": "user", "content": "And the other?"}]

    direct = client(fake.url, api_key, path="/api/v1")
    with pytest.raises(openai.BadRequestError) as refused:
        direct.responses.create(model=second_model, input=history, **arguments)
    assert refused.value.body["code"] == "invalid_encrypted_content"

    if stream:
        events = list(llm.responses.create(model=second_model, input=history, stream=True, **arguments))
        assert events[-1].type == "response.completed"
    else:
        llm.responses.create(model=second_model, input=history, **arguments)
    sent = fake.last("/api/v1/responses").doc["input"]
    assert sent == [item for item in history if item.get("type") != "reasoning"]

    call_id = next(item["call_id"] for item in output if item["type"] == "function_call")
    (repaired,) = [e for e in logged_events(proxy_state / "events.jsonl", "repaired", call_id) if e.get("actions")]
    reasons = {a["reason"] for a in repaired["actions"] if a["kind"] == "foreign_removed"}
    assert reasons == {f"issued for model {first_model}, not {second_model}"}
