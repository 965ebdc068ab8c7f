"""End to end: httpx as an Anthropic Messages client of Kimi on Moonshot's Anthropic-compatible API (and of Kimi For
Coding), a real mitmdump with the addon, and the fake Kimi route.

There every assistant turn with tool use must carry its thinking back, in every later request; the request enables
thinking as Claude Code does (kimi-k3 thinks without being asked). Kimi's signatures have a shape of their own,
which must come back byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_anthropic import KIMI_THINKING_MISSING
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.test_e2e_anthropic import (
    QUESTION,
    THINKING,
    TOOLS,
    answer_text,
    as_json,
    reply,
    results,
    tool_ids,
    without_thinking,
)

pytestmark = pytest.mark.e2e

MOONSHOT = "/moonshot/anthropic/v1/messages"  # stands for https://api.moonshot.ai/anthropic/v1/messages
CODING = "/coding/v1/messages"  # stands for https://api.kimi.com/coding/v1/messages
ANSWER = "The directory holds two files."
SYSTEM = "You are a coding agent."
FOLLOW_UP = {"role": "user", "content": "And what is in the other directory?"}


def post(base_url: str, path: str, api_key: str, body: dict[str, Any] | bytes, **fake: str) -> httpx.Response:
    headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}{path}", content=content, headers=headers, timeout=30)


def request(model: str, messages: list[dict], *, stream: bool) -> dict[str, Any]:
    body = {"model": model, "max_tokens": 4096, "system": SYSTEM, "tools": TOOLS, "messages": messages}
    body |= {} if model.startswith("kimi-k3") else {"thinking": THINKING}  # K3 takes no thinking field
    return body | ({"stream": True} if stream else {})


def refusal(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    doc = response.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    return doc["error"]["message"]


def concerns(tool_call_id: str):
    return lambda event: event.get("wire_format") == "anthropic_messages" and tool_call_id in json.dumps(event)


@pytest.mark.parametrize(
    ("path", "model"), [(MOONSHOT, "kimi-k2.6"), (CODING, "kimi-k3")], ids=["moonshot-k2.6", "coding-k3"]
)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_every_tool_turn_gets_its_thinking_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, path: str, model: str
) -> None:
    # A finished tool loop, a new question, another tool turn: the client drops the thinking each time.
    messages: list[dict] = [QUESTION]
    turns = []
    for question in (None, FOLLOW_UP):
        if question is not None:
            messages.append(question)
        turn = reply(post(proxy.url, path, api_key, request(model, messages, stream=stream)), stream=stream)
        assert tool_ids(turn) and turn["content"][0]["type"] == "thinking"
        turns.append(turn)
        messages += [without_thinking(turn), results(turn)]
        if question is None:
            done = reply(post(proxy.url, path, api_key, request(model, messages, stream=stream)), stream=stream)
            messages.append({"role": "assistant", "content": done["content"]})
    # Kimi's signature is of no shape Anthropic's or anyone else's has.
    assert turns[0]["content"][0]["signature"].startswith("kimi.v1:")

    direct = post(fake.url, path, api_key, request(model, messages, stream=stream))
    assert refusal(direct) == KIMI_THINKING_MISSING.format(index=2)  # its own count: the system prompt first
    final = post(proxy.url, path, api_key, request(model, messages, stream=stream))
    assert answer_text(reply(final, stream=stream)) == ANSWER
    sent = fake.last(path).doc
    for index, turn in ((1, turns[0]), (5, turns[1])):  # every turn's, the finished loop's too, as it came
        assert as_json(sent["messages"][index]["content"][:1]) == as_json(turn["content"][:1])

    log = LogTail(proxy_state / "events.jsonl", whole=True)
    (repair,) = log.wait_for("repaired", where=concerns(tool_ids(turns[1])[0]))
    # messages[1] was put back from the second request on: the log lists a repair once a conversation.
    assert [(a["kind"], a["location"]) for a in repair["actions"]] == [("inserted", "messages[5].content[1]")]


def test_an_unsigned_thinking_block_the_client_sends_reaches_kimi_as_sent(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """Kimi takes `signature: ""`: the proxy neither drops it nor puts another signature in its place."""
    turn = reply(post(proxy.url, MOONSHOT, api_key, request("kimi-k2.6", [QUESTION], stream=False)), stream=False)
    unsigned = {**turn["content"][0], "signature": ""}
    sent_back = {"role": "assistant", "content": [unsigned, *turn["content"][1:]]}
    body = json.dumps(request("kimi-k2.6", [QUESTION, sent_back, results(turn)], stream=False)).encode()
    assert answer_text(reply(post(proxy.url, MOONSHOT, api_key, body), stream=False)) == ANSWER
    assert fake.last(MOONSHOT).body == body


def test_thinking_not_asked_for_reaches_kimi_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """Without a `thinking` field kimi-k2.6 answers without thinking, and wants none back."""
    body = {"model": "kimi-k2.6", "max_tokens": 4096, "tools": TOOLS, "messages": [QUESTION]}
    turn = reply(post(proxy.url, MOONSHOT, api_key, body), stream=False)
    assert [b["type"] for b in turn["content"]] == ["tool_use"]
    again = json.dumps({**body, "messages": [QUESTION, {"role": "assistant", "content": turn["content"]},
                                             results(turn)]}).encode()  # fmt: skip
    assert answer_text(reply(post(proxy.url, MOONSHOT, api_key, again), stream=False)) == ANSWER
    assert fake.last(MOONSHOT).body == again
