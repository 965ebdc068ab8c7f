"""End to end, GitHub Copilot in 2026: Claude 5 on `/chat/completions` (only `reasoning_opaque`), Claude on Copilot's
`/v1/messages` (Anthropic's rules, Copilot's error envelope) and GPT-5 on `/responses`; the openai SDK and httpx as
clients, a real mitmdump with the addon, the fakes' rules (tests/support/fake_chat.py, fake_anthropic.py,
fake_responses.py).

The proxy that must know it talks to Copilot (its checks, the diagnosis of Copilot's bare "invalid request body")
keeps the client's `Host: api.githubcopilot.com` (`keep_host_header`), as a client that uses mitmproxy as its HTTPS
proxy would send it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.fake_responses import FINAL_ANSWER
from tests.support.proxy import ROOT, MitmdumpProcess, reverse_proxy
from tests.support.turns import TOOLS, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e
COPILOT_HOST = "api.githubcopilot.com"
CLAUDE = "claude-sonnet-5"
ANSWER = "The directory holds two files."
EXPECTED_THINKING = "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."


def copilot(base_url: str, api_key: str, **fake: str) -> openai.OpenAI:
    """An openai SDK client as Copilot's clients use it: no /v1, Copilot's host; keyword headers are `x-fake-*`."""
    headers = {"host": COPILOT_HOST, "x-initiator": "agent"} | {f"x-fake-{k}": v for k, v in fake.items()}
    return openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=30, default_headers=headers)


def copilot_error(error: openai.BadRequestError) -> dict[str, Any]:
    return error.response.json()["error"]


# --- Claude 5 on /chat/completions ------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_claude_5_gets_its_reasoning_opaque_back_and_no_reasoning_text(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, parallel: str
) -> None:
    tail = LogTail(proxy_state / "events.jsonl")
    proxied = copilot(proxy.url, api_key, parallel=parallel)
    turn = first_turn(proxied, CLAUDE, stream=stream)
    first_id = turn["tool_calls"][0]["id"]
    assert turn["reasoning_opaque"] == fake.issued[first_id]["reasoning_opaque"] and "reasoning_text" not in turn
    (captured,) = tail.wait_for("captured", where=lambda e: first_id in json.dumps(e))
    assert list(captured["fields"]) == ["reasoning_opaque"]

    messages = history_as_sent(turn, drop=("reasoning_opaque",), content=None)
    with pytest.raises(openai.BadRequestError) as refused:
        second_turn(copilot(fake.url, api_key), CLAUDE, messages, stream=stream)
    assert copilot_error(refused.value)["code"] == "invalid_request_body"
    assert copilot_error(refused.value)["message"].startswith(EXPECTED_THINKING)

    assert second_turn(proxied, CLAUDE, messages, stream=stream) == ANSWER
    sent = fake.last().doc["messages"][1]
    assert sent == {**messages[1], "reasoning_opaque": turn["reasoning_opaque"]}  # and nothing the target did not issue
    (repaired,) = tail.wait_for("repaired", where=lambda e: first_id in json.dumps(e))
    assert [(a["location"], a["fields"]) for a in repaired["actions"]] == [("messages[1]", ["reasoning_opaque"])]


def test_claude_5_request_that_needs_nothing_is_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn = first_turn(copilot(proxy.url, api_key), CLAUDE, stream=True)
    messages = history_as_sent(turn, drop=(), content=None)
    body = json.dumps({"messages": messages, "model": CLAUDE, "tools": TOOLS}, indent=1).encode()
    headers = {"authorization": f"Bearer {api_key}", "host": COPILOT_HOST, "content-type": "application/json"}
    reply = httpx.post(f"{proxy.url}/chat/completions", content=body, headers=headers, timeout=30)
    assert reply.status_code == 200, reply.text
    assert fake.last().body == body


def test_an_opaque_copilot_did_not_issue_is_refused_in_its_words(fake: FakeProvider, api_key: str) -> None:
    turn = first_turn(copilot(fake.url, api_key), CLAUDE, stream=False)
    messages = history_as_sent(turn, drop=(), content=None)
    messages[1]["reasoning_opaque"] = "Eq" + turn["reasoning_opaque"][2:][::-1]
    with pytest.raises(openai.BadRequestError) as refused:
        second_turn(copilot(fake.url, api_key), CLAUDE, messages, stream=False)
    assert copilot_error(refused.value) == {
        "message": "messages.1.content.0: Invalid signature in thinking block",
        "code": "invalid_request_body",
    }


# --- Claude on Copilot's /v1/messages ---------------------------------------------------------------

ANTHROPIC_TOOLS = [
    {
        "name": "list_directory",
        "description": "List the files in a directory.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}


def messages_post(
    base_url: str, api_key: str, messages: list[dict], *, stream: bool, model: str = CLAUDE
) -> httpx.Response:
    body = {
        "model": model,
        "max_tokens": 4096,
        "thinking": {"type": "adaptive"},
        "tools": ANTHROPIC_TOOLS,
        "messages": messages,
    } | ({"stream": True} if stream else {})
    headers = {
        "authorization": f"Bearer {api_key}",
        "host": COPILOT_HOST,
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "interleaved-thinking-2025-05-14",
    }
    return httpx.post(f"{base_url}/copilot/v1/messages", json=body, headers=headers, timeout=30)


def assembled(response: httpx.Response) -> dict[str, Any]:
    """The message of an answer, whole or as a client builds it from the stream."""
    assert response.status_code == 200, response.text
    if not response.headers["content-type"].startswith("text/event-stream"):
        return response.json()
    message: dict[str, Any] = {}
    for line in response.text.splitlines():
        doc = json.loads(line[5:]) if line.startswith("data:") else {}
        if doc.get("type") == "message_start":
            message = doc["message"]
        elif doc.get("type") == "content_block_start":
            message["content"].append(dict(doc["content_block"]))
        elif doc.get("type") == "content_block_delta":
            block, delta = message["content"][doc["index"]], doc["delta"]
            key = {"thinking_delta": "thinking", "signature_delta": "signature", "text_delta": "text"}.get(
                delta["type"]
            )
            if key:
                block[key] += delta[key]
            else:
                block["partial"] = block.get("partial", "") + delta["partial_json"]
        elif doc.get("type") == "content_block_stop" and "partial" in message["content"][doc["index"]]:
            block = message["content"][doc["index"]]
            block["input"] = json.loads(block.pop("partial"))
    return message


def turn_two(answer: dict[str, Any], *, keep_thinking: bool) -> list[dict]:
    content = [b for b in answer["content"] if keep_thinking or b["type"] not in ("thinking", "redacted_thinking")]
    results = [
        {"type": "tool_result", "tool_use_id": b["id"], "content": "a.txt\nb.txt"}
        for b in answer["content"]
        if b["type"] == "tool_use"
    ]
    return [QUESTION, {"role": "assistant", "content": content}, {"role": "user", "content": results}]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_claude_on_copilot_messages_gets_its_thinking_block_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool
) -> None:
    answer = assembled(messages_post(proxy.url, api_key, [QUESTION], stream=stream))
    thinking = [b for b in answer["content"] if b["type"] == "thinking"]
    assert len(thinking) == 1 and thinking[0]["signature"]
    forgetful = turn_two(answer, keep_thinking=False)
    refused = messages_post(fake.url, api_key, forgetful, stream=False)
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_request_body"
    assert refused.json()["error"]["message"].startswith(EXPECTED_THINKING)

    assert assembled(messages_post(proxy.url, api_key, forgetful, stream=stream))["content"][0]["text"] == ANSWER
    assert fake.last("/v1/messages").doc["messages"] == turn_two(answer, keep_thinking=True)


# --- GPT-5 on Copilot's /responses -----------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_gpt_5_on_copilot_responses_gets_its_reasoning_item_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool
) -> None:
    """The request as opencode sends it to Copilot (anomalyco/opencode #6864): stateless, encrypted reasoning asked
    for, a summary."""
    model, question = "gpt-5.2-codex", {"role": "user", "content": "What is in the deleteme directory?"}
    arguments = {
        "model": model,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "medium", "summary": "auto"},
        "tools": [{"type": "function", **TOOLS[0]["function"]}],
    }

    def create(llm: openai.OpenAI, items: list[dict]) -> tuple[list[dict], str]:
        if not stream:
            response = llm.responses.create(input=items, **arguments)
            return [item.to_dict() for item in response.output], response.output_text
        done, text = {}, []
        for event in llm.responses.create(input=items, stream=True, **arguments):
            if event.type == "response.output_item.done":
                done[event.output_index] = event.item.to_dict()
            elif event.type == "response.output_text.delta":
                text.append(event.delta)
        return [done[i] for i in sorted(done)], "".join(text)

    output, _ = create(copilot(proxy.url, api_key), [question])
    reasoning, call = output
    results = [{"type": "function_call_output", "call_id": call["call_id"], "output": "a.txt"}]
    forgetful = [question, call, *results]
    with pytest.raises(openai.BadRequestError, match="was provided without its required 'reasoning' item"):
        create(copilot(fake.url, api_key), forgetful)

    assert create(copilot(proxy.url, api_key), forgetful)[1] == FINAL_ANSWER
    sent = fake.last("/responses")
    assert sent.path == "/responses" and sent.doc["input"] == [question, reasoning, call, *results]


# --- with repair off: the diagnoses, and the offline check of the flow file ------------------------------


class Watched:
    """What a proxy with repair off, keeping the Host header and writing a flow file, made of Copilot's refusals."""

    def __init__(self) -> None:
        self.diagnosed: dict[str, dict[str, Any]] = {}  # by scenario
        self.calls: dict[str, str] = {}  # the tool call id of each chat scenario
        self.flows = Path()


@pytest.fixture(scope="module")
def watched(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Watched:
    folder = tmp_path_factory.mktemp("copilot")
    seen = Watched()
    seen.flows, log = folder / "refused.mitm", folder / "events.jsonl"
    process = reverse_proxy(
        fake.url,
        confdir,
        "-w",
        str(seen.flows),
        llm_cache="memory",
        llm_log=log,
        llm_repair="false",
        keep_host_header="true",
    )
    with process:
        for scenario, fake_headers in (("anthropic-text", {}), ("bare", {"bare": "1"})):
            tail, key = LogTail(log), f"sk-test-{scenario}"
            proxied = copilot(process.url, key, **fake_headers)
            turn = first_turn(proxied, CLAUDE, stream=True)
            seen.calls[scenario] = turn["tool_calls"][0]["id"]
            with pytest.raises(openai.BadRequestError):
                second_turn(
                    proxied, CLAUDE, history_as_sent(turn, drop=("reasoning_opaque",), content=None), stream=False
                )
            (seen.diagnosed[scenario],) = tail.wait_for("diagnosed")
        tail, key = LogTail(log), "sk-test-messages"
        answer = assembled(messages_post(process.url, key, [QUESTION], stream=False, model="claude-opus-5"))
        refused = messages_post(process.url, key, turn_two(answer, keep_thinking=True), stream=False)
        assert refused.json() == {
            "error": {
                "message": "messages.1.content.0: Invalid `signature` in `thinking` block",
                "code": "invalid_request_body",
            }
        }
        (seen.diagnosed["other-model"],) = tail.wait_for("diagnosed")
    return seen


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["anthropic-text", "bare"])
def test_a_dropped_opaque_is_diagnosed_and_located_with_repair_off(watched: Watched, scenario: str) -> None:
    """Copilot's bare "invalid request body" names nothing: the chat check finds the message without its opaque,
    because the request went to Copilot for a Claude model that always thinks."""
    diagnosed = watched.diagnosed[scenario]
    rule, provider = (
        ("copilot_invalid_request_body", "copilot")
        if scenario == "bare"
        else ("anthropic_thinking_expected", "anthropic")
    )
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["location"]) == (rule, provider, "messages[1]")
    assert "would have restored reasoning_opaque on messages[1]" in diagnosed["advice"]
    if scenario == "bare":
        assert diagnosed["findings"] == [
            "messages[1]: current-turn function call without its thought signature (reasoning_opaque missing) "
            f"(tool call {watched.calls[scenario]})"
        ]


def test_a_thinking_block_of_another_model_is_diagnosed_in_copilot_s_envelope(watched: Watched) -> None:
    diagnosed = watched.diagnosed["other-model"]
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["location"]) == (
        "anthropic_signature_invalid",
        "anthropic",
        "messages[1]",
    )


@pytest.mark.slow
def test_the_offline_check_of_the_flow_file_finds_what_copilot_did_not_name(watched: Watched) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", "check", "--no-diff", str(watched.flows)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = result.stdout.split("\nTool-call chain:")[0]
    requests = [part for part in re.split(r"\n(?=#\d+ POST )", report) if part.startswith("#")]
    bare = [part for part in requests if watched.calls["bare"] in part and "-> HTTP 400" in part]
    assert len(bare) == 1, result.stdout + result.stderr
    assert "messages[1]: current-turn function call without its thought signature (reasoning_opaque missing)" in bare[0]
    assert "the provider answered: copilot_invalid_request_body" in bare[0]
    assert "restored reasoning_opaque on messages[1]" in bare[0] and "after repair: breaks no known rule" in bare[0]
