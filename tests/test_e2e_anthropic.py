"""End to end: httpx as an Anthropic Messages client, a real mitmdump with the addon, and the fake Anthropic API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess

pytestmark = pytest.mark.e2e

MODEL = "claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 2048}
TOOLS = [
    {
        "name": "list_directory",
        "description": "List the files in a directory.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
MISSING_THINKING = (
    "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{found}`. When `thinking` is "
    "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
    "this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
)
ANSWER = "The directory holds two files."
THINKING_TYPES = ("thinking", "redacted_thinking")


def post(base_url: str, api_key: str, body: dict[str, Any] | bytes, **fake: str) -> httpx.Response:
    headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
    headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
    if isinstance(body, bytes):
        headers["content-type"] = "application/json"
        return httpx.post(f"{base_url}/v1/messages", content=body, headers=headers, timeout=30)
    return httpx.post(f"{base_url}/v1/messages", json=body, headers=headers, timeout=30)


def request(messages: list[dict], *, stream: bool, thinking: dict | None = THINKING) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 4096, "tools": TOOLS, "messages": messages}
    if thinking is not None:
        body["thinking"] = thinking
    return body | ({"stream": True} if stream else {})


def sse_documents(text: str) -> list[dict]:
    return [json.loads(line[len("data:") :]) for line in text.splitlines() if line.startswith("data:")]


def assembled(text: str) -> dict[str, Any]:
    """The message a client builds from a stream, block by block as the SDKs do."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for doc in sse_documents(text):
        if doc["type"] == "message_start":
            message = doc["message"]
        elif doc["type"] == "content_block_start":
            message["content"].append(dict(doc["content_block"]))
        elif doc["type"] == "content_block_delta":
            block, delta = message["content"][doc["index"]], doc["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] += delta["signature"]
            elif delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[doc["index"]] = partial.get(doc["index"], "") + delta["partial_json"]
        elif doc["type"] == "content_block_stop" and doc["index"] in partial:
            message["content"][doc["index"]]["input"] = json.loads(partial.pop(doc["index"]))
    return message


def reply(response: httpx.Response, *, stream: bool) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    if stream:
        assert response.headers["content-type"] == "text/event-stream"
        return assembled(response.text)
    return response.json()


def answer_text(message: dict[str, Any]) -> str:
    return "".join(block["text"] for block in message["content"] if block["type"] == "text")


def without_thinking(message: dict[str, Any]) -> dict[str, Any]:
    """The assistant turn as a client that drops thinking blocks sends it back."""
    return {"role": "assistant", "content": [b for b in message["content"] if b["type"] not in THINKING_TYPES]}


def results(message: dict[str, Any]) -> dict[str, Any]:
    uses = [b for b in message["content"] if b["type"] == "tool_use"]
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "a.txt\nb.txt"} for b in uses],
    }


def tool_ids(message: dict[str, Any]) -> list[str]:
    return [b["id"] for b in message["content"] if b["type"] == "tool_use"]


def as_json(blocks: list[dict]) -> list[str]:
    """Blocks compared key for key, order included."""
    return [json.dumps(b) for b in blocks]


def error_message(response: httpx.Response) -> str:
    assert response.status_code == 400, response.text
    doc = response.json()
    assert doc["type"] == "error" and doc["error"]["type"] == "invalid_request_error"
    return doc["error"]["message"]


def events(proxy_state: Path, kind: str, tool_call_id: str) -> list[dict]:
    """The proxy's log events of a kind that concern one tool call, once there is one (the log is written as flows
    end; LogTail waits up to 60 s)."""

    def concerns(event: dict) -> bool:
        ids = [c["id"] for c in event.get("tool_calls", [])] + [a.get("tool_call_id") for a in event.get("actions", [])]
        return event.get("wire_format") == "anthropic_messages" and tool_call_id in ids

    return LogTail(proxy_state / "events.jsonl", whole=True).wait_for(kind, where=concerns)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_turn_two_gets_its_thinking_block_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, parallel: str
) -> None:
    first = post(proxy.url, api_key, request([QUESTION], stream=stream), parallel=parallel)
    turn = reply(first, stream=stream)
    ids = tool_ids(turn)
    assert len(ids) == int(parallel)
    issued = fake.anthropic.issued[ids[0]]
    assert [b["type"] for b in issued] == ["thinking"]
    assert first.content == bytes(fake.last("/v1/messages").sent)  # the client got the answer untouched
    assert as_json([b for b in turn["content"] if b["type"] == "thinking"]) == as_json(issued)

    messages = [QUESTION, without_thinking(turn), results(turn)]
    direct = post(fake.url, api_key, request(messages, stream=stream))
    assert error_message(direct) == MISSING_THINKING.format(found="tool_use")

    repaired = post(proxy.url, api_key, request(messages, stream=stream))
    assert answer_text(reply(repaired, stream=stream)) == ANSWER
    sent = fake.last("/v1/messages").doc["messages"][1]["content"]
    assert as_json(sent) == as_json(issued + without_thinking(turn)["content"])

    (captured,) = events(proxy_state, "captured", ids[0])
    assert [c["id"] for c in captured["tool_calls"]] == ids
    assert captured["fields"]["thinking"]["text"] == issued[0]["thinking"]
    assert "text" not in captured["fields"]["thinking_blocks"]  # signatures are opaque: length and hash only
    assert (captured["streamed"], captured["stored"], captured["request_model"]) == (stream, True, MODEL)
    (repair,) = events(proxy_state, "repaired", ids[0])
    assert repair["applied"] is True
    assert [(a["kind"], a["location"], a["fields"], a["tool_call_id"]) for a in repair["actions"]] == [
        ("inserted", "messages[1].content[1]", ["thinking"], ids[0])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_text_before_the_tool_use(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=stream), content="I will look."), stream=stream)
    assert [b["type"] for b in turn["content"]] == ["thinking", "text", "tool_use"]
    messages = [QUESTION, without_thinking(turn), results(turn)]
    assert error_message(post(fake.url, api_key, request(messages, stream=stream))) == MISSING_THINKING.format(
        found="text"
    )

    assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=stream)), stream=stream)) == ANSWER
    sent = fake.last("/v1/messages").doc["messages"][1]["content"]
    assert as_json(sent) == as_json(turn["content"])


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("redacted", ["1", "both"], ids=["redacted-only", "thinking-and-redacted"])
def test_redacted_thinking_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, redacted: str
) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=stream), redacted=redacted), stream=stream)
    ids = tool_ids(turn)
    issued = fake.anthropic.issued[ids[0]]
    kinds = ["redacted_thinking"] if redacted == "1" else ["thinking", "redacted_thinking"]
    assert [b["type"] for b in issued] == kinds
    messages = [QUESTION, without_thinking(turn), results(turn)]
    assert error_message(post(fake.url, api_key, request(messages, stream=stream))) == MISSING_THINKING.format(
        found="tool_use"
    )

    assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=stream)), stream=stream)) == ANSWER
    sent = fake.last("/v1/messages").doc["messages"][1]["content"]
    assert as_json(sent[: len(issued)]) == as_json(issued)
    (repair,) = events(proxy_state, "repaired", ids[0])
    assert repair["actions"][0]["fields"] == kinds


def test_dropping_only_the_redacted_block_is_refused_and_left_alone(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """A client that keeps some thinking blocks sent its own: the proxy does not second-guess it."""
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False), redacted="both"), stream=False)
    kept = {"role": "assistant", "content": [b for b in turn["content"] if b["type"] != "redacted_thinking"]}
    body = json.dumps(request([QUESTION, kept, results(turn)], stream=False)).encode()
    refused = post(proxy.url, api_key, body)
    assert error_message(refused) == (
        "messages.1.content.1: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be "
        "modified. These blocks must remain as they were in the original response."
    )
    assert fake.last("/v1/messages").body == body


def test_a_thinking_block_the_client_changed_reaches_the_provider_as_sent(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False)), stream=False)
    turn["content"][0]["thinking"] += " (edited)"
    body = json.dumps(
        request([QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)], stream=False)
    ).encode()
    response = post(proxy.url, api_key, body)
    assert error_message(response) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    assert fake.last("/v1/messages").body == body


@pytest.mark.parametrize("case", ["thinking-disabled", "blocks-kept"])
def test_a_request_that_needs_nothing_reaches_the_provider_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, case: str
) -> None:
    thinking = {"type": "disabled"} if case == "thinking-disabled" else THINKING
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False, thinking=thinking)), stream=False)
    assert any(b["type"] == "thinking" for b in turn["content"]) is (case == "blocks-kept")
    history = [QUESTION, {"role": "assistant", "content": turn["content"]}, results(turn)]
    # Spacing and escapes no serialiser of ours would produce: any re-encoding would show.
    body = json.dumps(request(history, stream=False, thinking=thinking), indent=1, ensure_ascii=True).encode()
    response = post(proxy.url, api_key, body)
    assert answer_text(reply(response, stream=False)) == ANSWER
    assert fake.last("/v1/messages").body == body


def test_rewritten_tool_use_ids_are_matched_by_name_and_input(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=True), parallel="2"), stream=True)
    ids = tool_ids(turn)
    issued = fake.anthropic.issued[ids[0]]
    assistant = without_thinking(turn)
    for number, block in enumerate(assistant["content"]):
        block["id"] = f"toolu_client_{number}"  # a client that numbers tool calls itself
    messages = [QUESTION, assistant, results(assistant)]

    assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=False)), stream=False)) == ANSWER
    sent = fake.last("/v1/messages").doc["messages"][1]["content"]
    assert as_json(sent) == as_json(issued + assistant["content"])
    (repair,) = events(proxy_state, "repaired", ids[0])
    assert repair["actions"][0]["via"] == "fingerprint"


def test_multi_step_tool_loop(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """Three tool turns in a row, the client dropping the thinking blocks each time."""
    messages = [QUESTION]
    issued = []
    for step in range(3):
        turn = reply(post(proxy.url, api_key, request(messages, stream=step == 1), steps="3"), stream=step == 1)
        assert tool_ids(turn), f"step {step} should call a tool"
        issued.append(fake.anthropic.issued[tool_ids(turn)[0]])
        messages += [without_thinking(turn), results(turn)]
    final = reply(post(proxy.url, api_key, request(messages, stream=False), steps="3"), stream=False)
    assert answer_text(final) == ANSWER
    sent = fake.last("/v1/messages").doc["messages"]
    assert [as_json(sent[i]["content"][:1]) for i in (1, 3, 5)] == [as_json(blocks) for blocks in issued]


def test_compressed_slow_stream_is_captured(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    first = post(proxy.url, api_key, request([QUESTION], stream=True), encoding="br", event_delay="0.002")
    assert first.headers["content-encoding"] == "br"
    turn = reply(first, stream=True)
    issued = fake.anthropic.issued[tool_ids(turn)[0]]
    messages = [QUESTION, without_thinking(turn), results(turn)]
    assert answer_text(reply(post(proxy.url, api_key, request(messages, stream=True)), stream=True)) == ANSWER
    assert as_json(fake.last("/v1/messages").doc["messages"][1]["content"][:1]) == as_json(issued)
