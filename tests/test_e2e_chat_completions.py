"""End to end: the openai SDK, a real mitmdump with the addon, and a fake provider with real rules."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_copilot_gemini3_turn_two_is_repaired(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool, parallel: str
) -> None:
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key, parallel=parallel)
    turn = first_turn(proxied, model, stream=stream)
    ids = [c["id"] for c in turn["tool_calls"]]
    assert len(ids) == int(parallel)
    issued = fake.issued[ids[0]]
    assert turn["reasoning_opaque"] == issued["reasoning_opaque"]  # the client got the stream untouched

    # Zed drops reasoning_opaque and sends content: [] ...
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=[])
    direct = client(fake.url, api_key)
    with pytest.raises(openai.BadRequestError, match="invalid request body"):
        second_turn(direct, model, messages, stream=stream)
    # ... and with content fixed, Copilot passes on Vertex's complaint about the signature.
    fixed_content = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    with pytest.raises(openai.BadRequestError, match=r"in the 2\. content block is missing a `thought_signature`"):
        second_turn(direct, model, fixed_content, stream=stream)

    answer = second_turn(proxied, model, messages, stream=stream)
    assert answer == "The directory holds two files."
    sent = fake.last().doc["messages"][1]
    assert sent["reasoning_opaque"] == issued["reasoning_opaque"]
    assert sent["reasoning_text"] == issued["reasoning_text"]
    assert sent["content"] is None
    assert [c["id"] for c in sent["tool_calls"]] == ids


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_deepseek_reasoning_content_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool
) -> None:
    model = "deepseek-v4-flash"
    proxied = client(proxy.url, api_key, parallel="2")
    turn = first_turn(proxied, model, stream=stream)
    issued = fake.issued[turn["tool_calls"][0]["id"]]
    messages = history_as_sent(turn, drop=("reasoning_content",), content="")
    with pytest.raises(
        openai.BadRequestError, match=r"Missing `reasoning_content` field in the assistant message at message index 1\."
    ):
        second_turn(client(fake.url, api_key), model, messages, stream=stream)

    assert second_turn(proxied, model, messages, stream=stream) == "The directory holds two files."
    assert fake.last().doc["messages"][1]["reasoning_content"] == issued["reasoning_content"]


def test_split_assistant_messages_are_merged(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """CodeCompanion-style history: the text and the tool calls of one answer as two messages."""
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key, content="I will look.")
    turn = first_turn(proxied, model, stream=True)
    question, assistant, *results = history_as_sent(turn, drop=(), content=None)
    text_part = {
        "role": "assistant",
        "content": "I will look.",
        "reasoning_text": assistant["reasoning_text"],
        "reasoning_opaque": assistant["reasoning_opaque"],
    }
    calls_part = {"role": "assistant", "content": None, "tool_calls": assistant["tool_calls"]}
    messages = [question, text_part, calls_part, *results]
    with pytest.raises(openai.BadRequestError, match="missing a `thought_signature`"):
        second_turn(client(fake.url, api_key), model, messages, stream=False)

    assert second_turn(proxied, model, messages, stream=False) == "The directory holds two files."
    sent = fake.last().doc["messages"]
    assert len(sent) == len(messages) - 1
    assert sent[1]["content"] == "I will look."
    assert sent[1]["reasoning_opaque"] == fake.issued[assistant["tool_calls"][0]["id"]]["reasoning_opaque"]
    assert sent[1]["tool_calls"] == assistant["tool_calls"]


def test_value_the_client_sent_is_never_overwritten(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key)
    turn = first_turn(proxied, model, stream=False)
    messages = history_as_sent(turn, drop=(), content=None)
    messages[1]["reasoning_opaque"] = "client-chosen-value"
    with pytest.raises(openai.BadRequestError, match="Thought signature is not valid"):
        second_turn(proxied, model, messages, stream=False)
    assert fake.last().doc["messages"][1]["reasoning_opaque"] == "client-chosen-value"


def test_each_repair_is_logged_once_per_conversation_then_counted(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """A Zed-style session of 4 turns: from turn 3 on, each turn needs the earlier turns' repairs again, and its
    `repaired` event lists only the newest message's, counting the others."""
    model = "gemini-3-pro-preview"
    log = LogTail(proxy_state / "events.jsonl")
    since = len(proxy.lines)
    proxied = client(proxy.url, api_key, steps="4")
    messages: list[dict] = [{"role": "user", "content": "Walk the tree."}]
    ids: list[str] = []
    for turn in range(1, 5):
        reply = proxied.chat.completions.create(model=model, messages=messages, tools=[]).choices[0].message
        assert reply.tool_calls, f"turn {turn} should call a tool"
        ids.append(reply.tool_calls[0].id)
        messages.append({"role": "assistant", "content": [], "tool_calls": [c.model_dump() for c in reply.tool_calls]})
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in reply.tool_calls]

    def ours(event: dict) -> bool:
        return any(action.get("tool_call_id") in ids for action in event["actions"])

    repaired = log.wait_for("repaired", 3, where=ours)
    assert len(repaired) == 3  # turns 2, 3 and 4
    for turn, event in enumerate(repaired, start=2):
        newest = f"messages[{2 * turn - 3}]"
        assert [(a["kind"], a["location"], a.get("tool_call_id")) for a in event["actions"]] == [
            ("content_null", newest, None),
            ("restored", newest, ids[turn - 2]),
        ]
        assert sorted(event["actions"][1]["fields"]) == ["reasoning_opaque", "reasoning_text"]
        earlier = turn - 2
        assert event["again"] == 2 * earlier and event["total"] == 2 * (turn - 1)
        assert event["again_by_kind"] == ({"content_null": earlier, "restored": earlier} if earlier else {})
    line = proxy.wait_for_line(f"(tool call {ids[2]}); 4 earlier repairs again", since=since)
    assert "llm repaired " in line and "content [] -> null on messages[5]; restored reasoning_" in line
    # Every turn was repaired in full all the same: the provider has each opaque back, on every message.
    sent = fake.last().doc["messages"]
    assert [m["reasoning_opaque"] for m in sent if m.get("tool_calls")] == [
        fake.issued[i]["reasoning_opaque"] for i in ids[:3]
    ]


def test_multi_step_tool_loop(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """Three tool turns in a row, the client dropping the opaque each time."""
    model = "gemini-3-pro-preview"
    proxied = client(proxy.url, api_key, steps="3")
    messages = [{"role": "user", "content": "Walk the tree."}]
    for step in range(3):
        reply = proxied.chat.completions.create(model=model, messages=messages, tools=[]).choices[0].message
        assert reply.tool_calls, f"step {step} should call a tool"
        messages.append({"role": "assistant", "content": [], "tool_calls": [c.model_dump() for c in reply.tool_calls]})
        messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in reply.tool_calls]
    final = proxied.chat.completions.create(model=model, messages=messages).choices[0].message
    assert final.content == "The directory holds two files."
    sent = fake.last().doc["messages"]
    for message in sent:
        if message.get("tool_calls"):
            assert message["reasoning_opaque"] == fake.issued[message["tool_calls"][0]["id"]]["reasoning_opaque"]
