"""End to end: Claude's thinking blocks sent back mangled, on every route of the Messages format (Anthropic, Claude
on Vertex AI, Claude behind Copilot's /v1/messages, Bedrock's InvokeModel) and on Bedrock's Converse, through a real
mitmdump with the addon, to the fakes, which refuse them in the providers' words:

- the text emptied, the signature kept: "`thinking` or `redacted_thinking` blocks in the latest assistant message
  cannot be modified. …"; the proxy puts the text issued with that signature back, unless the request asked for
  redacted thinking (`anthropic-beta: redact-thinking-2026-02-12`), or the text was issued empty;
- the signature dropped (a session saved without it, then resumed): "messages.N.content.M.thinking.signature: Field
  required"; the proxy puts back the block as issued, found by the message's tool_use ids.

Each answer is captured plain and streamed, and the later request repaired.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_anthropic import MODIFIED, REDACT_THINKING_BETA, SIGNATURE_REQUIRED
from tests.support.fake_bedrock import MODEL_ERRORS
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.test_e2e_anthropic import QUESTION, THINKING, TOOLS, assembled, results, tool_ids
from tests.test_e2e_bedrock import MODEL as BEDROCK_MODEL
from tests.test_e2e_bedrock import (
    Client,
    converse,
    converse_answer,
    converse_question,
    converse_results,
    invoke,
    invoke_answer,
    uses_of,
)

pytestmark = pytest.mark.e2e

ANSWER = "The directory holds two files."


@dataclass(frozen=True)
class Route:
    """One route of the Messages format: how a client posts there, reads the answer and the refusal."""

    name: str
    suffix: str  # what the fake's recorded path ends with
    post: Callable[[str, str, list[dict], bool, dict[str, str]], httpx.Response]
    answer: Callable[[httpx.Response, bool], dict[str, Any]]
    refusal: Callable[[httpx.Response], str]


def _anthropic_post(base: str, key: str, messages: list[dict], stream: bool, headers: dict[str, str]) -> httpx.Response:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 4096, "thinking": THINKING, "tools": TOOLS}
    body |= {"messages": messages} | ({"stream": True} if stream else {})
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01"} | headers
    return httpx.post(f"{base}/v1/messages", json=body, headers=headers, timeout=30)


def _vertex_post(base: str, key: str, messages: list[dict], stream: bool, headers: dict[str, str]) -> httpx.Response:
    body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 4096, "thinking": THINKING, "tools": TOOLS}
    body |= {"messages": messages} | ({"stream": True} if stream else {})
    route = "/v1/projects/demo/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929"
    method = "streamRawPredict" if stream else "rawPredict"
    headers = {"authorization": f"Bearer {key}"} | headers
    return httpx.post(f"{base}{route}:{method}", json=body, headers=headers, timeout=30)


def _copilot_post(base: str, key: str, messages: list[dict], stream: bool, headers: dict[str, str]) -> httpx.Response:
    body = {"model": "claude-sonnet-5", "max_tokens": 4096, "thinking": {"type": "adaptive"}, "tools": TOOLS}
    body |= {"messages": messages} | ({"stream": True} if stream else {})
    headers = {"authorization": f"Bearer {key}", "host": "api.githubcopilot.com", "anthropic-version": "2023-06-01"}
    return httpx.post(f"{base}/copilot/v1/messages", json=body, headers=headers, timeout=30)


def _invoke_post(base: str, key: str, messages: list[dict], stream: bool, headers: dict[str, str]) -> httpx.Response:
    """As a Bedrock client with an API key posts: betas in the body's `anthropic_beta` list."""
    body = invoke(messages)
    if "anthropic-beta" in headers:
        body["anthropic_beta"] = headers["anthropic-beta"].split(",")
    action = "invoke-with-response-stream" if stream else "invoke"
    headers = {"authorization": f"Bearer ABSK{key}"} | {k: v for k, v in headers.items() if k != "anthropic-beta"}
    return httpx.post(f"{base}/model/{quote(BEDROCK_MODEL, safe='')}/{action}", json=body, headers=headers, timeout=30)


def _sse_or_json(response: httpx.Response, stream: bool) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return assembled(response.text) if stream else response.json()


def _anthropic_refusal(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    return response.json()["error"]["message"]


def _bedrock_refusal(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert message.startswith(MODEL_ERRORS)
    return message[len(MODEL_ERRORS) :]


ROUTES = [
    Route("anthropic", "/v1/messages", _anthropic_post, _sse_or_json, _anthropic_refusal),
    Route("vertex", "Predict", _vertex_post, _sse_or_json, _anthropic_refusal),
    Route("copilot", "/copilot/v1/messages", _copilot_post, _sse_or_json, _anthropic_refusal),
    Route(
        "bedrock-invoke", "/invoke", _invoke_post, lambda r, stream: invoke_answer(r, stream=stream), _bedrock_refusal
    ),
]


def first_turn(route: Route, proxy: MitmdumpProcess, key: str, stream: bool, **headers: str) -> dict[str, Any]:
    return route.answer(route.post(proxy.url, key, [QUESTION], stream, headers), stream)


def sent_back(turn: dict[str, Any], mangle: Callable[[dict], dict]) -> dict[str, Any]:
    """The assistant turn as the client sends it back, each thinking block mangled."""
    content = [mangle(copy.deepcopy(b)) if b["type"] == "thinking" else b for b in turn["content"]]
    return {"role": "assistant", "content": content}


def emptied(block: dict) -> dict:
    return {**block, "thinking": ""}


def unsigned(block: dict) -> dict:
    return {key: value for key, value in block.items() if key != "signature"}


def events(proxy_state: Path, kind: str, tool_call_id: str) -> list[dict]:
    def concerns(event: dict) -> bool:
        return tool_call_id in [a.get("tool_call_id") for a in event.get("actions", [])]

    return LogTail(proxy_state / "events.jsonl", whole=True).wait_for(kind, where=concerns)


def api_key_for(route: Route) -> str:
    """A credential of its own per test, so tests never share a cache scope."""
    return f"test{uuid.uuid4().hex}"


# the text emptied, the signature kept ------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_an_emptied_thinking_text_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, route: Route, stream: bool
) -> None:
    key = api_key_for(route)
    turn = first_turn(route, proxy, key, stream)
    issued = [b for b in turn["content"] if b["type"] == "thinking"]
    assert len(issued) == 1 and issued[0]["thinking"] and issued[0]["signature"]
    messages = [QUESTION, sent_back(turn, emptied), results(turn)]
    direct = route.post(fake.url, key, messages, False, {})
    assert route.refusal(direct) == MODIFIED.format(index=1, block=0)

    repaired = route.post(proxy.url, key, messages, stream, {})
    assert route.answer(repaired, stream)["content"] == [{"type": "text", "text": ANSWER}]
    sent = fake.last(route.suffix).doc["messages"][1]["content"]
    assert json.dumps(sent[0]) == json.dumps(issued[0])  # byte for byte, as issued
    assert sent[1:] == turn["content"][1:]
    (repair,) = events(proxy_state, "repaired", tool_ids(turn)[0])
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("restored", "messages[1].content[0]", ["thinking"])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("route", [ROUTES[0], ROUTES[3]], ids=lambda r: r.name)
def test_with_redacted_thinking_asked_for_the_empty_text_goes_as_sent(
    fake: FakeProvider, proxy: MitmdumpProcess, route: Route, stream: bool
) -> None:
    betas = {"anthropic-beta": f"interleaved-thinking-2025-05-14,{REDACT_THINKING_BETA}"}
    key = api_key_for(route)
    turn = first_turn(route, proxy, key, stream, **betas)
    messages = [QUESTION, sent_back(turn, emptied), results(turn)]
    response = route.post(proxy.url, key, messages, stream, betas)
    assert route.answer(response, stream)["content"] == [{"type": "text", "text": ANSWER}]
    assert fake.last(route.suffix).doc["messages"][1] == sent_back(turn, emptied)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_thinking_text_issued_empty_is_no_evidence(fake: FakeProvider, proxy: MitmdumpProcess, stream: bool) -> None:
    """Claude 5 answers with empty thinking unless asked for `display: "summarized"`: the block goes back as sent."""
    route, key = ROUTES[0], api_key_for(ROUTES[0])
    turn = first_turn(route, proxy, key, stream, **{"x-fake-display": "omitted"})
    assert [b["thinking"] for b in turn["content"] if b["type"] == "thinking"] == [""]
    body = json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 4096,
            "thinking": THINKING,
            "tools": TOOLS,
            "messages": [QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)],
        },
        indent=1,  # spacing no serialiser of ours writes
    ).encode()
    headers = {"x-api-key": key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    response = httpx.post(f"{proxy.url}/v1/messages", content=body, headers=headers, timeout=30)
    assert response.json()["content"] == [{"type": "text", "text": ANSWER}]
    assert fake.last("/v1/messages").body == body


# the signature dropped ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.name)
def test_a_thinking_block_saved_without_its_signature_is_signed_again(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, route: Route, stream: bool
) -> None:
    key = api_key_for(route)
    turn = first_turn(route, proxy, key, stream)
    issued = [b for b in turn["content"] if b["type"] == "thinking"]
    messages = [QUESTION, sent_back(turn, unsigned), results(turn)]
    direct = route.post(fake.url, key, messages, False, {})
    assert route.refusal(direct) == SIGNATURE_REQUIRED.format(index=1, block=0)

    repaired = route.post(proxy.url, key, messages, stream, {})
    assert route.answer(repaired, stream)["content"] == [{"type": "text", "text": ANSWER}]
    assert json.dumps(fake.last(route.suffix).doc["messages"][1]["content"][0]) == json.dumps(issued[0])
    (repair,) = events(proxy_state, "repaired", tool_ids(turn)[0])
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("restored", "messages[1].content[0]", ["signature"])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_resumed_session_with_an_unsigned_earlier_turn_is_signed_again(
    fake: FakeProvider, proxy: MitmdumpProcess, stream: bool
) -> None:
    """The session was saved without signatures and resumed with a new prompt: the old turn's block is refused
    wherever it is, and put back from the capture of its tool call."""
    route, key = ROUTES[0], api_key_for(ROUTES[0])
    turn = first_turn(route, proxy, key, stream)
    messages = [QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)]
    final = route.answer(route.post(proxy.url, key, messages, stream, {}), stream)
    resumed = [QUESTION, sent_back(turn, unsigned), results(turn), {"role": "assistant", "content": final["content"]}]
    resumed.append({"role": "user", "content": "And the other directory?"})
    assert route.refusal(route.post(fake.url, key, resumed, False, {})) == SIGNATURE_REQUIRED.format(index=1, block=0)

    response = route.post(proxy.url, key, resumed, stream, {})
    assert route.answer(response, stream)["content"][-1]["type"] == "tool_use"  # a new tool turn
    sent = fake.last("/v1/messages").doc["messages"]
    assert sent[1]["content"] == turn["content"]


# Bedrock Converse --------------------------------------------------------------------------------------------------
def converse_mangled(content: list[dict], mangle: str) -> dict:
    mangled = copy.deepcopy(content)
    for block in mangled:
        text = block.get("reasoningContent", {}).get("reasoningText")
        if text is not None and mangle == "emptied":
            text["text"] = ""
        elif text is not None:
            del text["signature"]
    return {"role": "assistant", "content": mangled}


@pytest.mark.parametrize("mangle", ["emptied", "unsigned"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_converse_reasoning_sent_back_mangled_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, stream: bool, mangle: str
) -> None:
    client = Client(fake)
    action = "converse-stream" if stream else "converse"
    content = converse_answer(client.post(proxy.url, action, converse([converse_question()])), stream=stream)
    messages = [converse_question(), converse_mangled(content, mangle), converse_results(content)]
    refused = client.post(fake.url, "converse", converse(messages))
    expected = MODIFIED if mangle == "emptied" else SIGNATURE_REQUIRED
    assert refused.status_code == 400 and refused.json()["message"] == MODEL_ERRORS + expected.format(index=1, block=0)

    repaired = client.post(proxy.url, action, converse(messages))
    assert "".join(b.get("text", "") for b in converse_answer(repaired, stream=stream)) == ANSWER
    assert fake.last("/converse").doc["messages"][1]["content"] == content
    (repair,) = events(proxy_state, "repaired", uses_of(content)[0])
    field = "text" if mangle == "emptied" else "signature"
    assert [(a["kind"], a["fields"]) for a in repair["actions"]] == [
        ("restored", [f"reasoningContent.reasoningText.{field}"])
    ]
