"""End to end, Gemini native: an httpx client, a real mitmdump with the addon, and a fake Gemini with real rules."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider, Recorded
from tests.support.proxy import MitmdumpProcess, reverse_proxy

pytestmark = pytest.mark.e2e

MODEL = "gemini-3-pro-preview"
QUESTION = {"role": "user", "parts": [{"text": "What is in the deleteme directory?"}]}
TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "list_directory",
                "description": "List the files in a directory.",
                "parameters": {"type": "OBJECT", "properties": {"path": {"type": "STRING"}}, "required": ["path"]},
            }
        ]
    }
]
GEMINI_API_MISSING = (
    "Function call is missing a thought_signature in functionCall parts. This is required for tools to work "
    "correctly, and missing thought_signature may lead to degraded model performance. Additional data, function "
    "call `default_api:list_directory` , position {position}. Please refer to "
    "https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
)
VERTEX_MISSING = (
    "Unable to submit request because function call `default_api:list_directory` in the {position}. content block "
    "is missing a `thought_signature`. Learn more: "
    "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"
)
SKIP_BASE64 = "c2tpcF90aG91Z2h0X3NpZ25hdHVyZV92YWxpZGF0b3I="
ANSWER = "The directory holds two files."


def route(*, mode: str = "plain", vertex: bool = False, model: str = MODEL) -> str:
    """The path of a request: "plain" generateContent, "sse" streamed with alt=sse, "array" streamed as JSON."""
    base = (
        f"/v1/projects/demo/locations/global/publishers/google/models/{model}" if vertex else f"/v1beta/models/{model}"
    )
    return (
        base
        + {
            "plain": ":generateContent",
            "sse": ":streamGenerateContent?alt=sse",
            "array": ":streamGenerateContent",
        }[mode]
    )


class GeminiClient:
    """What an editor's Gemini client does with httpx: the key in `x-goog-api-key` or `?key=`."""

    def __init__(self, base_url: str, api_key: str, *, key_in_query: bool = False, **fake: str) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self.key_in_query = key_in_query
        self.headers = {f"x-fake-{k.replace('_', '-')}": v for k, v in fake.items()}
        if not key_in_query:
            self.headers["x-goog-api-key"] = api_key

    def post(self, path: str, contents: list[dict], *, raw: bytes | None = None) -> httpx.Response:
        if self.key_in_query:
            path += ("&" if "?" in path else "?") + f"key={self.api_key}"
        body = raw if raw is not None else json.dumps({"contents": contents, "tools": TOOLS}).encode()
        headers = {**self.headers, "content-type": "application/json"}
        return httpx.post(self.base_url + path, content=body, headers=headers, timeout=30)

    def turn(self, path: str, contents: list[dict]) -> dict:
        """Runs one request and returns the model content as the client assembles it."""
        response = self.post(path, contents)
        assert response.status_code == 200, response.text
        return assemble(response)


def assemble(response: httpx.Response) -> dict:
    """The model content of an answer; streamed text pieces merged into one part, as pydantic-ai does."""
    if response.headers["content-type"].startswith("text/event-stream"):
        docs = [json.loads(line[5:]) for line in response.text.split("\r\n") if line.startswith("data:")]
    else:
        body = response.json()
        docs = body if isinstance(body, list) else [body]
    parts: list[dict] = []
    for doc in docs:
        for part in doc["candidates"][0]["content"]["parts"]:
            previous = parts[-1] if parts else None
            if previous is not None and "text" in previous and "text" in part:
                if previous.get("thought") == part.get("thought"):
                    previous["text"] += part["text"]
                    if "thoughtSignature" in part:
                        previous.setdefault("thoughtSignature", part["thoughtSignature"])
                    continue
            if part.get("text") != "" or "thoughtSignature" in part:
                parts.append(dict(part))
    return {"role": "model", "parts": parts}


def dropped(content: dict) -> dict:
    """The model content as a client that drops thoughts and signatures sends it back."""
    parts = [{k: v for k, v in p.items() if k != "thoughtSignature"} for p in content["parts"] if not p.get("thought")]
    return {"role": "model", "parts": parts}


def results_for(content: dict) -> dict:
    parts = []
    for part in content["parts"]:
        if "functionCall" in part:
            call = part["functionCall"]
            result = {"name": call["name"], "response": {"result": "a.txt\nb.txt"}}
            if "id" in call:
                result["id"] = call["id"]
            parts.append({"functionResponse": result})
    return {"role": "user", "parts": parts}


def calls_of(content: dict) -> list[dict]:
    return [p for p in content["parts"] if "functionCall" in p]


def answer_text(content: dict) -> str:
    return "".join(p.get("text", "") for p in content["parts"] if not p.get("thought"))


def error_of(message: str) -> dict:
    return {"error": {"code": 400, "message": message, "status": "INVALID_ARGUMENT"}}


def last_request(fake: FakeProvider, api_key: str) -> Recorded:
    """The latest request the fake received with this credential."""
    return next(
        r
        for r in reversed(list(fake.requests))
        if r.headers.get("x-goog-api-key") == api_key or f"key={api_key}" in r.path
    )


def events_for(log: Path, model: str, kind: str) -> list[dict]:
    """The event log's lines of one kind for requests to `model`, once there is one (LogTail waits up to 60 s)."""
    return LogTail(log, whole=True).wait_for(kind, where=lambda e: f"/models/{model}:" in e.get("url", ""))


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.mark.parametrize("mode", ["plain", "sse", "array"])
@pytest.mark.parametrize("parallel", ["1", "2"], ids=["one-call", "parallel-calls"])
def test_turn_two_gets_its_signature_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, mode: str, parallel: str
) -> None:
    path = route(mode=mode)
    proxied = GeminiClient(proxy.url, api_key, parallel=parallel)
    turn = proxied.turn(path, [QUESTION])
    calls = calls_of(turn)
    assert len(calls) == int(parallel)
    signature = calls[0]["thoughtSignature"]
    assert fake.gemini.issued[signature] == {
        "name": "list_directory",
        "args": {"path": "step0/dir0"},
        "id": None,
        "model": MODEL,
    }
    assert [("thoughtSignature" in c) for c in calls] == [True] + [False] * (len(calls) - 1)

    history = [QUESTION, dropped(turn), results_for(turn)]
    direct = GeminiClient(fake.url, api_key).post(path, history)
    assert direct.status_code == 400
    assert direct.json() == error_of(GEMINI_API_MISSING.format(position=2))

    assert answer_text(proxied.turn(path, history)) == ANSWER
    sent = last_request(fake, api_key).doc["contents"]
    assert sent[1]["parts"][0] == {"functionCall": calls[0]["functionCall"], "thoughtSignature": signature}
    assert sent[1]["parts"][1:] == history[1]["parts"][1:]
    assert sent[0] == QUESTION and sent[2] == history[2]


def test_vertex_ai_path(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    path = route(mode="sse", vertex=True)
    proxied = GeminiClient(proxy.url, api_key)
    turn = proxied.turn(path, [QUESTION])
    signature = calls_of(turn)[0]["thoughtSignature"]
    history = [QUESTION, dropped(turn), results_for(turn)]
    direct = GeminiClient(fake.url, api_key).post(path, history)
    assert direct.status_code == 400
    assert direct.json() == error_of(VERTEX_MISSING.format(position=2))

    assert answer_text(proxied.turn(path, history)) == ANSWER
    assert last_request(fake, api_key).doc["contents"][1]["parts"][0]["thoughtSignature"] == signature


def test_multi_step_tool_loop(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """Three tool steps in one turn, the client dropping every signature each time."""
    path = route(mode="sse")
    proxied = GeminiClient(proxy.url, api_key, steps="3", parallel="2")
    history = [QUESTION]
    for step in range(3):
        turn = proxied.turn(path, history)
        assert [c["functionCall"]["args"]["path"] for c in calls_of(turn)] == [f"step{step}/dir0", f"step{step}/dir1"]
        history += [dropped(turn), results_for(turn)]
    assert answer_text(proxied.turn(path, history)) == ANSWER
    sent = last_request(fake, api_key).doc["contents"]
    for index in (1, 3, 5):
        first, second = sent[index]["parts"]
        issued = fake.gemini.issued[first["thoughtSignature"]]
        assert issued["args"] == first["functionCall"]["args"]
        assert "thoughtSignature" not in second


def test_call_ids_match_by_id_and_the_event_log_shows_capture_and_repair(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    model = f"gemini-3-pro-preview-{uuid.uuid4().hex[:8]}"  # names this test's lines in the shared log
    path = route(mode="sse", model=model)
    proxied = GeminiClient(proxy.url, api_key, call_ids="1")
    turn = proxied.turn(path, [QUESTION])
    (call,) = calls_of(turn)
    call_id, signature = call["functionCall"]["id"], call["thoughtSignature"]
    history = [QUESTION, dropped(turn), results_for(turn)]
    assert answer_text(proxied.turn(path, history)) == ANSWER
    assert last_request(fake, api_key).doc["contents"][1]["parts"][0]["thoughtSignature"] == signature

    log = proxy_state / "events.jsonl"
    captured = events_for(log, model, "captured")
    first = next(e for e in captured if e["tool_calls"])
    assert first["wire_format"] == "gemini_native" and first["request_model"] == model
    assert first["streamed"] is True and first["complete"] is True and first["stored"] is True
    (summary,) = first["tool_calls"]
    assert (summary["id"], summary["name"]) == (call_id, "list_directory")
    assert summary["fields"]["thoughtSignature"] == {"length": len(signature), "sha256": digest(signature)}
    (repaired,) = events_for(log, model, "repaired")
    assert repaired["applied"] is True
    assert repaired["actions"] == [
        {
            "kind": "restored",
            "location": "contents[1].parts[0]",
            "index": 1,
            "fields": ["thoughtSignature"],
            "tool_call_id": call_id,
            "response_id": repaired["actions"][0]["response_id"],
            "via": "id",
            "degraded": False,
        }
    ]
    assert repaired["actions"][0]["response_id"]


@pytest.mark.parametrize(
    "vertex, expected", [(False, SKIP_BASE64), (True, "skip_thought_signature_validator")], ids=["gemini-api", "vertex"]
)
def test_cache_miss_gets_the_documented_placeholder(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, vertex: bool, expected: str
) -> None:
    model = f"gemini-3-pro-preview-{uuid.uuid4().hex[:8]}"
    path = route(mode="plain", vertex=vertex, model=model)
    turn = GeminiClient(fake.url, api_key).turn(path, [QUESTION])  # turn 1 bypassed the proxy: nothing cached
    history = [QUESTION, dropped(turn), results_for(turn)]
    assert answer_text(GeminiClient(proxy.url, api_key).turn(path, history)) == ANSWER
    assert last_request(fake, api_key).doc["contents"][1]["parts"][0]["thoughtSignature"] == expected
    assert {"path": path, "content": 1, "part": 0, "value": expected} in fake.gemini.placeholders
    (repaired,) = events_for(proxy_state / "events.jsonl", model, "repaired")
    (action,) = repaired["actions"]
    assert (action["kind"], action["location"], action["degraded"]) == ("placeholder", "contents[1].parts[0]", True)


@pytest.mark.slow
@pytest.mark.parametrize(
    "setting, status",
    [("off", 400), ("Y29udGV4dF9lbmdpbmVlcmluZ19pc190aGVfd2F5X3RvX2dv", 200)],
    ids=["off", "custom"],
)
def test_placeholder_setting(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str, setting: str, status: int
) -> None:
    path = route(mode="sse")
    turn = GeminiClient(fake.url, api_key).turn(path, [QUESTION])
    history = [QUESTION, dropped(turn), results_for(turn)]
    with reverse_proxy(
        fake.url,
        confdir,
        llm_cache="memory",
        llm_log=tmp_path / "events.jsonl",
        llm_signature_placeholder=setting,
    ) as own:
        response = GeminiClient(own.url, api_key).post(path, history)
    assert response.status_code == status
    sent = last_request(fake, api_key).doc["contents"][1]["parts"][0]
    if status == 400:
        assert response.json() == error_of(GEMINI_API_MISSING.format(position=2))
        assert "thoughtSignature" not in sent
    else:
        assert sent["thoughtSignature"] == setting
        assert answer_text(assemble(response)) == ANSWER


def test_requests_that_need_nothing_reach_the_provider_byte_identical(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    path = route(mode="plain")
    proxied = GeminiClient(proxy.url, api_key, key_in_query=True)
    first = json.dumps({"contents": [QUESTION], "tools": TOOLS}, indent=1).encode()  # not how the proxy writes JSON
    response = proxied.post(path, [], raw=first)
    assert response.status_code == 200
    assert last_request(fake, api_key).body == first

    turn = assemble(response)
    kept = json.dumps({"contents": [QUESTION, turn, results_for(turn)], "tools": TOOLS}, indent=1).encode()
    response = proxied.post(path, [], raw=kept)
    assert response.status_code == 200 and answer_text(assemble(response)) == ANSWER
    assert last_request(fake, api_key).body == kept


def test_a_signature_the_client_sent_is_never_replaced(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    path = route(mode="sse")
    proxied = GeminiClient(proxy.url, api_key)
    turn = proxied.turn(path, [QUESTION])
    signature = calls_of(turn)[0]["thoughtSignature"]
    url_safe = base64.urlsafe_b64encode(base64.b64decode(signature)).decode()

    resent = [QUESTION, turn, results_for(turn)]
    resent[1]["parts"][0]["thoughtSignature"] = url_safe  # re-encoded: the same bytes, which Gemini accepts
    assert proxied.post(path, resent).status_code == 200
    assert last_request(fake, api_key).doc["contents"][1]["parts"][0]["thoughtSignature"] == url_safe

    bogus = base64.b64encode(b"not a signature the provider issued").decode()
    resent[1]["parts"][0]["thoughtSignature"] = bogus
    response = proxied.post(path, resent)
    assert response.status_code == 400
    assert response.json() == error_of("Thought signature is not valid.")
    assert last_request(fake, api_key).doc["contents"][1]["parts"][0]["thoughtSignature"] == bogus
