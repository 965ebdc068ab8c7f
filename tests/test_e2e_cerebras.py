"""End to end: the proxy never adds a field the target did not issue. Cerebras (`Cerebras` in tests/support/fake_chat.py) refuses
any `reasoning_content` in a request; a conversation there, or one that moves there from DeepSeek, reaches it as the
client sent it, and the refusal a client brings on itself is diagnosed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_chat import FINAL_ANSWER
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import TOOLS, client, first_turn, history_as_sent

pytestmark = pytest.mark.e2e
MODEL = "zai-glm-4.7"
PATH = "/cerebras/v1"


def body_of(messages: list[dict]) -> bytes:
    """Turn 2 as bytes of the test's own making (odd spacing: a re-serialised body would differ)."""
    return json.dumps({"messages": messages, "model": MODEL, "tools": TOOLS}, indent=1).encode()


def post(base_url: str, api_key: str, body: bytes) -> httpx.Response:
    headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
    return httpx.post(f"{base_url}{PATH}/chat/completions", content=body, headers=headers, timeout=30)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("keep", [True, False], ids=["reasoning-kept", "reasoning-dropped"])
def test_a_host_that_never_returned_reasoning_content_never_gets_one(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, keep: bool
) -> None:
    tail = LogTail(proxy_state / "events.jsonl")
    turn = first_turn(client(proxy.url, api_key, path=PATH, parallel="2"), MODEL, stream=stream)
    assert turn["reasoning"].startswith("The user wants a listing") and "reasoning_content" not in turn
    messages = history_as_sent(turn, drop=() if keep else ("reasoning",), content=None)
    assert ("reasoning" in messages[1]) is keep

    reply = post(proxy.url, api_key, body_of(messages))
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == FINAL_ANSWER
    assert fake.last(f"{PATH}/chat/completions").body == body_of(messages)
    assert not tail.events("repaired") and not tail.events("captured")  # nothing to keep, nothing to put back


def test_reasoning_content_another_model_issued_is_not_carried_to_cerebras(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """A conversation begun on DeepSeek's thinking mode (which issued reasoning_content, and whose next turn the proxy
    would give it back) goes on on Cerebras: the client dropped reasoning_content, and the proxy adds none."""
    turn = first_turn(client(proxy.url, api_key), "deepseek-reasoner", stream=True)
    assert turn["reasoning_content"]
    messages = history_as_sent(turn, drop=("reasoning_content",), content=None)
    with pytest.raises(openai.BadRequestError, match="Missing `reasoning_content` field"):  # DeepSeek wants it back
        client(fake.url, api_key).chat.completions.create(model="deepseek-reasoner", messages=messages, tools=TOOLS)

    reply = post(proxy.url, api_key, body_of(messages))
    assert reply.status_code == 200, reply.text
    assert fake.last(f"{PATH}/chat/completions").body == body_of(messages)


def test_a_client_that_sends_reasoning_content_is_refused_as_cerebras_words_it_and_told_why(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    turn = first_turn(client(proxy.url, api_key, path=PATH), MODEL, stream=False)
    messages = history_as_sent(turn, drop=(), content=None)
    messages[1]["reasoning_content"] = messages[1].pop("reasoning")  # an OpenAI-compatible client's name for it
    text = "messages.1.assistant.reasoning_content: property 'messages.1.assistant.reasoning_content' is unsupported"
    direct = post(fake.url, api_key, body_of(messages))
    assert direct.status_code == 400 and direct.json() == {
        "message": text,
        "type": "invalid_request_error",
        "param": "validation_error",
        "code": "wrong_api_format",
    }

    tail = LogTail(proxy_state / "events.jsonl")
    with pytest.raises(openai.BadRequestError):
        client(proxy.url, api_key, path=PATH).chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    assert fake.last(f"{PATH}/chat/completions").doc["messages"] == messages  # left as the client sent it
    (diagnosed,) = tail.wait_for("diagnosed")
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["location"]) == (
        "reasoning_content_unsupported",
        "cerebras",
        "messages[1]",
    )
    assert diagnosed["message"] == text and "the proxy never adds it" in diagnosed["advice"]
