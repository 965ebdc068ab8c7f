"""End to end over the Responses API: the openai SDK, a real mitmdump with the addon, the fake's rules."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.fake_responses import FINAL_ANSWER
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import client

pytestmark = pytest.mark.e2e
MODEL = "gpt-5"
TOOLS = [
    {
        "type": "function",
        "name": "list_directory",
        "description": "List the files in a directory.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
STATELESS = {"store": False, "include": ["reasoning.encrypted_content"]}


def create(llm: openai.OpenAI, items: list[dict], *, stream: bool, **extra: Any) -> tuple[str, list[dict], str]:
    """One request; the response id, the output items as the client received them, and the answer text."""
    arguments = {"model": MODEL, "input": items, "tools": TOOLS, **STATELESS, **extra}
    if not stream:
        response = llm.responses.create(**arguments)
        return response.id, [item.to_dict() for item in response.output], response.output_text
    done: dict[int, dict] = {}
    text, response_id = [], ""
    for event in llm.responses.create(**arguments, stream=True):
        if event.type == "response.output_item.done":
            done[event.output_index] = event.item.to_dict()  # the copy the SDK tells clients to keep
        elif event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.completed":
            response_id = event.response.id
    return response_id, [done[i] for i in sorted(done)], "".join(text)


def results(items: list[dict]) -> list[dict]:
    return [
        {"type": "function_call_output", "call_id": item["call_id"], "output": "a.txt\nb.txt"}
        for item in items
        if item["type"] == "function_call"
    ]


def without_reasoning(items: list[dict]) -> list[dict]:
    """What a client that drops reasoning items replays of an answer."""
    return [item for item in items if item["type"] != "reasoning"]


def missing_reasoning(item: dict, rs_id: str) -> dict:
    return {
        "message": f"Item '{item['id']}' of type '{item['type']}' was provided without its required 'reasoning' "
        f"item: '{rs_id}'.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def log_events(proxy_state: Path, kind: str, where: Callable[[dict], Any]) -> list[dict]:
    """The events of one kind for which `where` holds, once there is one (LogTail waits up to 60 s)."""
    return LogTail(proxy_state / "events.jsonl", whole=True).wait_for(kind, where=where)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_turn_two_gets_its_reasoning_item_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, parallel: str
) -> None:
    proxied = client(proxy.url, api_key, parallel=parallel)
    response_id, output, _ = create(proxied, [QUESTION], stream=stream)
    reasoning, *calls = output
    assert [item["type"] for item in calls] == ["function_call"] * int(parallel)
    issued = fake.responses.issued[reasoning["id"]]
    assert reasoning == issued.item  # the client got the output_item.done copy untouched
    assert issued.response_id == response_id

    turn_two = [QUESTION, *without_reasoning(output), *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key), turn_two, stream=stream)
    assert refused.value.body == missing_reasoning(calls[0], reasoning["id"])

    _, answer, text = create(proxied, turn_two, stream=stream)
    assert text == FINAL_ANSWER
    sent = fake.last("/responses").doc["input"]
    assert sent == [QUESTION, issued.item, *turn_two[1:]]

    (captured,) = log_events(proxy_state, "captured", lambda e: e.get("response_id") == response_id)
    assert captured["wire_format"] == "openai_responses" and captured["streamed"] is stream
    assert [c["id"] for c in captured["tool_calls"]] == [c["call_id"] for c in calls]
    assert captured["fields"]["id"]["text"] == reasoning["id"]
    assert "text" not in captured["fields"]["encrypted_content"]
    (repaired,) = log_events(
        proxy_state, "repaired", lambda e: any(a.get("response_id") == response_id for a in e["actions"])
    )
    assert [(a["kind"], a["location"], a["tool_call_id"]) for a in repaired["actions"]] == [
        ("inserted", "input[2]", calls[0]["call_id"])
    ]


def test_message_item_with_its_id_gets_its_reasoning_item_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    proxied = client(proxy.url, api_key, content="I will look.")
    _, output, text = create(proxied, [QUESTION], stream=True)
    reasoning, message, call = output
    assert text == "I will look." and message["type"] == "message"
    turn_two = [QUESTION, message, call, *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key), turn_two, stream=False)
    assert refused.value.body == missing_reasoning(message, reasoning["id"])

    assert create(proxied, turn_two, stream=False)[2] == FINAL_ANSWER
    assert fake.last("/responses").doc["input"] == [QUESTION, reasoning, message, call, *results(output)]


def test_multi_step_tool_loop(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """Three tool turns in a row, the client dropping every reasoning item."""
    proxied = client(proxy.url, api_key, steps="3")
    history, kept = [QUESTION], [QUESTION]
    for step in range(3):
        _, output, _ = create(proxied, history, stream=step % 2 == 1)
        assert output[-1]["type"] == "function_call", f"step {step} should call a tool"
        history += [*without_reasoning(output), *results(output)]
        kept += [*output, *results(output)]
    assert create(proxied, history, stream=False)[2] == FINAL_ANSWER
    assert fake.last("/responses").doc["input"] == kept


def test_orphaned_reasoning_item_is_removed(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """A client that kept the reasoning item of a final answer but dropped the answer itself."""
    proxied = client(proxy.url, api_key, steps="0")
    _, (reasoning, message), text = create(proxied, [QUESTION], stream=True)
    assert text == FINAL_ANSWER and message["type"] == "message"
    follow_up = {"role": "user", "content": "And the other directory?"}
    turn_two = [QUESTION, reasoning, follow_up]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key, steps="0"), turn_two, stream=False)
    assert refused.value.body["message"] == (
        f"Item '{reasoning['id']}' of type 'reasoning' was provided without its required following item."
    )

    assert create(proxied, turn_two, stream=False)[2] == FINAL_ANSWER
    assert fake.last("/responses").doc["input"] == [QUESTION, follow_up]


def test_previous_response_id_is_left_alone(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    proxied = client(proxy.url, api_key, parallel="2")
    response_id, output, _ = create(proxied, [QUESTION], stream=True, store=True)

    # Only the new items: the server holds the reasoning item already. Nothing to do, bytes untouched.
    body = json.dumps(
        {"model": MODEL, "input": results(output), "previous_response_id": response_id, "tools": TOOLS}
    ).encode()
    reply = httpx.post(
        f"{proxy.url}/v1/responses", content=body, headers={"authorization": f"Bearer {api_key}"}, timeout=30
    )
    assert reply.status_code == 200 and reply.json()["output"][-1]["content"][0]["text"] == FINAL_ANSWER
    assert fake.last("/responses").body == body

    # A client that re-sends the calls (without their reasoning) along with previous_response_id gets the
    # server's duplicate error for the call: inserting the reasoning item would only change which item it names.
    turn_two = [*without_reasoning(output), *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(proxied, turn_two, stream=False, store=True, previous_response_id=response_id)
    assert refused.value.body["message"] == (
        f"Duplicate item found with id {output[1]['id']}. Remove duplicate items from your input and try again."
    )
    assert fake.last("/responses").doc["input"] == turn_two


def test_reasoning_item_already_in_the_chain_is_a_duplicate(fake: FakeProvider, api_key: str) -> None:
    direct = client(fake.url, api_key)
    response_id, output, _ = create(direct, [QUESTION], stream=False, store=True)
    with pytest.raises(openai.BadRequestError) as refused:
        create(direct, [*output, *results(output)], stream=False, store=True, previous_response_id=response_id)
    assert refused.value.body == {
        "message": f"Duplicate item found with id {output[0]['id']}. Remove duplicate items from your input and "
        "try again.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


def test_request_that_needs_nothing_reaches_the_fake_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    proxied = client(proxy.url, api_key, parallel="2")
    _, output, _ = create(proxied, [QUESTION], stream=True)
    headers = {"authorization": f"Bearer {api_key}"}
    for items in ([QUESTION], [QUESTION, *output, *results(output)]):
        # Odd spacing and key order on purpose: a re-serialised body would differ.
        body = json.dumps({"input": items, "model": MODEL, "tools": TOOLS, **STATELESS}, indent=1).encode()
        reply = httpx.post(f"{proxy.url}/v1/responses", content=body, headers=headers, timeout=30)
        assert reply.status_code == 200
        assert fake.last("/responses").body == body


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_fake_accepts_exactly_the_copies_it_issued(fake: FakeProvider, api_key: str, stream: bool) -> None:
    direct = client(fake.url, api_key)
    _, output, _ = create(direct, [QUESTION], stream=stream)
    reasoning = output[0]
    issued = fake.responses.issued[reasoning["id"]]
    assert (issued.completed_content != reasoning["encrypted_content"]) is stream
    assert len(issued.completed_content) == len(reasoning["encrypted_content"])
    for content in (reasoning["encrypted_content"], issued.completed_content):
        turn_two = [QUESTION, {**reasoning, "encrypted_content": content}, *output[1:], *results(output)]
        assert create(direct, turn_two, stream=False)[2] == FINAL_ANSWER
    tampered = reasoning["encrypted_content"][:-8] + "AAAAAAA="
    with pytest.raises(openai.BadRequestError) as refused:
        create(
            direct,
            [QUESTION, {**reasoning, "encrypted_content": tampered}, *output[1:], *results(output)],
            stream=False,
        )
    assert refused.value.body["message"] == "The encrypted content gAAA...AAA= could not be verified."
    assert refused.value.body["code"] == "invalid_encrypted_content"
    # Without the value, an unstored item cannot be looked up.
    without_value = {key: value for key, value in reasoning.items() if key != "encrypted_content"}
    with pytest.raises(openai.NotFoundError, match=f"Item with id '{reasoning['id']}' not found"):
        create(direct, [QUESTION, without_value, *output[1:], *results(output)], stream=False)


def test_stream_framing_and_event_order(fake: FakeProvider, api_key: str) -> None:
    body = json.dumps({"model": MODEL, "input": [QUESTION], "tools": TOOLS, "stream": True, **STATELESS}).encode()
    headers = {"authorization": f"Bearer {api_key}", "x-fake-parallel": "2"}
    with httpx.stream("POST", f"{fake.url}/v1/responses", content=body, headers=headers, timeout=30) as reply:
        raw = b"".join(reply.iter_bytes())
    events = [block.split("\n") for block in raw.decode().split("\n\n") if block]
    names = [lines[0].removeprefix("event: ") for lines in events]
    docs = [json.loads(lines[1].removeprefix("data: ")) for lines in events]
    assert [doc["type"] for doc in docs] == names
    assert [doc["sequence_number"] for doc in docs] == list(range(len(docs)))
    shape = [n for i, n in enumerate(names) if i == 0 or n != names[i - 1]]  # runs of deltas folded
    call = [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert shape == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        *call,
        *call,
        "response.completed",
    ]
    added, done = docs[2]["item"], docs[names.index("response.output_item.done")]["item"]
    completed = docs[-1]["response"]["output"][0]
    assert added["id"] == done["id"] == completed["id"] and added["summary"] == []
    assert len(added["encrypted_content"]) < len(done["encrypted_content"]) == len(completed["encrypted_content"])
    assert completed["encrypted_content"] != done["encrypted_content"]


def test_copilot_path_without_v1(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """GitHub Copilot serves the Responses API at `/responses`."""
    copilot = openai.OpenAI(base_url=proxy.url, api_key=api_key, max_retries=0, timeout=30)
    _, output, _ = create(copilot, [QUESTION], stream=True)
    assert create(copilot, [QUESTION, *without_reasoning(output), *results(output)], stream=True)[2] == FINAL_ANSWER
    assert fake.last("/responses").path == "/responses"
    assert fake.last("/responses").doc["input"][1] == output[0]


def test_stream_cut_before_its_final_event_is_still_usable(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    body = json.dumps({"model": MODEL, "input": [QUESTION], "tools": TOOLS, "stream": True, **STATELESS}).encode()
    headers = {"authorization": f"Bearer {api_key}"}
    with httpx.stream("POST", f"{fake.url}/v1/responses", content=body, headers=headers, timeout=30) as reply:
        whole = b"".join(reply.iter_bytes())
    events = whole.count(b"\n\n")
    received = b""
    cut = {**headers, "x-fake-abort-after": str(events - 1)}  # everything but response.completed
    with pytest.raises(httpx.HTTPError):
        with httpx.stream("POST", f"{proxy.url}/v1/responses", content=body, headers=cut, timeout=30) as reply:
            for piece in reply.iter_raw():
                received += piece
    assert b"response.completed" not in received
    output = [
        json.loads(line[len("data: ") :])["item"]
        for line in received.decode().splitlines()
        if line.startswith("data: ") and '"response.output_item.done"' in line
    ]
    assert [item["type"] for item in output] == ["reasoning", "function_call"]
    turn_two = [QUESTION, *without_reasoning(output), *results(output)]
    assert create(client(proxy.url, api_key), turn_two, stream=False)[2] == FINAL_ANSWER
    assert fake.last("/responses").doc["input"] == [QUESTION, *output, *results(output)]


def without_ids(items: list[dict]) -> list[dict]:
    """What a client that keeps reasoning items but drops the ids of the items after them replays of an answer
    (mastra-ai/mastra#11103, vercel/ai#7099)."""
    return [item if item["type"] == "reasoning" else {k: v for k, v in item.items() if k != "id"} for item in items]


def orphaned(rs_id: str) -> dict:
    return {
        "message": f"Item '{rs_id}' of type 'reasoning' was provided without its required following item.",
        "type": "invalid_request_error",
        "param": "input",
        "code": None,
    }


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_call_that_lost_its_id_after_its_reasoning_item_gets_it_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key)
    response_id, output, _ = create(proxied, [QUESTION], stream=stream)
    reasoning, call = output
    turn_two = [QUESTION, *without_ids(output), *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key), turn_two, stream=stream)
    assert refused.value.body == orphaned(reasoning["id"])

    _, _, text = create(proxied, turn_two, stream=stream)
    assert text == FINAL_ANSWER
    sent = fake.last("/responses").doc["input"]
    assert sent[1] == reasoning and sent[2] == call  # the fc_ id back where the client dropped it
    (repaired,) = log_events(
        proxy_state, "repaired", lambda e: any(a.get("response_id") == response_id for a in e["actions"])
    )
    assert [(a["kind"], a["location"], a["fields"]) for a in repaired["actions"]] == [("restored", "input[2]", ["id"])]


def test_a_reasoning_item_whose_next_item_lost_its_id_unseen_is_taken_out(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """A turn the proxy never saw answered (another proxy, an expired cache): the message's id cannot be put back,
    so the reasoning item the server would refuse goes, and the session goes on."""
    _, output, _ = create(client(fake.url, api_key), [QUESTION], stream=False)  # not through the proxy
    reasoning = output[0]
    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I will look."}]}
    turn_two = [QUESTION, reasoning, said, {"role": "user", "content": "Go on."}]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key), turn_two, stream=False)
    assert refused.value.body == orphaned(reasoning["id"])

    create(client(proxy.url, api_key), turn_two, stream=True)  # answered
    assert fake.last("/responses").doc["input"] == [QUESTION, said, turn_two[3]]


def not_persisted(rs_id: str) -> str:
    return (
        f"Item with id '{rs_id}' not found. Items are not persisted when `store` is set to false. Try again with "
        "`store` set to true, or remove this item from your input."
    )


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_reasoning_item_sent_by_its_id_alone_gets_its_encrypted_content_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """Under `store: false` a client that keeps only the reasoning item's id (anomalyco/opencode#7724) gets a 404
    from the server, which holds nothing; the proxy captured the item's encrypted_content and puts it back."""
    proxied = client(proxy.url, api_key)
    response_id, output, _ = create(proxied, [QUESTION], stream=stream)
    reasoning, call = output
    by_id = {"type": "reasoning", "id": reasoning["id"]}
    turn_two = [QUESTION, by_id, call, *results(output)]
    with pytest.raises(openai.NotFoundError) as refused:
        create(client(fake.url, api_key), turn_two, stream=stream)
    assert refused.value.body["message"] == not_persisted(reasoning["id"])

    _, _, text = create(proxied, turn_two, stream=stream)
    assert text == FINAL_ANSWER
    sent = fake.last("/responses").doc["input"][1]
    assert sent["encrypted_content"] == reasoning["encrypted_content"] and sent["summary"] == reasoning["summary"]
    (repaired,) = log_events(
        proxy_state, "repaired", lambda e: any(a.get("response_id") == response_id for a in e["actions"])
    )
    assert [(a["kind"], a["location"], a["fields"]) for a in repaired["actions"]] == [
        ("restored", "input[1]", ["encrypted_content", "summary"])
    ]
