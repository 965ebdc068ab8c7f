"""End to end: the proxy explains the 400s it cannot prevent, and forgets values a provider refused."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import openai
import pytest

from tests.e2e_helpers import client, first_turn, history_as_sent, logged_events, second_turn
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
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
