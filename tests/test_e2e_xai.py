"""End to end over xAI's Responses API: the openai SDK (as xAI's docs use it), a real mitmdump with the addon, and the
fake xAI (tests/support/fake_responses.py) whose first answers are real captures (tests/fixtures/xai/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.cli import load_flows
from llm_reasoning_proxy.offline.fixtures import read_fixture_dir

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.fake_responses import (
    CAPTURED_MODEL,
    COMPACTION_BLOB,
    DEGRADED,
    FINAL_ANSWER,
    UNDECRYPTABLE,
    captured_payloads,
)
from tests.support.offline_cli import offline_cli as cli
from tests.support.planted import planted
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import logged_events

pytestmark = pytest.mark.e2e
MODEL = "grok-4"
PATH = "/xai/v1"
TOOLS = [
    {
        "type": "function",
        "name": "list_directory",
        "description": "List the files in a directory.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
QUESTION = {"role": "user", "content": "What is in the deleteme directory?"}
FOLLOW_UP = {"role": "user", "content": "And in the other one?"}
STATELESS = {"store": False, "include": ["reasoning.encrypted_content"]}
CAPTURED = json.loads(captured_payloads()[-1])["response"]  # the capture's final response: the answer as JSON
TOKEN = planted("xai-", "PLANTED0123456789abcdefghijklmnop")


def client(base_url: str, api_key: str, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=f"{base_url}{PATH}",
        api_key=api_key,
        max_retries=0,
        timeout=30,
        default_headers={f"x-fake-{k}": v for k, v in headers.items()},
    )


def create(
    llm: openai.OpenAI, items: list[dict], *, stream: bool, model: str = MODEL, tools: bool = True
) -> tuple[str, list[dict], str, httpx.Headers]:
    """One request: the response id, the output items as the client kept them (output_item.done copies), the answer
    text and the answer's headers."""
    arguments: dict[str, Any] = {"model": model, "input": items, **STATELESS} | ({"tools": TOOLS} if tools else {})
    if not stream:
        raw = llm.responses.with_raw_response.create(**arguments)
        response = raw.parse()
        return response.id, [item.to_dict() for item in response.output], response.output_text, raw.headers
    done: dict[int, dict] = {}
    text, response_id = [], ""
    with llm.responses.with_streaming_response.create(**arguments, stream=True) as raw:
        for event in raw.parse():
            if event.type == "response.output_item.done":
                done[event.output_index] = event.item.to_dict()
            elif event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.completed":
                response_id = event.response.id
        headers = raw.headers
    return response_id, [done[i] for i in sorted(done)], "".join(text), headers


def results(items: list[dict]) -> list[dict]:
    return [
        {"type": "function_call_output", "call_id": item["call_id"], "output": "a.txt\nb.txt"}
        for item in items
        if item["type"] == "function_call"
    ]


def without_reasoning(items: list[dict]) -> list[dict]:
    return [item for item in items if item["type"] != "reasoning"]


def without_summary(items: list[dict]) -> list[dict]:
    """What a client that rebuilds reasoning items from encrypted_content alone sends back (chenyme/grok2api #688)."""
    return [
        {k: v for k, v in item.items() if k != "summary"} if item["type"] == "reasoning" else item for item in items
    ]


def as_vercel_replays(message: dict) -> dict:
    """An answer's message as vercel/ai's xAI provider sends it back: role, text and the msg_ id."""
    return {"role": "assistant", "content": message["content"][0]["text"], "id": message["id"]}


def refusal(error: openai.BadRequestError) -> dict:
    return error.response.json()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_captured_answer_is_kept_and_its_reasoning_item_goes_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """Turn 1 is the real capture (grok-code-fast-1, store false): a bare UUID id, `rs_<id>` with 1731 characters of
    encrypted_content that `output_item.added` lacks. A client that replays only the answer text with its msg_ id
    gets it back before that message."""
    proxied, tail = client(proxy.url, api_key), LogTail(proxy_state / "events.jsonl")
    response_id, (reasoning, message), text, _ = create(
        proxied, [QUESTION], stream=stream, model=CAPTURED_MODEL, tools=False
    )
    assert response_id == CAPTURED["id"] == "0b824fe9-3250-2588-0bbf-0810402fc822"
    assert reasoning == CAPTURED["output"][0] and len(reasoning["encrypted_content"]) == 1731
    assert text.startswith("### Overview of Sonoran Cuisine")
    (captured,) = tail.wait_for("captured", where=lambda e: e.get("response_id") == response_id)
    assert captured["streamed"] is stream and captured["wire_format"] == "openai_responses"
    assert captured["fields"]["id"]["text"] == reasoning["id"]
    assert "text" not in captured["fields"]["encrypted_content"]

    turn_two = [QUESTION, as_vercel_replays(message), FOLLOW_UP]
    direct = create(client(fake.url, api_key), turn_two, stream=stream, model=CAPTURED_MODEL, tools=False)
    assert direct[3].get("x-fake-degraded") == DEGRADED  # xAI answers, without the reasoning

    through = create(proxied, turn_two, stream=stream, model=CAPTURED_MODEL, tools=False)
    assert "x-fake-degraded" not in through[3]
    assert fake.last("/xai/v1/responses").doc["input"] == [QUESTION, reasoning, *turn_two[1:]]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_a_tool_turn_gets_its_reasoning_item_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool, parallel: str
) -> None:
    proxied = client(proxy.url, api_key, parallel=parallel)
    response_id, output, _, _ = create(proxied, [QUESTION], stream=stream)
    reasoning, *calls = output
    assert reasoning == fake.xai.issued[reasoning["id"]].item and reasoning["id"] == f"rs_{response_id}"
    assert [c["id"] for c in calls] == [f"fc_{response_id}_{i}" for i in range(int(parallel))]

    turn_two = [QUESTION, *without_reasoning(output), *results(output)]
    assert create(client(fake.url, api_key), turn_two, stream=stream)[3].get("x-fake-degraded") == DEGRADED

    _, answer, text, headers = create(proxied, turn_two, stream=stream)
    assert text == FINAL_ANSWER and "x-fake-degraded" not in headers
    assert fake.last("/xai/v1/responses").doc["input"] == [QUESTION, reasoning, *turn_two[1:]]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", response_id)
    assert [(a["kind"], a["location"], a["tool_call_id"]) for a in repaired["actions"]] == [
        ("inserted", "input[2]", calls[0]["call_id"])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_reasoning_item_sent_back_without_its_summary_gets_it_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key)
    response_id, output, _, _ = create(proxied, [QUESTION], stream=stream)
    turn_two = [QUESTION, *without_summary(output), *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url, api_key), turn_two, stream=False)
    assert refusal(refused.value) == {"code": "invalid-argument", "error": COMPACTION_BLOB}

    assert create(proxied, turn_two, stream=stream)[2] == FINAL_ANSWER
    assert fake.last("/xai/v1/responses").doc["input"][1] == output[0]  # key order aside, the item as issued
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", response_id)
    assert [(a["kind"], a["location"], a["fields"]) for a in repaired["actions"]] == [
        ("restored", "input[1]", ["summary"])
    ]


def test_a_request_that_needs_nothing_reaches_xai_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    _, output, _, _ = create(client(proxy.url, api_key), [QUESTION], stream=True)
    for items in ([QUESTION], [QUESTION, *output, *results(output)]):
        # Odd spacing and key order on purpose: a re-serialised body would differ.
        body = json.dumps({"input": items, "model": MODEL, "tools": TOOLS, **STATELESS}, indent=1).encode()
        reply = httpx.post(
            f"{proxy.url}{PATH}/responses", content=body, headers={"authorization": f"Bearer {api_key}"}, timeout=30
        )
        assert reply.status_code == 200 and "x-fake-degraded" not in reply.headers
        assert fake.last("/xai/v1/responses").body == body


def test_the_fake_refuses_an_edited_blob_and_one_issued_for_another_model(fake: FakeProvider, api_key: str) -> None:
    direct = client(fake.url, api_key)
    _, output, _, _ = create(direct, [QUESTION], stream=False)
    reasoning = output[0]
    edited = {**reasoning, "encrypted_content": reasoning["encrypted_content"][:-8] + "AAAAAAA="}
    for items, model in (([edited, *output[1:]], MODEL), (output, "grok-4-fast-reasoning")):
        with pytest.raises(openai.BadRequestError) as refused:
            create(direct, [QUESTION, *items, *results(output)], stream=False, model=model)
        assert refusal(refused.value) == {"code": "invalid-argument", "error": UNDECRYPTABLE}
    assert create(direct, [QUESTION, *output, *results(output)], stream=False)[2] == FINAL_ANSWER


@pytest.fixture(scope="module")
def refused_capture(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A conversation recorded by `mitmdump -w` with repair off: turn 2 sends the reasoning item without its summary
    and xAI refuses it; turn 3 sends an edited blob. The proxy's diagnoses are checked on the way."""
    folder = tmp_path_factory.mktemp("xai-capture")
    out, log = folder / "refused.mitm", folder / "events.jsonl"
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    args += ("--set", "llm_repair=false", "-w", str(out))
    with MitmdumpProcess(*args, confdir=confdir) as proxy:
        tail = LogTail(log)
        proxied = client(proxy.url, TOKEN)
        _, output, _, _ = create(proxied, [QUESTION], stream=True)
        with pytest.raises(openai.BadRequestError):
            create(proxied, [QUESTION, *without_summary(output), *results(output)], stream=False)
        edited = {**output[0], "encrypted_content": output[0]["encrypted_content"][::-1]}
        with pytest.raises(openai.BadRequestError):
            create(proxied, [QUESTION, edited, *output[1:], *results(output)], stream=False)
        summary, blob = tail.wait_for("diagnosed", 2)
    assert (summary["rule"], summary["provider"], summary["location"]) == (
        "reasoning_summary_missing",
        "xai",
        "input[1]",
    )
    assert summary["advice"].startswith("repair is off (llm_repair=false), and the proxy would have restored summary")
    assert (blob["rule"], blob["provider"], blob["field"]) == (
        "responses_encrypted_content_invalid",
        "xai",
        "encrypted_content",
    )
    return out


@pytest.mark.slow
def test_the_offline_check_of_a_flow_file_names_the_summary_xai_wants(refused_capture: Path) -> None:
    result = cli("check", str(refused_capture))
    # Turn 2 breaks a rule the proxy mends; turn 3's edited blob breaks none the request shows (only xAI can tell).
    assert result.returncode == 0, result.stdout + result.stderr
    second, third = result.stdout.split("\n#2 ")[1].split("\n#3 ")
    assert "as sent: would fail" in second
    assert "has its encrypted_content but no summary" in second
    assert "the provider answered: reasoning_summary_missing" in second and COMPACTION_BLOB in second
    assert "restored summary on input[1]" in second and "after repair: breaks no known rule" in second
    assert "the provider answered: responses_encrypted_content_invalid" in third and UNDECRYPTABLE in third
    assert "3 LLM request(s); 1 would fail as sent (#2); 0 would still fail through the proxy." in result.stdout
    assert TOKEN not in result.stdout


@pytest.mark.slow
def test_export_of_the_flow_file_replays_to_the_same_repairs(refused_capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixture"
    result = cli("export", str(refused_capture), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    assert TOKEN.encode() not in b"".join(path.read_bytes() for path in sorted(out.iterdir()))
    fixtures = read_fixture_dir(out)
    assert [f.response.status for f in fixtures] == [200, 400, 400]
    assert fixtures[1].expect.repairs == [fixtures[1].expect.repairs[0]]
    assert fixtures[1].expect.repairs[0].startswith("restored summary on input[1] (tool call call_")
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
