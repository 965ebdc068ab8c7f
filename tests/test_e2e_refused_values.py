"""End to end: a provider refuses a signed or encrypted value the client sent back, and the proxy's diagnosis names
the item or part and says whose value it was, held against what the proxy captured (a real mitmdump, the fakes'
rules and texts)."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests import test_e2e_gemini as gemini
from tests import test_e2e_responses as responses
from tests import test_e2e_xai as xai
from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import client

pytestmark = pytest.mark.e2e
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])


def diagnosed(proxy_state: Path, item_id: str) -> dict:
    """The diagnosed event that names `item_id`, once it is written."""
    log = LogTail(proxy_state / "events.jsonl", whole=True)
    (event,) = log.wait_for("diagnosed", where=lambda e: item_id in e["item_ids"] + e["tool_call_ids"])
    return event


def tampered(value: str) -> str:
    """An encrypted value with its last characters changed, as a client that re-encodes it might send it."""
    return value[:-8] + ("AAAAAAA=" if not value.endswith("AAAAAAA=") else "BBBBBBB=")


# --- OpenAI Responses: store false, a reasoning item sent by its id alone --------------------------------


@STREAM
def test_an_item_sent_by_id_alone_without_include_is_explained_by_the_request(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """Without `include`, OpenAI never returns the encrypted_content: neither the client nor the proxy holds it, and
    the diagnosis says so instead of blaming a value."""
    proxied = client(proxy.url, api_key)
    _, output, _ = responses.create(proxied, [responses.QUESTION], stream=stream, include=[])
    reasoning, call = output
    assert "encrypted_content" not in reasoning  # the fake, as OpenAI: only when asked for
    turn_two = [responses.QUESTION, {"type": "reasoning", "id": reasoning["id"]}, call, *responses.results(output)]
    with pytest.raises(openai.NotFoundError, match=f"Item with id '{reasoning['id']}' not found"):
        responses.create(proxied, turn_two, stream=stream, include=[])

    event = diagnosed(proxy_state, reasoning["id"])
    assert event["rule"] == "responses_item_not_found" and event["location"] == "input[1]"
    assert event["item_ids"] == [reasoning["id"]] and event["tool_call_ids"] == [call["call_id"]]
    assert event["advice"].startswith("the request sets `store: false` but does not ask for `include: [")
    assert "or send `store: true`" in event["advice"]
    line = proxy.wait_for_line(f"at input[1] (reasoning item {reasoning['id']}")
    assert 'ask for `include: ["reasoning.encrypted_content"]` with `store: false`' in line


# --- OpenAI Responses: invalid_encrypted_content -----------------------------------------------------


@STREAM
def test_encrypted_content_the_client_altered_is_named_and_blamed_on_the_client(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """OpenAI's text quotes only the ends of the value: the item is found by them, and its value held against the
    one the proxy captured."""
    proxied = client(proxy.url, api_key)
    _, output, _ = responses.create(proxied, [responses.QUESTION], stream=stream)
    reasoning, call = output
    altered = {**reasoning, "encrypted_content": tampered(reasoning["encrypted_content"])}
    with pytest.raises(openai.BadRequestError) as refused:
        responses.create(proxied, [responses.QUESTION, altered, call, *responses.results(output)], stream=stream)
    assert refused.value.body["code"] == "invalid_encrypted_content"

    event = diagnosed(proxy_state, reasoning["id"])
    assert event["rule"] == "responses_encrypted_content_invalid" and event["location"] == "input[1]"
    assert event["item_ids"] == [reasoning["id"]] and event["healed"] == 0
    assert "the client altered it" in event["advice"]
    proxy.wait_for_line(f"at input[1] (reasoning item {reasoning['id']}, tool call {call['call_id']})")

    # The proxy's copy is good: a client that sends the item as issued goes on.
    turn_two = [responses.QUESTION, reasoning, call, *responses.results(output)]
    assert responses.create(proxied, turn_two, stream=stream)[2] == responses.FINAL_ANSWER


@STREAM
def test_encrypted_content_refused_as_issued_is_not_the_clients_fault(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """OpenAI refusing its own values (2025-12-16), in the 2026 wording that names the item."""
    proxied = client(proxy.url, api_key, wording="2026")
    _, output, _ = responses.create(proxied, [responses.QUESTION], stream=stream)
    reasoning, call = output
    fake.responses.revoked.add(reasoning["encrypted_content"])
    with pytest.raises(openai.BadRequestError, match=f"The encrypted content for item {reasoning['id']} could not"):
        responses.create(proxied, [responses.QUESTION, reasoning, call, *responses.results(output)], stream=stream)

    event = diagnosed(proxy_state, reasoning["id"])
    assert event["location"] == "input[1]" and event["healed"] == 0
    assert "OpenAI refused its own value" in event["advice"] and "not the client's fault" in event["advice"]


# --- xAI: "Could not decrypt the provided encrypted_content" -------------------------------------------


@STREAM
def test_xai_names_the_reasoning_item_whose_value_the_client_altered(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    """xAI's text names nothing: the one item whose value differs from the proxy's capture is named."""
    proxied = xai.client(proxy.url, api_key)
    _, output, _, _ = xai.create(proxied, [xai.QUESTION], stream=stream)
    reasoning, call = output
    altered = {**reasoning, "encrypted_content": tampered(reasoning["encrypted_content"])}
    with pytest.raises(openai.BadRequestError) as refused:
        xai.create(proxied, [xai.QUESTION, altered, call, *xai.results(output)], stream=stream)
    assert xai.refusal(refused.value)["error"] == xai.UNDECRYPTABLE

    event = diagnosed(proxy_state, reasoning["id"])
    assert event["provider"] == "xai" and event["location"] == "input[1]"
    assert "the client altered it" in event["advice"]

    fake.xai.revoked.add(reasoning["encrypted_content"])  # xAI refusing its own value
    log = LogTail(proxy_state / "events.jsonl")
    with pytest.raises(openai.BadRequestError):
        xai.create(proxied, [xai.QUESTION, reasoning, call, *xai.results(output)], stream=stream)
    (event,) = log.wait_for("diagnosed", where=lambda e: e["provider"] == "xai")
    assert "refused its own value: not the client's fault" in event["advice"]


# --- Gemini: "Corrupted thought signature." ----------------------------------------------------------


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
@pytest.mark.parametrize("mode", ["plain", "sse"], ids=["plain", "streamed"])
def test_a_corrupted_thought_signature_names_the_part_the_client_changed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, mode: str, vertex: bool
) -> None:
    """A signature from another model's answer, which the proxy never saw, in place of the one it captured."""
    path = gemini.route(mode=mode, vertex=vertex)
    proxied = gemini.GeminiClient(proxy.url, api_key, call_ids="1")
    turn = proxied.turn(path, [gemini.QUESTION])
    other = gemini.GeminiClient(fake.url, api_key).turn(
        gemini.route(mode=mode, vertex=vertex, model="gemini-3-flash-preview"), [gemini.QUESTION]
    )
    swapped = {"role": "model", "parts": [dict(part) for part in turn["parts"]]}
    swapped["parts"][0]["thoughtSignature"] = other["parts"][0]["thoughtSignature"]
    refused = proxied.post(path, [gemini.QUESTION, swapped, gemini.results_for(turn)])
    assert refused.status_code == 400
    assert ("Thought signature is not valid" if vertex else "Corrupted thought signature.") in refused.text

    call_id = turn["parts"][0]["functionCall"]["id"]
    event = diagnosed(proxy_state, call_id)
    assert event["rule"] == "signature_invalid" and event["location"] == "contents[1].parts[0]"
    assert event["function"] == "list_directory" and event["tool_call_ids"] == [call_id]
    assert "the client altered it" in event["advice"] and event["healed"] == 0
    proxy.wait_for_line(f"at contents[1].parts[0] (function call `list_directory`, tool call {call_id})")


def signature_of_another_model(fake: FakeProvider, api_key: str, mode: str) -> list[dict]:
    """Turn 2 of a Gemini 3 conversation whose turn 1 went straight to Google, its function call carrying the
    signature of another model's answer: a value the proxy never saw."""
    path = gemini.route(mode=mode)
    turn = gemini.GeminiClient(fake.url, api_key).turn(path, [gemini.QUESTION])
    other = gemini.GeminiClient(fake.url, api_key).turn(
        gemini.route(mode=mode, model="gemini-3-flash-preview"), [gemini.QUESTION]
    )
    swapped = {"role": "model", "parts": [dict(part) for part in turn["parts"]]}
    swapped["parts"][0]["thoughtSignature"] = other["parts"][0]["thoughtSignature"]
    return [gemini.QUESTION, swapped, gemini.results_for(turn)]


@pytest.mark.parametrize("mode", ["plain", "sse"], ids=["plain", "streamed"])
def test_a_corrupted_thought_signature_the_proxy_holds_none_for_says_so(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, mode: str
) -> None:
    """Turn 1 went straight to the provider: no signature the proxy holds differs from the one sent."""
    path = gemini.route(mode=mode)
    contents = signature_of_another_model(fake, api_key, mode)
    log = LogTail(proxy_state / "events.jsonl")
    refused = gemini.GeminiClient(proxy.url, api_key).post(path, contents)
    assert refused.status_code == 400 and "Corrupted thought signature." in refused.text

    (event,) = log.wait_for("diagnosed", where=lambda e: e["rule"] == "signature_invalid" and path in e["url"])
    assert event.get("location") is None
    assert event["advice"].startswith("the proxy holds no value that differs from the one sent for its place")
