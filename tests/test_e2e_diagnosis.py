"""End to end: the proxy explains the 400s it cannot prevent, and forgets values a provider refused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess, reverse_proxy
from tests.support.turns import QUESTION as CHAT_QUESTION
from tests.support.turns import client, first_turn, history_as_sent, logged_events, second_turn
from tests.test_e2e_anthropic import TOOLS as ANTHROPIC_TOOLS
from tests.test_e2e_gemini import QUESTION, GeminiClient, dropped, results_for, route

pytestmark = pytest.mark.e2e
GEMINI = "gemini-3-pro-preview"


def test_a_400_the_proxy_could_not_prevent_is_explained(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    # Turn 1 went straight to the provider: the proxy never saw the reasoning it needs.
    turn = first_turn(client(fake.url, api_key), GEMINI, stream=False)
    call_id = turn["tool_calls"][0]["id"]
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    with pytest.raises(openai.BadRequestError, match=r"in the 2\. content block is missing a `thought_signature`"):
        second_turn(client(proxy.url, api_key), GEMINI, messages, stream=False)

    (event,) = logged_events(proxy_state / "events.jsonl", "diagnosed", call_id)
    assert event["rule"] == "vertex_signature_missing" and event["problem"] == "missing"
    assert event["location"] == "messages[1]" and event["tool_call_ids"] == [call_id]
    assert event["cache_had"] is False and event["repaired"] is False
    assert "never saw the answer that produced this tool call" in event["advice"]
    line = proxy.wait_for_line(f"(tool call {call_id})")
    assert "llm 400 from" in line and "at messages[1]" in line


def test_an_unknown_error_is_logged_with_its_text_not_guessed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path
) -> None:
    body = b'{"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}'  # cut short: the fake says so
    first_line = len(proxy.lines)
    httpx.post(f"{proxy.url}/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    line = proxy.wait_for_line("not a known reasoning error", since=first_line)
    assert "We could not parse the JSON body of your request." in line
    events = [json.loads(x) for x in (proxy_state / "events.jsonl").read_text().splitlines()]
    unknown = [e for e in events if e["kind"] == "diagnosed" and e["rule"] == "unknown"]
    assert any("could not parse" in e["message"] for e in unknown)


@pytest.mark.slow
def test_a_refused_signature_is_dropped_from_the_cache(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    """A value stored corrupted (or revoked upstream) must not break every later turn."""
    log = tmp_path / "events.jsonl"
    path = route(mode="sse")
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={log}")
    with MitmdumpProcess(*args, confdir=confdir) as proxy:
        gemini = GeminiClient(proxy.url, api_key)
        turn = gemini.turn(path, [QUESTION])
        signature = turn["parts"][0]["thoughtSignature"]
        fake.gemini.revoked.add(signature)
        history = [QUESTION, dropped(turn), results_for(turn)]

        refused = gemini.post(path, history)  # the proxy puts the (now bad) signature back
        assert refused.status_code == 400 and "Thought signature is not valid." in refused.text
        proxy.wait_for_line("llm dropped 1 cache entry the provider refused")

        retried = gemini.post(path, history)  # nothing cached any more: the placeholder lets it through
        assert retried.status_code == 200, retried.text
    events = [json.loads(line) for line in log.read_text().splitlines()]
    (diagnosed,) = [e for e in events if e["kind"] == "diagnosed"]
    assert diagnosed["rule"] == "signature_invalid" and diagnosed["healed"] == 1
    assert "refused a value the proxy put back" in diagnosed["advice"]
    repairs = [e for e in events if e["kind"] == "repaired"]
    assert [a["kind"] for a in repairs[0]["actions"]] == ["restored"]
    assert [(a["kind"], a["degraded"]) for a in repairs[1]["actions"]] == [("placeholder", True)]


def test_copilots_bare_invalid_request_body_is_located_by_the_requests_own_check(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """Copilot's bare `invalid_request_body` names no place: the check of the request as sent does."""
    turn = first_turn(client(fake.url, api_key), GEMINI, stream=False)  # the proxy never saw turn 1
    call_id = turn["tool_calls"][0]["id"]
    messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
    log = LogTail(proxy_state / "events.jsonl")
    with pytest.raises(openai.BadRequestError, match="invalid request body"):
        second_turn(client(proxy.url, api_key, bare="1"), GEMINI, messages, stream=False)

    (event,) = log.wait_for("diagnosed", where=lambda e: call_id in e["tool_call_ids"])
    assert event["rule"] == "copilot_invalid_request_body" and event["problem"] == "missing"
    assert event["location"] == "messages[1]" and event["function"] == "list_directory"
    assert event["findings"] == [
        "messages[1]: current-turn function call without its thought signature (reasoning_opaque missing) "
        f"(tool call {call_id})"
    ]
    assert event["cache_had"] is False and event["repaired"] is False
    assert "never saw the answer that produced this tool call" in event["advice"]


@pytest.mark.slow
def test_with_repair_off_the_diagnosis_says_what_the_proxy_would_have_restored(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    """The README's capture recipe: with llm_repair=false the 400 is the client's fault only if the proxy could
    not have fixed it."""
    log = tmp_path / "events.jsonl"
    with reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log=log, llm_repair="false") as proxy:
        llm = client(proxy.url, api_key, bare="1")
        turn = first_turn(llm, GEMINI, stream=True)  # captured by the proxy
        call_id = turn["tool_calls"][0]["id"]
        messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=None)
        with pytest.raises(openai.BadRequestError, match="invalid request body"):
            second_turn(llm, GEMINI, messages, stream=False)
        proxy.wait_for_line("would repair (llm_repair=false)")
        (event,) = LogTail(log, whole=True).wait_for("diagnosed", where=lambda e: call_id in e["tool_call_ids"])
    assert event["rule"] == "copilot_invalid_request_body" and event["location"] == "messages[1]"
    assert event["cache_had"] is True and event["repaired"] is False and event["healed"] == 0
    advice = event["advice"]
    assert advice.startswith("repair is off (llm_repair=false), and the proxy would have restored ")
    assert "reasoning_opaque" in advice and advice.endswith("turn repair on (--set llm_repair=true)")
    assert "start a new conversation" not in advice


def test_anthropics_block_binding_names_the_message_its_tool_call_and_what_changed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """Claude Fable 5.1 binds a thinking block to the system prompt it was created under."""
    body = {
        "model": "claude-fable-5-1",
        "max_tokens": 4096,
        "system": "You are terse.",
        "thinking": {"type": "adaptive"},
        "tools": ANTHROPIC_TOOLS,
        "messages": [CHAT_QUESTION],
    }
    headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
    first = httpx.post(f"{proxy.url}/v1/messages", json=body, headers=headers, timeout=30)
    assert first.status_code == 200, first.text
    use = first.json()["content"][-1]
    result = {"type": "tool_result", "tool_use_id": use["id"], "content": "a.txt\nb.txt"}
    assistant = {"role": "assistant", "content": first.json()["content"]}
    history = [CHAT_QUESTION, assistant, {"role": "user", "content": [result]}]
    log = LogTail(proxy_state / "events.jsonl")
    second = httpx.post(
        f"{proxy.url}/v1/messages",
        json=body | {"system": "You are verbose.", "messages": history},
        headers=headers,
        timeout=30,
    )
    assert second.status_code == 400 and "bound to a different conversation" in second.text

    (event,) = log.wait_for("diagnosed", where=lambda e: use["id"] in e["tool_call_ids"])
    assert (event["rule"], event["problem"], event["cause"]) == ("anthropic_block_binding", "foreign", "system prompt")
    assert event["location"] == "messages[1]" and event["tool_call_ids"] == [use["id"]]
    assert event["function"] == "list_directory" and event["cache_had"] is True and event["repaired"] is False
    assert event["advice"].startswith("the system prompt changed since the thinking block was issued")
