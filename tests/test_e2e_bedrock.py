"""End to end: httpx as an Amazon Bedrock client (Converse and InvokeModel, JSON and event-stream answers), a real
mitmdump with the addon, and the fake Bedrock (tests/support/fake_bedrock.py)."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit

import httpx
import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.cli import load_flows
from llm_reasoning_proxy.offline.fixtures import read_fixture_dir
from llm_reasoning_proxy.offline.fixtures.frames import frames_of
from mitmproxy import io

from tests.support import fake_anthropic, sigv4
from tests.support.aws_frames import by_hand
from tests.support.event_log import LogTail
from tests.support.fake_bedrock import MODEL_ERRORS, SIGNATURE_MISMATCH
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli as cli
from tests.support.proxy import MitmdumpProcess, reverse_proxy

pytestmark = pytest.mark.e2e

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
THINKING = {"type": "enabled", "budget_tokens": 2048}
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
QUESTION = "What is in the deleteme directory?"
ANSWER = "The directory holds two files."
MISSING_THINKING = MODEL_ERRORS + "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
# What Bedrock answers when the final assistant message of a tool loop lost its reasoning.
REFUSED = {"message": MODEL_ERRORS + fake_anthropic.MISSING_THINKING.format(index=1, found="tool_use")}


class Client:
    """A Bedrock client: a Bedrock API key (`Authorization: Bearer …`) or an AWS access key that signs every request
    with SigV4 for the upstream's address, as a client whose proxy is transparent does."""

    def __init__(self, fake: FakeProvider, *, signed: bool = False) -> None:
        self.fake = fake
        self.signed = signed
        self.key = f"ABSK{uuid.uuid4().hex}" if not signed else f"AKIA{uuid.uuid4().hex[:16].upper()}"
        if signed:
            fake.bedrock.secrets[self.key] = SECRET

    def post(self, base_url: str, action: str, body: dict | bytes, **fake: str) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        path = f"/model/{quote(MODEL, safe='')}/{action}"
        headers = {"content-type": "application/json"}
        if self.signed:
            upstream = f"http://{urlsplit(self.fake.url).netloc}{path}"
            headers = sigv4.sign("POST", upstream, raw, key_id=self.key, secret=SECRET, headers=headers)
        else:
            headers["authorization"] = f"Bearer {self.key}"
        headers |= {f"x-fake-{name.replace('_', '-')}": value for name, value in fake.items()}
        return httpx.post(f"{base_url}{path}", content=raw, headers=headers, timeout=30)


# Converse --------------------------------------------------------------------------------------
TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": "list_directory",
                "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}}},
            }
        }
    ]
}


def converse(messages: list[dict]) -> dict:
    return {
        "messages": messages,
        "system": [{"text": "You list directories."}],
        "inferenceConfig": {"maxTokens": 4096},
        "toolConfig": TOOL_CONFIG,
        "additionalModelRequestFields": {"thinking": THINKING},
    }


def converse_question() -> dict:
    return {"role": "user", "content": [{"text": QUESTION}]}


def converse_answer(response: httpx.Response, *, stream: bool) -> list[dict]:
    """The assistant's content blocks, as a client assembles them."""
    assert response.status_code == 200, response.text
    if not stream:
        return response.json()["output"]["message"]["content"]
    assert response.headers["content-type"] == "application/vnd.amazon.eventstream"
    blocks: dict[int, dict] = {}
    for headers, payload in by_hand(response.content):
        doc, kind = json.loads(payload), headers[":event-type"]
        if kind == "contentBlockStart":
            use = doc["start"]["toolUse"]
            blocks[doc["contentBlockIndex"]] = {"toolUse": {**use, "input": ""}}
        elif kind == "contentBlockDelta":
            block, delta = blocks.setdefault(doc["contentBlockIndex"], {}), doc["delta"]
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"]["input"]
            elif "redactedContent" in delta["reasoningContent"]:
                block["reasoningContent"] = {"redactedContent": delta["reasoningContent"]["redactedContent"]}
            else:
                text = block.setdefault("reasoningContent", {}).setdefault("reasoningText", {"text": ""})
                for key, piece in delta["reasoningContent"].items():
                    text[key] = text.get(key, "") + piece
    for block in blocks.values():
        if "toolUse" in block:
            block["toolUse"]["input"] = json.loads(block["toolUse"]["input"])
    return [blocks[index] for index in sorted(blocks)]


def converse_results(content: list[dict]) -> dict:
    uses = [b["toolUse"] for b in content if "toolUse" in b]
    results = [{"toolUseId": u["toolUseId"], "content": [{"text": "a.txt b.txt"}], "status": "success"} for u in uses]
    return {"role": "user", "content": [{"toolResult": result} for result in results]}


def dropped(content: list[dict]) -> dict:
    """The assistant turn as a client that drops reasoning sends it back."""
    return {"role": "assistant", "content": [b for b in content if "reasoningContent" not in b]}


def converse_turn_two(fake: FakeProvider, base_url: str, client: Client, *, stream: bool, **fake_headers: str):
    action = "converse-stream" if stream else "converse"
    first = client.post(base_url, action, converse([converse_question()]), **fake_headers)
    content = converse_answer(first, stream=stream)
    assert first.content == bytes(fake.last(f"/{action}").sent)  # the client got the answer as it was sent
    messages = [converse_question(), dropped(content), converse_results(content)]
    return content, messages


def uses_of(content: list[dict]) -> list[str]:
    return [b["toolUse"]["toolUseId"] for b in content if "toolUse" in b]


def events(proxy_state: Path, kind: str, tool_call_id: str) -> list[dict]:
    def concerns(event: dict) -> bool:
        ids = [c["id"] for c in event.get("tool_calls", [])] + [a.get("tool_call_id") for a in event.get("actions", [])]
        return tool_call_id in ids

    return LogTail(proxy_state / "events.jsonl", whole=True).wait_for(kind, where=concerns)


@pytest.mark.parametrize("redacted", [None, "both"], ids=["thinking", "thinking-and-redacted"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_converse_turn_two_gets_its_reasoning_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, stream: bool, redacted: str | None
) -> None:
    client = Client(fake)
    options = {"redacted": redacted} if redacted else {}
    content, messages = converse_turn_two(fake, proxy.url, client, stream=stream, **options)
    reasoning = [b for b in content if "reasoningContent" in b]
    assert len(reasoning) == (2 if redacted else 1)
    refused = client.post(fake.url, "converse", converse(messages))
    assert refused.status_code == 400 and refused.json() == REFUSED

    repaired = client.post(proxy.url, "converse-stream" if stream else "converse", converse(messages))
    assert "".join(b.get("text", "") for b in converse_answer(repaired, stream=stream)) == ANSWER
    sent = fake.last("/converse").doc["messages"][1]["content"]
    assert sent == reasoning + dropped(content)["content"]

    (call_id,) = uses_of(content)
    (captured,) = events(proxy_state, "captured", call_id)
    assert (captured["wire_format"], captured["streamed"], captured["stored"]) == ("bedrock_converse", stream, True)
    assert captured["request_model"] == MODEL  # from the path, where the client quoted its ":"
    assert "text" not in captured["fields"]["reasoning_blocks"]  # signatures are opaque: length and hash only
    (repair,) = events(proxy_state, "repaired", call_id)
    members = ["reasoningContent.reasoningText"] + (["reasoningContent.redactedContent"] if redacted else [])
    assert [(a["kind"], a["location"], a["fields"]) for a in repair["actions"]] == [
        ("inserted", f"messages[1].content[{len(reasoning)}]", members)
    ]


def test_a_converse_request_that_needs_nothing_reaches_bedrock_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess
) -> None:
    client = Client(fake)
    content = converse_answer(client.post(proxy.url, "converse", converse([converse_question()])), stream=False)
    history = [converse_question(), {"role": "assistant", "content": content}, converse_results(content)]
    body = json.dumps(converse(history), indent=1, ensure_ascii=True).encode()  # spacing no serialiser of ours writes
    assert client.post(proxy.url, "converse", body).status_code == 200
    assert fake.last("/converse").body == body


# InvokeModel -----------------------------------------------------------------------------------
TOOLS = [{"name": "list_directory", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def invoke(messages: list[dict]) -> dict:
    return {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 4096,
        "thinking": THINKING,
        "tools": TOOLS,
        "messages": messages,
    }


def invoke_answer(response: httpx.Response, *, stream: bool) -> dict:
    """Claude's message, as a client builds it from a stream's chunks."""
    assert response.status_code == 200, response.text
    if not stream:
        return response.json()
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for headers, payload in by_hand(response.content):
        assert headers[":event-type"] == "chunk"
        doc = json.loads(base64.b64decode(json.loads(payload)["bytes"]))
        if doc["type"] == "message_start":
            message = doc["message"]
        elif doc["type"] == "content_block_start":
            message["content"].append(dict(doc["content_block"]))
        elif doc["type"] == "content_block_delta":
            block, delta = message["content"][doc["index"]], doc["delta"]
            if delta["type"] == "input_json_delta":
                partial[doc["index"]] = partial.get(doc["index"], "") + delta["partial_json"]
            else:
                field = {"thinking_delta": "thinking", "signature_delta": "signature", "text_delta": "text"}
                block[field[delta["type"]]] += delta[field[delta["type"]]]
        elif doc["type"] == "content_block_stop" and doc["index"] in partial:
            message["content"][doc["index"]]["input"] = json.loads(partial.pop(doc["index"]))
    return message


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_invoke_turn_two_gets_its_thinking_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, stream: bool
) -> None:
    client = Client(fake)
    action = "invoke-with-response-stream" if stream else "invoke"
    question = {"role": "user", "content": QUESTION}
    first = client.post(proxy.url, action, invoke([question]))
    message = invoke_answer(first, stream=stream)
    assert first.content == bytes(fake.last(f"/{action}").sent)
    thinking = [b for b in message["content"] if b["type"] == "thinking"]
    uses = [b for b in message["content"] if b["type"] == "tool_use"]
    assert len(thinking) == 1 and len(uses) == 1
    without = {"role": "assistant", "content": [b for b in message["content"] if b["type"] != "thinking"]}
    results = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0]["id"], "content": "a b"}]}
    messages = [question, without, results]
    refused = client.post(fake.url, "invoke", invoke(messages))
    assert (
        refused.status_code == 400
        and refused.json()["message"]
        == MISSING_THINKING + "`tool_use`. " + (refused.json()["message"].split("`tool_use`. ", 1)[1])
    )

    answer = invoke_answer(client.post(proxy.url, action, invoke(messages)), stream=stream)
    assert answer["content"] == [{"type": "text", "text": ANSWER}]
    assert fake.last("/invoke").doc["messages"][1]["content"] == thinking + without["content"]
    (captured,) = events(proxy_state, "captured", uses[0]["id"])
    assert (captured["wire_format"], captured["streamed"], captured["request_model"]) == (
        "anthropic_messages",
        stream,
        MODEL,
    )


# SigV4 -----------------------------------------------------------------------------------------
def test_the_fake_refuses_a_signed_body_changed_on_the_way(fake: FakeProvider) -> None:
    """What makes the test below able to fail: a body changed after signing is refused as AWS refuses it."""
    client = Client(fake, signed=True)
    body = json.dumps(converse([converse_question()])).encode()
    path = f"/model/{quote(MODEL, safe='')}/converse"
    headers = sigv4.sign("POST", f"{fake.url}{path}", body, key_id=client.key, secret=SECRET)
    changed = httpx.post(f"{fake.url}{path}", content=body.replace(b"deleteme", b"deleteyou"), headers=headers)
    assert changed.status_code == 403 and changed.json() == {"message": SIGNATURE_MISMATCH}
    assert httpx.post(f"{fake.url}{path}", content=body, headers=headers).status_code == 200


def test_sigv4_signing_matches_aws_test_vector() -> None:
    """AWS's SigV4 test suite, `get-vanilla`."""
    headers = {"host": "example.amazonaws.com", "x-amz-date": "20150830T123600Z"}
    canonical = sigv4._canonical_request("GET", "/", "", headers, ["host", "x-amz-date"], b"")
    signature = sigv4._signature(SECRET, "20150830/us-east-1/service/aws4_request", "20150830T123600Z", canonical)
    assert signature == "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"


@pytest.mark.slow
def test_a_sigv4_signed_request_goes_on_untouched_and_says_how_it_could_be_repaired(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    flows, log = tmp_path / "signed.mitm", tmp_path / "events.jsonl"
    client = Client(fake, signed=True)
    with reverse_proxy(fake.url, confdir, "-w", str(flows), llm_cache="memory", llm_log=log) as proxy:
        content, messages = converse_turn_two(fake, proxy.url, client, stream=True)
        body = json.dumps(converse(messages)).encode()
        tail = LogTail(log)
        response = client.post(proxy.url, "converse", body)
        # Bedrock checked the signature over the body it got, and refused only what the client itself dropped.
        assert response.status_code == 400 and response.json()["message"].startswith(MISSING_THINKING)
        assert fake.last("/converse").body == body
        (skipped,) = tail.wait_for("skipped")
        (diagnosed,) = tail.wait_for("diagnosed")
    (call_id,) = uses_of(content)
    would = f"inserted reasoningContent.reasoningText before messages[1].content[1] (tool call {call_id})"
    assert skipped["reason"] == (
        f"request signed with AWS SigV4, which covers its body: forwarded byte for byte, unrepaired; the proxy would "
        f"have {would}; a Bedrock API key (a bearer token, which signs no body) lets the proxy repair such requests"
    )
    assert (diagnosed["rule"], diagnosed["location"]) == ("anthropic_thinking_expected", "messages[1]")
    assert diagnosed["advice"].startswith(
        f"the request is signed with AWS SigV4, which covers its body, so the proxy sent it as it was; it would have "
        f"{would}: a Bedrock API key"
    )
    assert not any(event["kind"] == "repaired" for event in LogTail(log, whole=True).events())
    with flows.open("rb") as handle:
        recorded = [flow for flow in io.FlowReader(handle).stream() if flow.request.path.endswith("/converse")]
    assert recorded[-1].comment.startswith("llm not repaired: request signed with AWS SigV4")
    assert recorded[-1].marked != ":wrench:"

    report = cli("check", "--no-diff", str(flows)).stdout
    assert "through the proxy: sent as it was (signed with AWS SigV4, which covers its body)" in report
    assert f"- {would}" in report
    assert "1 would still fail through the proxy (#2)" in report


# Diagnosis and the offline tools ---------------------------------------------------------------


class Capture(NamedTuple):
    flows: Path
    log: Path
    key: str


@pytest.fixture(scope="module")
def refused_capture(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Capture:
    """A ConverseStream turn and the next turn without its reasoning, through a proxy with repair off that writes a
    flow file."""
    folder = tmp_path_factory.mktemp("bedrock-capture")
    capture = Capture(folder / "refused.mitm", folder / "events.jsonl", "")
    client = Client(fake)
    options = {"llm_cache": "memory", "llm_log": capture.log, "llm_repair": "false"}
    with reverse_proxy(fake.url, confdir, "-w", str(capture.flows), **options) as proxy:
        _, messages = converse_turn_two(fake, proxy.url, client, stream=True)
        tail = LogTail(capture.log)
        assert client.post(proxy.url, "converse", converse(messages)).status_code == 400
        tail.wait_for("diagnosed")
    return capture._replace(key=client.key)


@pytest.mark.slow
def test_the_400_is_diagnosed_with_what_the_proxy_would_have_done(refused_capture: Capture) -> None:
    (diagnosed,) = LogTail(refused_capture.log, whole=True).wait_for("diagnosed")
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["location"]) == (
        "anthropic_thinking_expected",
        "anthropic",
        "messages[1]",
    )
    assert diagnosed["wire_format"] == "bedrock_converse" and diagnosed["cache_had"] is True
    assert diagnosed["message"].startswith(MISSING_THINKING)
    assert (
        "repair is off (llm_repair=false), and the proxy would have inserted reasoningContent.reasoningText"
        in (diagnosed["advice"])
    )


@pytest.mark.slow
def test_the_offline_check_reads_the_flow_file(refused_capture: Capture) -> None:
    result = cli("check", str(refused_capture.flows))
    assert result.returncode == 0, result.stdout + result.stderr
    first, second = result.stdout.split("\n#2 ")[0], result.stdout.split("\n#2 ")[1].split("Tool-call chain:")[0]
    assert "[bedrock_converse, model us.anthropic.claude-sonnet-4-5-20250929-v1:0] -> HTTP 200" in first
    assert "reasoning captured: reasoning_blocks, reasoning_text" in first
    assert "-> HTTP 400" in second and "as sent: would fail" in second
    assert "messages[1].content[0]: the final assistant message must start with a reasoningContent block" in second
    assert "the provider answered: anthropic_thinking_expected" in second
    assert "inserted reasoningContent.reasoningText before messages[1].content[1]" in second
    added = [line.strip()[1:].strip() for line in second.splitlines() if line.strip().startswith("+ ")]
    assert '"reasoningContent": {' in added and any(line.startswith('"signature": "') for line in added)
    assert "after repair: breaks no known rule" in second


@pytest.mark.slow
def test_export_keeps_the_frames_and_replays_to_the_same_repairs(refused_capture: Capture, tmp_path: Path) -> None:
    out = tmp_path / "fixture"
    result = cli("export", str(refused_capture.flows), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    fixtures = read_fixture_dir(out)
    frames = fixtures[0].response.frames
    assert fixtures[0].response.sse is None and frames[0]["headers"][":event-type"] == "messageStart"
    (issued,) = [
        frame["payload"]["delta"]["reasoningContent"]["signature"]
        for frame in frames_of(load_flows(refused_capture.flows)[0].response.content)
        if "signature" in json.dumps(frame["payload"])
    ]
    (placeholder,) = [
        frame["payload"]["delta"]["reasoningContent"]["signature"]
        for frame in frames
        if "signature" in json.dumps(frame["payload"])
    ]
    assert len(placeholder) == len(issued) and placeholder != issued
    assert fixtures[1].expect.repairs[0].startswith("inserted reasoningContent.reasoningText before messages[1]")
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
    assert placeholder in replayed[1].diff  # the placeholder the answer issued is what the repair puts back
    written = b"".join(path.read_bytes() for path in out.iterdir())
    assert issued.encode() not in written and refused_capture.key.encode() not in written
