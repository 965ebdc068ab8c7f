"""End to end: httpx sending what the Anthropic SDK's Vertex client sends, a real mitmdump with the addon, and the
fake Claude on Vertex AI.

The route names the model (`…/publishers/anthropic/models/{model}:rawPredict`, `:streamRawPredict` for a stream) and
the body carries `anthropic_version: vertex-2023-10-16` and no `model`: the proxy must claim it, take the model from
the path, and change nothing else.
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
from tests.test_e2e_anthropic import (
    MISSING_THINKING,
    QUESTION,
    THINKING,
    TOOLS,
    answer_text,
    as_json,
    error_message,
    reply,
    results,
    tool_ids,
    without_thinking,
)

pytestmark = pytest.mark.e2e

MODEL = "claude-sonnet-4-5@20250929"
ROUTE = f"/v1/projects/demo-project/locations/us-east5/publishers/anthropic/models/{MODEL}"
ANSWER = "The directory holds two files."


def post(base_url: str, token: str, body: dict[str, Any] | bytes, **fake: str) -> httpx.Response:
    """As AnthropicVertex posts: a bearer token, the model in the path, the method by `stream`."""
    doc = json.loads(body) if isinstance(body, bytes) else body
    method = "streamRawPredict" if doc.get("stream") else "rawPredict"
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}{ROUTE}:{method}", content=content, headers=headers, timeout=30)


def request(messages: list[dict], *, stream: bool) -> dict[str, Any]:
    body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 4096, "thinking": THINKING, "tools": TOOLS}
    return body | {"messages": messages} | ({"stream": True} if stream else {})


def concerns(tool_call_id: str):
    return lambda event: event.get("wire_format") == "anthropic_messages" and tool_call_id in json.dumps(event)


@pytest.mark.parametrize("stream", [False, True], ids=["rawPredict", "streamRawPredict"])
def test_turn_two_gets_its_thinking_block_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    first = post(proxy.url, api_key, request([QUESTION], stream=stream), parallel="2")
    turn = reply(first, stream=stream)
    ids = tool_ids(turn)
    issued = fake.vertex_anthropic.issued[ids[0]]
    assert first.content == bytes(fake.requests[-1].sent)  # the client got the answer untouched

    messages = [QUESTION, without_thinking(turn), results(turn)]
    direct = post(fake.url, api_key, request(messages, stream=stream))
    assert error_message(direct) == MISSING_THINKING.format(found="tool_use")
    assert direct.json()["request_id"].startswith("req_vrtx_")

    repaired = post(proxy.url, api_key, request(messages, stream=stream))
    assert answer_text(reply(repaired, stream=stream)) == ANSWER
    sent = fake.vertex_anthropic.bodies[-1]
    assert as_json(sent["messages"][1]["content"]) == as_json(issued + without_thinking(turn)["content"])
    assert "model" not in sent and sent["anthropic_version"] == "vertex-2023-10-16"

    log = LogTail(proxy_state / "events.jsonl", whole=True)
    (captured,) = log.wait_for("captured", where=concerns(ids[0]))
    assert (captured["request_model"], captured["stored"], captured["streamed"]) == (MODEL, True, stream)
    (repair,) = log.wait_for("repaired", where=concerns(ids[0]))
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("inserted", "messages[1].content[1]", ["thinking"])
    ]


def test_a_request_that_needs_nothing_reaches_vertex_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False)), stream=False)
    history = [QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)]
    body = json.dumps(request(history, stream=False), indent=1, ensure_ascii=True).encode()
    assert answer_text(reply(post(proxy.url, api_key, body), stream=False)) == ANSWER
    assert fake.requests[-1].body == body


@pytest.fixture(scope="module")
def recorded(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Turn 1 streamed, then the forgetful turn 2, through a proxy with repair off written with `-w`."""
    folder = tmp_path_factory.mktemp("vertex-anthropic")
    flows, log = folder / "session.mitm", folder / "events.jsonl"
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    with MitmdumpProcess(*args, "--set", "llm_repair=false", "-w", str(flows), confdir=confdir) as proxy:
        token, tail = "ya29.vertex-offline-check", LogTail(log)
        turn = reply(post(proxy.url, token, request([QUESTION], stream=True)), stream=True)
        refused = post(proxy.url, token, request([QUESTION, without_thinking(turn), results(turn)], stream=False))
        assert error_message(refused) == MISSING_THINKING.format(found="tool_use")
        (diagnosed,) = tail.wait_for("diagnosed")
    return {"flows": flows, "call": tool_ids(turn)[0], "diagnosed": diagnosed, "folder": folder}


@pytest.mark.slow
def test_the_400_is_diagnosed(recorded: dict[str, Any]) -> None:
    diagnosed, call = recorded["diagnosed"], recorded["call"]
    assert (diagnosed["rule"], diagnosed["provider"]) == ("anthropic_thinking_expected", "anthropic")
    assert (diagnosed["location"], diagnosed["tool_call_ids"]) == ("messages[1]", [call])
    assert diagnosed["cache_had"] is True  # captured under the model the path named
    assert "would have inserted thinking before messages[1].content[1]" in diagnosed["advice"]


@pytest.mark.slow
def test_the_offline_check_finds_the_dropped_thinking(recorded: dict[str, Any]) -> None:
    result = cli("check", "--no-diff", str(recorded["flows"]))
    report, call = result.stdout, recorded["call"]
    assert result.returncode == 0, report + result.stderr
    first, second = report.split("Tool-call chain:")[0].split("\n#")[0:2]
    assert f"{ROUTE}:streamRawPredict  [anthropic_messages, model {MODEL}] -> HTTP 200" in first
    assert "the provider answered: anthropic_thinking_expected" in second
    assert "- messages[1].content[0]: the final assistant message must start with a thinking block" in second
    assert f"inserted thinking before messages[1].content[1] (tool call {call})" in second
    assert "2 LLM request(s); 1 would fail as sent (#2); 0 would still fail through the proxy." in report


@pytest.mark.slow
def test_export_replays_to_the_same_repairs(recorded: dict[str, Any]) -> None:
    out = recorded["folder"] / "fixture"
    result = cli("export", str(recorded["flows"]), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    fixtures = read_fixture_dir(out)
    assert [f.response.status for f in fixtures] == [200, 400]
    assert fixtures[1].expect.repairs == [
        f"inserted thinking before messages[1].content[1] (tool call {recorded['call']})"
    ]
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
