"""End to end: a real mitmdump with the addon that never saw turn 1 (another proxy, or none, carried it; the cache of
this client's scope is empty), a client that dropped turn 1's reasoning, and the fake provider, which refuses that
turn 2 as the real one does. With llm_recover on (the default) the proxy sends it in the closest form the provider
accepts and logs a `recovered` event (how "before"); with llm_recover=false the provider's 400 comes back as before.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import test_e2e_bedrock as bedrock
from tests.support.event_log import LogTail
from tests.support.fake_anthropic import MISSING_THINKING, SIGNATURE_REQUIRED, THINKING_MISSING
from tests.support.fake_chat import DEEPSEEK_MISSING_REASONING, KIMI_MISSING
from tests.support.fake_provider import FakeProvider
from tests.support.fake_responses import COMPACTION_BLOB, DEGRADED
from tests.support.proxy import MitmdumpProcess, reverse_proxy

pytestmark = pytest.mark.e2e

QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
PARAMETERS = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
ANTHROPIC_TOOLS = [{"name": "list_directory", "description": "List a directory.", "input_schema": PARAMETERS}]
CHAT_TOOLS = [{"type": "function", "function": {"name": "list_directory", "parameters": PARAMETERS}}]
RESPONSES_TOOLS = [{"type": "function", "name": "list_directory", "parameters": PARAMETERS}]
STREAMS = pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])


@pytest.fixture(scope="module")
def proxy_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("recovering")


@pytest.fixture(scope="module")
def proxy(fake: FakeProvider, confdir: Path, proxy_state: Path) -> Iterator[MitmdumpProcess]:
    """A proxy with llm_recover on, as users run it (its default: tests/test_settings.py)."""
    options = {"llm_cache": proxy_state / "cache.db", "llm_log": proxy_state / "events.jsonl", "llm_recover": "true"}
    with reverse_proxy(fake.url, confdir, **options) as process:
        yield process


@pytest.fixture(scope="module")
def unrecovering(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same proxy with llm_recover=false: requests go as the client made them."""
    state = tmp_path_factory.mktemp("unrecovering")
    process = reverse_proxy(
        fake.url, confdir, llm_recover="false", llm_cache=state / "cache.db", llm_log=state / "events.jsonl"
    )
    with process:
        yield process.url


def send(base_url: str, path: str, api_key: str, body: dict[str, Any], **fake: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {api_key}", "x-api-key": api_key, "anthropic-version": "2023-06-01"}
    headers |= {f"x-fake-{name}": value for name, value in fake.items()}
    return httpx.post(f"{base_url}{path}", json=body, headers=headers, timeout=30)


def error_text(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    error = body.get("error")
    return error if isinstance(error, str) else error["message"]


def recovered(proxy_state: Path, tool_call_id: str) -> dict[str, Any]:
    """The `recovered` event of the request whose repair concerns `tool_call_id`."""
    log = LogTail(proxy_state / "events.jsonl", whole=True)
    (repair,) = log.wait_for("repaired", where=lambda e: tool_call_id in json.dumps(e))
    (event,) = log.wait_for("recovered", where=lambda e: e["flow_id"] == repair["flow_id"])
    assert event["how"] == "before" and event["host"] and event["url"].startswith("http")
    return event


def answered(response: httpx.Response, stream: bool) -> None:
    assert response.status_code == 200, response.text
    if stream:
        assert response.headers["content-type"].startswith("text/event-stream")


# Anthropic ------------------------------------------------------------------------------------------------------
def messages_turn_two(fake: FakeProvider, api_key: str, path: str, model: str, **extra: Any) -> tuple[dict, str]:
    """Turn 1 straight from the fake (no proxy saw it), and turn 2 as a client that dropped its thinking sends it."""
    body = {"model": model, "max_tokens": 4096, "tools": ANTHROPIC_TOOLS, "messages": [QUESTION], **extra}
    first = send(fake.url, path, api_key, body, steps="2")
    assert first.status_code == 200, first.text
    turn = first.json()
    uses = [block for block in turn["content"] if block["type"] == "tool_use"]
    dropped = [block for block in turn["content"] if block["type"] not in ("thinking", "redacted_thinking")]
    results = [{"type": "tool_result", "tool_use_id": use["id"], "content": "a.txt"} for use in uses]
    messages = [QUESTION, {"role": "assistant", "content": dropped}, {"role": "user", "content": results}]
    return {**body, "messages": messages}, uses[0]["id"]


@STREAMS
def test_anthropic_turn_two_goes_with_thinking_off(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, unrecovering: str, api_key: str, stream: bool
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 2048}
    body, call_id = messages_turn_two(fake, api_key, "/v1/messages", "claude-sonnet-4-5", thinking=thinking)
    body |= {"stream": stream}
    assert error_text(send(unrecovering, "/v1/messages", api_key, body, steps="2")) == MISSING_THINKING.format(
        index=1, found="tool_use"
    )

    answered(send(proxy.url, "/v1/messages", api_key, body, steps="2"), stream)
    sent = fake.last("/v1/messages").doc
    assert sent["thinking"] == {"type": "disabled"} and sent["messages"] == body["messages"]
    event = recovered(proxy_state, call_id)
    assert (event["rule"], event["removed"]) == ("anthropic_thinking_expected", ["messages[1]: thinking"])


@STREAMS
def test_anthropic_thinking_saved_without_its_signature_goes_with_thinking_off(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, unrecovering: str, api_key: str, stream: bool
) -> None:
    """A session a client saved without signatures, resumed through a proxy that never saw it (opencode #25005)."""
    thinking = {"type": "enabled", "budget_tokens": 2048}
    body, call_id = messages_turn_two(fake, api_key, "/v1/messages", "claude-sonnet-4-5", thinking=thinking)
    body["messages"][1]["content"].insert(0, {"type": "thinking", "thinking": "I will list it."})
    body |= {"stream": stream}
    assert error_text(send(unrecovering, "/v1/messages", api_key, body, steps="2")) == SIGNATURE_REQUIRED.format(
        index=1, block=0
    )

    answered(send(proxy.url, "/v1/messages", api_key, body, steps="2"), stream)
    sent = fake.last("/v1/messages").doc
    assert sent["thinking"] == {"type": "disabled"}
    assert [block["type"] for block in sent["messages"][1]["content"]] == ["tool_use"]
    event = recovered(proxy_state, call_id)
    assert event["rule"] == "anthropic_signature_missing, anthropic_thinking_expected"
    assert event["removed"] == ["messages[1].content[0]: thinking", "messages[1]: thinking"]


def test_anthropic_adaptive_thinking_goes_off_and_a_model_that_cannot_is_sent_as_it_is(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    adaptive = {"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}
    body, call_id = messages_turn_two(fake, api_key, "/v1/messages", "claude-opus-5", **adaptive)
    assert send(proxy.url, "/v1/messages", api_key, body, steps="2").status_code == 200
    sent = fake.last("/v1/messages").doc
    assert (sent["thinking"], sent["output_config"]) == ({"type": "disabled"}, {"effort": "high"})
    assert recovered(proxy_state, call_id)["removed"] == ["messages[1]: thinking, output_config.effort"]

    body, _ = messages_turn_two(fake, api_key, "/v1/messages", "claude-fable-5", thinking={"type": "adaptive"})
    refused = send(proxy.url, "/v1/messages", api_key, body, steps="2")
    assert error_text(refused) == MISSING_THINKING.format(index=1, found="tool_use")
    assert fake.last("/v1/messages").doc == body  # no form it takes is known: as the client sent it


@STREAMS
def test_deepseek_anthropic_route_gets_an_empty_thinking_block(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, unrecovering: str, api_key: str, stream: bool
) -> None:
    path = "/anthropic/v1/messages"
    body, call_id = messages_turn_two(fake, api_key, path, "deepseek-v4-pro")
    body |= {"stream": stream}
    assert error_text(send(unrecovering, path, api_key, body, steps="2")) == THINKING_MISSING

    answered(send(proxy.url, path, api_key, body, steps="2"), stream)
    sent = fake.last(path).doc
    assert sent["messages"][1]["content"][0] == {"type": "thinking", "thinking": "", "signature": ""}
    assert "thinking" not in sent  # thinking stays on, as the client left it
    event = recovered(proxy_state, call_id)
    assert (event["rule"], event["removed"]) == ("deepseek_thinking_missing", ["messages[1].content[0]: thinking"])


# Chat completions -----------------------------------------------------------------------------------------------
def chat_turn_two(fake: FakeProvider, api_key: str, path: str, model: str) -> tuple[dict, str]:
    body = {"model": model, "tools": CHAT_TOOLS, "messages": [QUESTION]}
    first = send(fake.url, path, api_key, body, steps="2")
    assert first.status_code == 200, first.text
    message = first.json()["choices"][0]["message"]
    assert message.get("reasoning_content")
    dropped = {"role": "assistant", "content": message.get("content"), "tool_calls": message["tool_calls"]}
    call_id = message["tool_calls"][0]["id"]
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "a.txt"} for call in message["tool_calls"]]
    return {**body, "messages": [QUESTION, dropped, *results]}, call_id


@STREAMS
@pytest.mark.parametrize(
    ("path", "model", "refusal"),
    [
        ("/v1/chat/completions", "deepseek-v4-pro", DEEPSEEK_MISSING_REASONING.format(index=1)),
        ("/moonshot/v1/chat/completions", "kimi-k2.6", KIMI_MISSING.format(index=1)),
    ],
    ids=["deepseek", "kimi"],
)
def test_chat_turn_two_gets_an_empty_reasoning_content(
    fake: FakeProvider,
    proxy: MitmdumpProcess,
    proxy_state: Path,
    unrecovering: str,
    api_key: str,
    stream: bool,
    path: str,
    model: str,
    refusal: str,
) -> None:
    body, call_id = chat_turn_two(fake, api_key, path, model)
    body |= {"stream": stream}
    assert error_text(send(unrecovering, path, api_key, body, steps="2")) == refusal

    answered(send(proxy.url, path, api_key, body, steps="2"), stream)
    assert fake.last(path).doc["messages"][1]["reasoning_content"] == ""
    event = recovered(proxy_state, call_id)
    assert (event["rule"], event["removed"]) == ("reasoning_content_missing", ["messages[1]: reasoning_content"])


# Responses (xAI) ------------------------------------------------------------------------------------------------
@STREAMS
def test_xai_reasoning_item_without_its_summary_is_taken_out_with_its_calls_id(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, unrecovering: str, api_key: str, stream: bool
) -> None:
    path = "/xai/v1/responses"
    stateless = {"store": False, "include": ["reasoning.encrypted_content"]}
    body = {"model": "grok-4", "tools": RESPONSES_TOOLS, "input": [QUESTION], **stateless}
    first = send(fake.url, path, api_key, body, steps="2")
    assert first.status_code == 200, first.text
    reasoning, call = first.json()["output"][:2]
    assert reasoning["type"] == "reasoning" and call["type"] == "function_call"
    # A client that keeps the encrypted reasoning but not its summary (which xAI refuses it without).
    kept = {name: value for name, value in reasoning.items() if name != "summary"}
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"}
    body = {**body, "input": [QUESTION, kept, call, output], "stream": stream}
    assert error_text(send(unrecovering, path, api_key, body, steps="2")) == COMPACTION_BLOB

    response = send(proxy.url, path, api_key, body, steps="2")
    answered(response, stream)
    assert response.headers["x-fake-degraded"] == DEGRADED  # xAI answers, without that reasoning
    unpaired = {name: value for name, value in call.items() if name != "id"}
    assert fake.last(path).doc["input"] == [QUESTION, unpaired, output]
    event = recovered(proxy_state, call["call_id"])
    assert event["rule"] == "reasoning_summary_missing"
    assert event["removed"] == [f"input[1]: reasoning {reasoning['id']}", "input[1]: id"]


# What needs nothing -----------------------------------------------------------------------------------------------
def test_a_request_that_needs_nothing_reaches_the_provider_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    thinking = {"type": "enabled", "budget_tokens": 2048}
    body, _ = messages_turn_two(fake, api_key, "/v1/messages", "claude-sonnet-4-5", thinking=thinking)
    body["thinking"] = {"type": "disabled"}  # the client turned thinking off itself: nothing is required back
    raw = json.dumps(body, indent=1, ensure_ascii=True).encode()
    headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    response = httpx.post(f"{proxy.url}/v1/messages", content=raw, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    assert fake.last("/v1/messages").body == raw


# Bedrock Converse -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_converse_turn_two_goes_with_thinking_off(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, unrecovering: str, stream: bool
) -> None:
    """Turn 1 went straight to Bedrock; turn 2, its reasoning dropped, comes through a proxy that never saw it."""
    client = bedrock.Client(fake)
    content, messages = bedrock.converse_turn_two(fake, fake.url, client, stream=stream)
    action = "converse-stream" if stream else "converse"
    refused = client.post(unrecovering, action, bedrock.converse(messages))
    assert refused.status_code == 400 and refused.json() == bedrock.REFUSED

    answered = client.post(proxy.url, action, bedrock.converse(messages))
    assert "".join(b.get("text", "") for b in bedrock.converse_answer(answered, stream=stream)) == bedrock.ANSWER
    sent = fake.last("/converse").doc
    assert sent["additionalModelRequestFields"]["thinking"] == {"type": "disabled"}
    assert sent["messages"] == messages
    (call_id,) = bedrock.uses_of(content)
    event = recovered(proxy_state, call_id)
    assert event["wire_format"] == "bedrock_converse" and event["removed"] == [
        "messages[1]: additionalModelRequestFields.thinking"
    ]
