"""End to end: httpx as a Mistral chat completions client, a real mitmdump with the addon, and the fake Mistral.

Magistral's thinking comes as chunks of the assistant message's content; an OpenAI-style client keeps only the text
and the tool calls. Mistral answers that anyway, without the model's earlier reasoning: the fake says so in its
`x-fake-degraded` header, and through the proxy the thinking is back where Mistral put it. A client that sends
another provider's reasoning field gets Mistral's 422, which the proxy names and the offline check finds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.cli import load_flows
from llm_reasoning_proxy.offline.fixtures import read_fixture_dir

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli as cli
from tests.support.proxy import MitmdumpProcess

pytestmark = pytest.mark.e2e

MODEL = "magistral-medium-latest"
PATH = "/mistral/v1/chat/completions"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "list_directory",
            "description": "List the files in a directory.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
ANSWER = "The directory holds two files."


def post(base_url: str, api_key: str, body: dict[str, Any] | bytes, **fake: str) -> httpx.Response:
    headers = {"authorization": f"Bearer {api_key}", "content-type": "application/json"}
    headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}{PATH}", content=content, headers=headers, timeout=30)


def request(messages: list[dict], *, stream: bool) -> dict[str, Any]:
    return {"model": MODEL, "messages": messages, "tools": TOOLS} | ({"stream": True} if stream else {})


def assembled(text: str) -> dict[str, Any]:
    """The assistant message a client builds from a Magistral stream: thinking pieces into one chunk, answer text,
    tool calls."""
    thinking, answer, calls = [], [], []
    for line in text.splitlines():
        if not line.startswith("data: {"):
            continue
        delta = json.loads(line[len("data: ") :])["choices"][0]["delta"]
        content = delta.get("content")
        if isinstance(content, list):
            thinking += [part["text"] for chunk in content for part in chunk["thinking"]]
        elif content:
            answer.append(content)
        calls += delta.get("tool_calls") or []
    chunk = {"type": "thinking", "thinking": [{"type": "text", "text": "".join(thinking)}]}
    text_chunks = [{"type": "text", "text": "".join(answer)}] if answer else []
    return {"role": "assistant", "content": [chunk, *text_chunks], "tool_calls": calls or None}


def reply(response: httpx.Response, *, stream: bool) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return assembled(response.text) if stream else response.json()["choices"][0]["message"]


def answer_text(message: dict[str, Any]) -> str:
    return "".join(chunk["text"] for chunk in message["content"] if chunk["type"] == "text")


def as_openai_client_sends(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn and its tool results as an OpenAI-style client sends them back: text and tool calls, no thinking."""
    text = answer_text(message) or None
    calls = [{k: call[k] for k in ("id", "type", "function")} for call in message["tool_calls"]]
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "a.txt\nb.txt"} for call in calls]
    return [{"role": "assistant", "content": text, "tool_calls": calls}, *results]


def concerns(tool_call_id: str):
    return lambda event: tool_call_id in json.dumps(event)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_turn_two_gets_its_thinking_chunk_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, parallel: str
) -> None:
    first = post(proxy.url, api_key, request([QUESTION], stream=stream), parallel=parallel, content="I will look.")
    turn = reply(first, stream=stream)
    assert first.content == bytes(fake.last(PATH).sent)  # the client got the answer untouched
    ids = [call["id"] for call in turn["tool_calls"]]
    issued = fake.mistral.issued[ids[0]]["thinking"]  # the thinking chunk issued with the calls
    assert len(ids) == int(parallel) and turn["content"][0] == issued

    messages = [QUESTION, *as_openai_client_sends(turn)]
    direct = post(fake.url, api_key, request(messages, stream=stream))
    assert direct.status_code == 200 and direct.headers["x-fake-degraded"] == "thinking-dropped"

    repaired = post(proxy.url, api_key, request(messages, stream=stream))
    assert answer_text(reply(repaired, stream=stream)) == ANSWER
    assert "x-fake-degraded" not in repaired.headers
    sent = fake.last(PATH).doc["messages"][1]
    assert sent["content"] == [issued, {"type": "text", "text": "I will look."}]
    assert set(sent) == {"role", "content", "tool_calls"}  # no field Mistral would refuse

    log = LogTail(proxy_state / "events.jsonl", whole=True)
    (captured,) = log.wait_for("captured", where=concerns(ids[0]))
    assert [call["id"] for call in captured["tool_calls"]] == ids
    # Readable text, logged as such (the chunks' JSON).
    assert json.dumps(issued["thinking"][0]["text"], ensure_ascii=False) in captured["fields"]["thinking"]["text"]
    assert (captured["streamed"], captured["stored"], captured["request_model"]) == (stream, True, MODEL)
    (repair,) = log.wait_for("repaired", where=concerns(ids[0]))
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("restored", "messages[1]", ["thinking"])
    ]


def test_a_request_that_kept_its_thinking_reaches_mistral_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False)), stream=False)
    calls = [{k: call[k] for k in ("id", "type", "function")} for call in turn["tool_calls"]]
    kept = {"role": "assistant", "content": turn["content"], "tool_calls": calls}
    results = [{"role": "tool", "tool_call_id": call["id"], "content": "a.txt"} for call in calls]
    # Spacing and escapes no serialiser of ours would produce: any re-encoding would show.
    body = json.dumps(request([QUESTION, kept, *results], stream=False), indent=1, ensure_ascii=True).encode()
    response = post(proxy.url, api_key, body)
    assert answer_text(reply(response, stream=False)) == ANSWER and "x-fake-degraded" not in response.headers
    assert fake.last(PATH).body == body


@pytest.fixture(scope="module")
def recorded(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A session through a proxy with repair off, written with `-w`: turn 1, the forgetful turn 2 (answered, the
    reasoning lost), and a turn 2 that carries reasoning_content (refused)."""
    folder = tmp_path_factory.mktemp("mistral")
    flows, log = folder / "session.mitm", folder / "events.jsonl"
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    with MitmdumpProcess(*args, "--set", "llm_repair=false", "-w", str(flows), confdir=confdir) as proxy:
        key, tail = "sk-mistral-offline-check", LogTail(log)
        turn = reply(post(proxy.url, key, request([QUESTION], stream=True)), stream=True)
        messages = [QUESTION, *as_openai_client_sends(turn)]
        forgetful = post(proxy.url, key, request(messages, stream=False))
        assert forgetful.headers["x-fake-degraded"] == "thinking-dropped"
        messages[1]["reasoning_content"] = turn["content"][0]["thinking"][0]["text"]  # stored as DeepSeek's field
        refused = post(proxy.url, key, request(messages, stream=False))
        assert refused.status_code == 422
        (diagnosed,) = tail.wait_for("diagnosed")
    return {"flows": flows, "call": turn["tool_calls"][0]["id"], "diagnosed": diagnosed, "folder": folder}


@pytest.mark.slow
def test_the_422_for_another_providers_field_is_diagnosed(recorded: dict[str, Any]) -> None:
    diagnosed = recorded["diagnosed"]
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["status"]) == (
        "message_field_not_permitted",
        "mistral",
        422,
    )
    assert (diagnosed["location"], diagnosed["field"]) == ("messages[1]", "reasoning_content")
    assert diagnosed["message"] == "body.messages.1.assistant.reasoning_content: Extra inputs are not permitted"
    assert diagnosed["advice"].startswith("the provider takes no such field on a message")
    assert diagnosed["tool_call_ids"] == [recorded["call"]]


@pytest.mark.slow
def test_the_offline_check_finds_the_dropped_thinking_and_the_refused_field(recorded: dict[str, Any]) -> None:
    result = cli("check", str(recorded["flows"]))
    report, call = result.stdout, recorded["call"]
    first, second, third = report.split("Tool-call chain:")[0].split("\n#")[0:3]
    assert f"[chat_completions, model {MODEL}] -> HTTP 200" in first and "reasoning captured: thinking" in first
    assert f"drops thinking the provider returned (messages[1], tool call {call})" in second
    assert f"restored thinking on messages[1] (tool call {call})" in second
    added = [" ".join(line.split()) for line in second.splitlines() if line.strip().startswith("+ ")]
    assert '+ "content": [' in added and '+ "type": "thinking",' in added  # the chunk goes back into content
    assert "-> HTTP 422" in third and "the provider answered: message_field_not_permitted" in third
    assert "- messages[1]: reasoning_content on an assistant message, which mistral does not take" in third
    assert result.returncode == 1, report  # the refused field is no repair's to make


@pytest.mark.slow
def test_export_replays_to_the_same_repairs(recorded: dict[str, Any]) -> None:
    out = recorded["folder"] / "fixture"
    result = cli("export", str(recorded["flows"]), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    fixtures = read_fixture_dir(out)
    assert [f.response.status for f in fixtures] == [200, 200, 422]
    assert fixtures[1].expect.repairs == [f"restored thinking on messages[1] (tool call {recorded['call']})"]
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
