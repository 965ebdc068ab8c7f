"""End to end: httpx as an Anthropic Messages client of DeepSeek's Anthropic-compatible API, a real mitmdump with the
addon, and the fake DeepSeek /anthropic route.

There thinking is on when the request does not say, every assistant turn with tool use must carry its thinking back,
and Anthropic's redacted_thinking block is refused whole: the requests below send no `thinking` field, as clients
of DeepSeek's route do.
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
from tests.support.fake_anthropic import THINKING_MISSING
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli as cli
from tests.support.proxy import MitmdumpProcess
from tests.test_e2e_anthropic import QUESTION, TOOLS, answer_text, as_json, reply, results, tool_ids, without_thinking

pytestmark = pytest.mark.e2e

MODEL = "deepseek-v4-pro"
PATH = "/anthropic/v1/messages"
ANSWER = "The directory holds two files."
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIw"}


def post(base_url: str, api_key: str, body: dict[str, Any] | bytes, **fake: str) -> httpx.Response:
    headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}{PATH}", content=content, headers=headers, timeout=30)


def request(messages: list[dict], *, stream: bool, **extra: Any) -> dict[str, Any]:
    """A request with no `thinking` field: DeepSeek thinks by default."""
    body = {"model": MODEL, "max_tokens": 4096, "tools": TOOLS, "messages": messages, **extra}
    return body | ({"stream": True} if stream else {})


def error_message(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text
    return response.json()["error"]["message"]


def concerns(tool_call_id: str):
    return lambda event: event.get("wire_format") == "anthropic_messages" and tool_call_id in json.dumps(event)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_every_tool_turn_gets_its_thinking_back_without_a_thinking_field(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    messages: list[dict] = [QUESTION]
    turns = []
    for _ in range(2):  # two tool turns, the client dropping the thinking each time
        turn = reply(post(proxy.url, api_key, request(messages, stream=stream), steps="2"), stream=stream)
        assert tool_ids(turn) and turn["content"][0]["type"] == "thinking"
        turns.append(turn)
        messages += [without_thinking(turn), results(turn)]
    (first,) = fake.deepseek_anthropic.issued[tool_ids(turns[0])[0]]
    assert first["signature"] == turns[0]["id"]  # DeepSeek signs with the message id
    assert "thinking" not in fake.last(PATH).doc

    assert error_message(post(fake.url, api_key, request(messages, stream=stream), steps="2")) == THINKING_MISSING
    final = post(proxy.url, api_key, request(messages, stream=stream), steps="2")
    assert answer_text(reply(final, stream=stream)) == ANSWER
    sent = fake.last(PATH).doc
    # As the answer carried it: whole, with its signature; streamed, DeepSeek sends none and none is made up.
    for index, turn in ((1, turns[0]), (3, turns[1])):
        thinking = turn["content"][0]
        expected = thinking if not stream else {"type": "thinking", "thinking": thinking["thinking"]}
        assert as_json(sent["messages"][index]["content"][:1]) == as_json([expected])
    assert "thinking" not in sent  # nothing the client did not send

    log = LogTail(proxy_state / "events.jsonl", whole=True)
    # The second request had messages[1] put back already: the log lists a repair once a conversation, then counts.
    (repair,) = log.wait_for("repaired", where=concerns(tool_ids(turns[1])[0]))
    assert [(a["kind"], a["location"]) for a in repair["actions"]] == [("inserted", "messages[3].content[1]")]
    assert (repair["again"], repair["total"]) == (1, 2)


def test_a_redacted_block_from_a_claude_turn_never_reaches_deepseek(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """A conversation begun on Claude goes on with DeepSeek: Claude's redacted_thinking would have it refused."""
    claude_turn = {"role": "assistant", "content": [REDACTED, {"type": "text", "text": "Hello."}]}
    messages = [{"role": "user", "content": "Hi"}, claude_turn, QUESTION]
    direct = post(fake.url, api_key, request(messages, stream=False))
    assert "unknown variant `redacted_thinking`" in error_message(direct, 422)

    turn = reply(post(proxy.url, api_key, request(messages, stream=False)), stream=False)
    assert tool_ids(turn)
    assert fake.last(PATH).doc["messages"][1]["content"] == [{"type": "text", "text": "Hello."}]
    (repair,) = LogTail(proxy_state / "events.jsonl", whole=True).wait_for(
        "repaired", where=lambda e: e.get("url", "").endswith(PATH) and "redacted_thinking" in json.dumps(e)
    )
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("foreign_removed", "messages[1].content[0]", ["redacted_thinking"])
    ]


def test_thinking_turned_off_reaches_deepseek_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    off = {"thinking": {"type": "disabled"}}
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False, **off)), stream=False)
    assert [b["type"] for b in turn["content"]] == ["tool_use"]
    body = json.dumps(
        request([QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)], stream=False, **off),
        indent=1,
        ensure_ascii=True,
    ).encode()
    assert answer_text(reply(post(proxy.url, api_key, body), stream=False)) == ANSWER
    assert fake.last(PATH).body == body


@pytest.fixture(scope="module")
def recorded(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Turn 1 streamed, then the forgetful turn 2, through a proxy with repair off written with `-w`."""
    folder = tmp_path_factory.mktemp("deepseek-anthropic")
    flows, log = folder / "session.mitm", folder / "events.jsonl"
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    with MitmdumpProcess(*args, "--set", "llm_repair=false", "-w", str(flows), confdir=confdir) as proxy:
        key, tail = "sk-deepseek-offline-check", LogTail(log)
        turn = reply(post(proxy.url, key, request([QUESTION], stream=True)), stream=True)
        refused = post(proxy.url, key, request([QUESTION, without_thinking(turn), results(turn)], stream=False))
        assert error_message(refused) == THINKING_MISSING
        (diagnosed,) = tail.wait_for("diagnosed")
    return {"flows": flows, "call": tool_ids(turn)[0], "diagnosed": diagnosed, "folder": folder}


@pytest.mark.slow
def test_the_400_is_diagnosed_as_deepseeks(recorded: dict[str, Any]) -> None:
    diagnosed, call = recorded["diagnosed"], recorded["call"]
    assert (diagnosed["rule"], diagnosed["provider"]) == ("deepseek_thinking_missing", "deepseek")
    assert diagnosed["location"] == "messages[1]" and diagnosed["tool_call_ids"] == [call]  # found by the check
    assert diagnosed["findings"] == [
        f"messages[1]: assistant message with tool use and no thinking block (DeepSeek's Anthropic-compatible API "
        f"wants every turn's back) (tool call {call})"
    ]
    assert "would have inserted thinking before messages[1].content[1]" in diagnosed["advice"]


@pytest.mark.slow
def test_the_offline_check_finds_the_dropped_thinking(recorded: dict[str, Any]) -> None:
    result = cli("check", "--no-diff", str(recorded["flows"]))
    report, call = result.stdout, recorded["call"]
    assert result.returncode == 0, report + result.stderr
    first, second = report.split("Tool-call chain:")[0].split("\n#")[0:2]
    assert f"[anthropic_messages, model {MODEL}] -> HTTP 200" in first and "reasoning captured: thinking" in first
    assert "-> HTTP 400" in second and "the provider answered: deepseek_thinking_missing" in second
    assert f"inserted thinking before messages[1].content[1] (tool call {call})" in second
    assert "after repair: breaks no known rule" in second
    assert "2 LLM request(s); 1 would fail as sent (#2); 0 would still fail through the proxy." in report


@pytest.mark.slow
def test_export_replays_to_the_same_repairs(recorded: dict[str, Any]) -> None:
    out = recorded["folder"] / "fixture"
    result = cli("export", str(recorded["flows"]), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    fixtures = read_fixture_dir(out)
    assert [f.response.status for f in fixtures] == [200, 400]
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
    assert fixtures[1].expect.repairs == [
        f"inserted thinking before messages[1].content[1] (tool call {recorded['call']})"
    ]
