"""End to end: OpenRouter, Gemini's OpenAI-compatible endpoint, LiteLLM, rewritten ids and model binding."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import TOOLS, client, first_turn, history_as_sent, logged_events, second_turn

pytestmark = pytest.mark.e2e
ANSWER = "The directory holds two files."


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize(
    "model, refusal",
    [
        ("google/gemini-3-pro-preview", "Gemini models require OpenRouter reasoning details to be preserved"),
        ("anthropic/claude-sonnet-4.5", "Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
    ],
)
def test_openrouter_reasoning_details_come_back_unmodified(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, model: str, refusal: str
) -> None:
    proxied = client(proxy.url, api_key, path="/api/v1", parallel="2")
    turn = first_turn(proxied, model, stream=stream)
    first_id = turn["tool_calls"][0]["id"]
    issued = fake.issued[first_id]["reasoning_details"]
    messages = history_as_sent(turn, drop=("reasoning_details", "reasoning"), content=None)
    with pytest.raises(openai.BadRequestError, match=refusal):
        second_turn(client(fake.url, api_key, path="/api/v1"), model, messages, stream=stream)

    assert second_turn(proxied, model, messages, stream=stream) == ANSWER
    assert fake.last().doc["messages"][1]["reasoning_details"] == issued
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", first_id)
    assert "reasoning_details" in captured["fields"]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", first_id)
    assert repaired["actions"][0]["fields"] == ["reasoning_details"]


def test_openrouter_request_that_needs_nothing_is_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    model = "google/gemini-3-pro-preview"
    turn = first_turn(client(proxy.url, api_key, path="/api/v1"), model, stream=False)
    messages = history_as_sent(turn, drop=(), content=None)  # keeps reasoning_details as received
    body = json.dumps({"model": model, "messages": messages, "tools": TOOLS}, indent=2).encode()
    response = httpx.post(
        f"{proxy.url}/api/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {api_key}", "content-type": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert fake.requests[-1].body == body


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_gemini_openai_compat_signature_goes_back_on_the_first_call(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key, path="/v1beta/openai", parallel="2")
    turn = first_turn(proxied, model, stream=stream)
    first, second = (c["id"] for c in turn["tool_calls"])
    messages = history_as_sent(turn, drop=(), content=None)  # tool calls rebuilt without extra_content
    with pytest.raises(
        openai.BadRequestError,
        match=r"Function call is missing a thought_signature in functionCall parts\..*position 2\.",
    ):
        second_turn(client(fake.url, api_key, path="/v1beta/openai"), model, messages, stream=stream)

    assert second_turn(proxied, model, messages, stream=stream) == ANSWER
    sent = fake.last().doc["messages"][1]["tool_calls"]
    assert sent[0]["extra_content"] == fake.chat.issued_calls[first]["extra_content"]
    assert "extra_content" not in sent[1] and sent[1]["id"] == second
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", first)
    assert list(captured["tool_calls"][0]["fields"]) == ["extra_content"]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", first)
    assert [(a["location"], a["fields"]) for a in repaired["actions"]] == [
        ("messages[1].tool_calls[0]", ["extra_content"])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_litellm_ids_stripped_by_the_client_are_restored(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key, path="/litellm/v1", parallel="2")
    turn = first_turn(proxied, model, stream=stream)
    full_id = turn["tool_calls"][0]["id"]
    assert "__thought__" in full_id
    for call in turn["tool_calls"]:
        call["id"] = call["id"].split("__thought__")[0]
    messages = history_as_sent(turn, drop=(), content=None)
    direct = client(fake.url, api_key, path="/litellm/v1").chat.completions.with_raw_response.create(
        model=model, messages=messages, tools=TOOLS
    )
    assert direct.headers.get("x-fake-degraded") == "dummy-thought-signature"

    through = proxied.chat.completions.with_raw_response.create(model=model, messages=messages, tools=TOOLS)
    assert "x-fake-degraded" not in through.headers
    assert through.parse().choices[0].message.content == ANSWER
    sent = fake.last().doc["messages"]
    assert sent[1]["tool_calls"][0]["id"] == full_id and sent[2]["tool_call_id"] == full_id
    assert sent[1]["tool_calls"][1]["id"] == turn["tool_calls"][1]["id"]
    # The log decodes the id: the signature inside it is summarised like any opaque value, never printed.
    short, signature = full_id.split("__thought__")
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", short)
    call = captured["tool_calls"][0]
    assert call["id"] == f"{short}__thought__<{len(signature)}-char signature>"
    assert call["fields"]["id.__thought__"]["length"] == len(signature)
    assert "provider_specific_fields" in call["fields"]
    assert signature not in (proxy_state / "events.jsonl").read_text()


def test_rewritten_ids_fall_back_to_name_and_arguments(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key)
    turn = first_turn(proxied, model, stream=True)
    issued = fake.issued[turn["tool_calls"][0]["id"]]
    rewritten = f"toolu_{api_key[-12:]}"
    turn["tool_calls"][0]["id"] = rewritten
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    with pytest.raises(openai.BadRequestError, match="missing a `thought_signature`"):
        second_turn(client(fake.url, api_key), model, messages, stream=False)

    assert second_turn(proxied, model, messages, stream=False) == ANSWER
    assert fake.last().doc["messages"][1]["reasoning_opaque"] == issued["reasoning_opaque"]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", rewritten)
    assert repaired["actions"][0]["via"] == "fingerprint"


def test_reasoning_is_never_replayed_into_another_model(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    proxied = client(proxy.url, api_key)
    turn = first_turn(proxied, "gemini-3-pro-preview", stream=False)
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    with pytest.raises(openai.BadRequestError, match="missing a `thought_signature`"):
        second_turn(proxied, "gemini-3-flash-preview", messages, stream=False)
    assert "reasoning_opaque" not in fake.last().doc["messages"][1]
    (skipped,) = logged_events(proxy_state / "events.jsonl", "skipped", turn["tool_calls"][0]["id"])
    assert "came from model gemini-3-pro-preview; not replayed into model gemini-3-flash-preview" in skipped["reason"]
