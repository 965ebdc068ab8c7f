"""End to end: a user switches models mid-conversation, and the client sends state issued for model X to model Y.

Each fake refuses a value it issued for another model with the provider's own text (Anthropic "Invalid `signature`
in `thinking` block", the Responses API `invalid_encrypted_content`, Gemini "Corrupted thought signature."). Through
a real mitmdump with the addon the proxy, which captured each value and knows who issued it, removes those values
and the provider answers 200; requests for the model that issued them go on byte for byte.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import test_e2e_anthropic as anthropic
from tests import test_e2e_gemini as gemini
from tests import test_e2e_responses as responses
from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.planted import ACCOUNT
from tests.support.proxy import MitmdumpProcess, reverse_proxy
from tests.support.turns import client
from tests.test_e2e_accounts import CopilotAccount

pytestmark = pytest.mark.e2e

CLAUDE_X, CLAUDE_Y = "claude-opus-4-1", "claude-sonnet-4-5"
GPT_X, GPT_Y = "gpt-5", "gpt-5-mini"
GEMINI_X, GEMINI_Y = "gemini-3-pro-preview", "gemini-3-flash-preview"
FOLLOW_UP = "And what is in the other directory?"


def event_for(proxy_state: Path, kind: str, tool_call_id: str) -> dict:
    """The proxy's event of a kind whose actions concern one tool call (LogTail waits for it, up to 60 s)."""

    def concerns(event: dict) -> bool:
        return any(action.get("tool_call_id") == tool_call_id for action in event.get("actions", []))

    (event,) = LogTail(proxy_state / "events.jsonl", whole=True).wait_for(kind, where=concerns)
    return event


def finished_loop(send: Callable[[dict[str, Any]], httpx.Response]) -> tuple[list[dict], str]:
    """A finished tool loop on CLAUDE_X, kept whole by the client, then a new question; and the tool call's id.
    `send` posts one Messages request body."""
    with model_named(anthropic, CLAUDE_X):
        first = anthropic.reply(send(anthropic.request([anthropic.QUESTION], stream=False)), stream=False)
        messages = [anthropic.QUESTION, {"role": "assistant", "content": first["content"]}, anthropic.results(first)]
        second = anthropic.reply(send(anthropic.request(messages, stream=False)), stream=False)
    history = [*messages, {"role": "assistant", "content": second["content"]}, {"role": "user", "content": FOLLOW_UP}]
    return history, anthropic.tool_ids(first)[0]


def anthropic_history(base_url: str, api_key: str) -> tuple[list[dict], str]:
    return finished_loop(lambda body: anthropic.post(base_url, api_key, body))


def anthropic_body(messages: list[dict], model: str) -> bytes:
    return json.dumps(anthropic.request(messages, stream=False) | {"model": model}).encode()


def test_anthropic_thinking_of_another_model_is_removed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    history, call_id = anthropic_history(proxy.url, api_key)
    body = anthropic_body(history, CLAUDE_Y)

    direct = anthropic.post(fake.url, api_key, body)
    assert anthropic.error_message(direct) == "messages.1.content.0: Invalid `signature` in `thinking` block"

    through = anthropic.post(proxy.url, api_key, body)
    assert through.status_code == 200, through.text
    sent = fake.last("/v1/messages").doc["messages"]
    assert sent[1]["content"] == [b for b in history[1]["content"] if b["type"] != "thinking"]
    assert sent[:1] + sent[2:] == history[:1] + history[2:]  # everything else as the client sent it

    repaired = event_for(proxy_state, "repaired", call_id)
    removed = [a for a in repaired["actions"] if a["kind"] == "foreign_removed"]
    assert [(a["location"], a["fields"]) for a in removed] == [("messages[1].content[0]", ["thinking"])]
    assert removed[0]["reason"] == f"issued for model {CLAUDE_X}, not {CLAUDE_Y}"


def test_anthropic_same_model_goes_on_byte_for_byte(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    history, _ = anthropic_history(proxy.url, api_key)
    body = anthropic_body(history, CLAUDE_X)
    through = anthropic.post(proxy.url, api_key, body)
    assert through.status_code == 200, through.text
    assert fake.last("/v1/messages").body == body


def copilot_messages(base_url: str, token: str, body: dict[str, Any] | bytes) -> httpx.Response:
    """Claude through GitHub Copilot's /v1/messages, with its API token."""
    headers = {
        "authorization": f"Bearer {token}",
        "anthropic-version": "2023-06-01",
        "content-type": "application/json",
    }
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(f"{base_url}/v1/messages", content=content, headers=headers, timeout=30)


def test_anthropic_thinking_of_another_copilot_account_is_removed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path
) -> None:
    """Copilot tokens name their account: a block issued to one account and sent with another's token goes; the
    same account's next token, after a refresh, keeps it."""
    one, other = CopilotAccount(uuid.uuid4().hex, ACCOUNT), CopilotAccount(uuid.uuid4().hex, ACCOUNT)
    token = one.token()
    history, call_id = finished_loop(lambda body: copilot_messages(proxy.url, token, body))
    body = anthropic_body(history, CLAUDE_X)

    refreshed = copilot_messages(proxy.url, one.token(), body)
    assert refreshed.status_code == 200, refreshed.text
    assert fake.last("/v1/messages").body == body

    stranger = copilot_messages(proxy.url, other.token(), body)
    assert stranger.status_code == 200, stranger.text
    sent = fake.last("/v1/messages").doc["messages"]
    assert sent[1]["content"] == [b for b in history[1]["content"] if b["type"] != "thinking"]
    (removed,) = [a for a in event_for(proxy_state, "repaired", call_id)["actions"] if a["kind"] == "foreign_removed"]
    assert removed["reason"] == "issued to another account"


def test_a_second_api_key_keeps_its_reasoning(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    """Two API keys may be one organisation's (a rotated key, a second project key), whose provider takes the
    reasoning either got: an account difference the proxy cannot read removes nothing."""
    llm = client(proxy.url, api_key)
    with model_named(responses, GPT_X):
        _, first, _ = responses.create(llm, [responses.QUESTION], stream=False)
        items = [responses.QUESTION, *first, *responses.results(first)]
        _, second, _ = responses.create(llm, items, stream=False)
    history = [*items, *second, {"role": "user", "content": FOLLOW_UP}]
    body = json.dumps({"model": GPT_X, "input": history, "tools": responses.TOOLS} | responses.STATELESS).encode()
    headers = auth(api_key + "-second") | {"content-type": "application/json"}
    through = httpx.post(f"{proxy.url}/v1/responses", content=body, headers=headers, timeout=30)
    assert through.status_code == 200, through.text
    assert fake.last("/v1/responses").body == body


@pytest.fixture(scope="module")
def keeping_proxy(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    state = tmp_path_factory.mktemp("keeping")
    with reverse_proxy(
        fake.url,
        confdir,
        llm_cache=str(state / "cache.db"),
        llm_log=str(state / "events.jsonl"),
        llm_remove_foreign="false",
    ) as process:
        process.state = state  # type: ignore[attr-defined]
        yield process


@pytest.mark.slow
def test_with_removal_off_the_provider_refuses(
    fake: FakeProvider, keeping_proxy: MitmdumpProcess, api_key: str
) -> None:
    history, call_id = anthropic_history(keeping_proxy.url, api_key)
    body = anthropic_body(history, CLAUDE_Y)
    through = anthropic.post(keeping_proxy.url, api_key, body)
    assert anthropic.error_message(through) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    assert fake.last("/v1/messages").body == body
    # The diagnosis knows where the refused block came from, and what would have removed it.
    (diagnosed,) = LogTail(keeping_proxy.state / "events.jsonl", whole=True).wait_for(
        "diagnosed", where=lambda e: e["location"] == "messages[1]" and call_id in e["tool_call_ids"]
    )
    assert diagnosed["advice"] == (
        f"the proxy saw the thinking there issued for model {CLAUDE_X}, not {CLAUDE_Y}; with "
        "llm_remove_foreign=true (the default) it removes such values"
    )


def test_a_switch_inside_a_tool_loop_is_explained(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    """The current tool loop's last assistant message must start with its thinking: a block another model signed
    there cannot go, so the provider refuses it, and the diagnosis says why and what to do."""
    with model_named(anthropic, CLAUDE_X):
        first = anthropic.reply(
            anthropic.post(proxy.url, api_key, anthropic.request([anthropic.QUESTION], stream=False)), stream=False
        )
    call_id = anthropic.tool_ids(first)[0]
    messages = [anthropic.QUESTION, {"role": "assistant", "content": first["content"]}, anthropic.results(first)]
    body = anthropic_body(messages, CLAUDE_Y)
    through = anthropic.post(proxy.url, api_key, body)
    assert anthropic.error_message(through) == "messages.1.content.0: Invalid `signature` in `thinking` block"
    assert fake.last("/v1/messages").body == body

    (diagnosed,) = LogTail(proxy_state / "events.jsonl", whole=True).wait_for(
        "diagnosed", where=lambda e: call_id in e["tool_call_ids"]
    )
    assert diagnosed["advice"].startswith(
        f"thinking block at messages[1].content[0] issued for model {CLAUDE_X}, not {CLAUDE_Y}; left in place"
    )
    assert "finish the loop on that model" in diagnosed["advice"]


# --- Responses ----------------------------------------------------------------------------------------------


def test_responses_reasoning_of_another_model_is_removed(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    llm = client(proxy.url, api_key)
    with model_named(responses, GPT_X):
        _, first, _ = responses.create(llm, [responses.QUESTION], stream=True)
        items = [responses.QUESTION, *first, *responses.results(first)]
        _, second, _ = responses.create(llm, items, stream=False)
    call_id = next(item["call_id"] for item in first if item["type"] == "function_call")
    history = [*items, *second, {"role": "user", "content": FOLLOW_UP}]
    body = {"model": GPT_Y, "input": history, "tools": responses.TOOLS, **responses.STATELESS}

    direct = httpx.post(f"{fake.url}/v1/responses", json=body, headers=auth(api_key), timeout=30)
    assert direct.status_code == 400, direct.text
    assert direct.json()["error"]["code"] == "invalid_encrypted_content"
    assert direct.json()["error"]["message"].endswith(" could not be verified.")

    through = httpx.post(f"{proxy.url}/v1/responses", json=body, headers=auth(api_key), timeout=30)
    assert through.status_code == 200, through.text
    sent = fake.last("/v1/responses").doc["input"]
    assert sent == [item for item in history if item.get("type") != "reasoning"]

    repaired = event_for(proxy_state, "repaired", call_id)
    removed = [a for a in repaired["actions"] if a["kind"] == "foreign_removed"]
    reasoning_ids = [item["id"] for item in history if item.get("type") == "reasoning"]
    assert [a["fields"] for a in removed] == [[f"reasoning {rs}"] for rs in reasoning_ids]
    assert {a["reason"] for a in removed} == {f"issued for model {GPT_X}, not {GPT_Y}"}


def test_responses_same_model_goes_on_byte_for_byte(fake: FakeProvider, proxy: MitmdumpProcess, api_key: str) -> None:
    llm = client(proxy.url, api_key)
    with model_named(responses, GPT_X):
        _, first, _ = responses.create(llm, [responses.QUESTION], stream=False)
        items = [responses.QUESTION, *first, *responses.results(first)]
        _, second, _ = responses.create(llm, items, stream=False)
    body = json.dumps(
        {"model": GPT_X, "input": [*items, *second, {"role": "user", "content": FOLLOW_UP}], "tools": responses.TOOLS}
        | responses.STATELESS
    ).encode()
    headers = auth(api_key) | {"content-type": "application/json"}
    through = httpx.post(f"{proxy.url}/v1/responses", content=body, headers=headers, timeout=30)
    assert through.status_code == 200, through.text
    assert fake.last("/v1/responses").body == body


# --- Gemini -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("vertex", [False, True], ids=["gemini-api", "vertex"])
def test_gemini_signature_of_another_model_mid_loop(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, vertex: bool
) -> None:
    """Switched in the middle of a tool loop: the signature goes, and the call that needs one gets Google's
    documented placeholder (llm_signature_placeholder=auto), as a call with nothing cached does."""
    llm = gemini.GeminiClient(proxy.url, api_key, call_ids="1")
    turn = llm.turn(gemini.route(vertex=vertex, model=GEMINI_X), [gemini.QUESTION])
    (call,) = gemini.calls_of(turn)
    contents = [gemini.QUESTION, turn, gemini.results_for(turn)]

    direct = gemini.GeminiClient(fake.url, api_key, call_ids="1").post(
        gemini.route(vertex=vertex, model=GEMINI_Y), contents
    )
    assert direct.status_code == 400, direct.text
    expected = "Thought signature is not valid" if vertex else "Corrupted thought signature."
    assert expected in direct.json()["error"]["message"]

    through = llm.post(gemini.route(vertex=vertex, model=GEMINI_Y), contents)
    assert through.status_code == 200, through.text
    sent = fake.last(":generateContent").doc["contents"]
    placeholder = "skip_thought_signature_validator"  # Google's documented value: literal on Vertex, base64 else
    assert sent[1]["parts"][0]["thoughtSignature"] == (
        placeholder if vertex else base64.b64encode(placeholder.encode()).decode()
    )
    assert sent[0] == contents[0] and sent[2] == contents[2]

    call_id = call["functionCall"]["id"]
    kinds = [(a["kind"], a["location"]) for a in event_for(proxy_state, "repaired", call_id)["actions"]]
    assert kinds == [("foreign_removed", "contents[1].parts[0]"), ("placeholder", "contents[1].parts[0]")]


# --- helpers ------------------------------------------------------------------------------------------------


def auth(api_key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"}


class model_named:  # noqa: N801 - used as a context manager, like contextlib's
    """Runs a test module's helpers with another MODEL."""

    def __init__(self, module: Any, model: str) -> None:
        self.module, self.model = module, model

    def __enter__(self) -> None:
        self.before, self.module.MODEL = self.module.MODEL, self.model

    def __exit__(self, *exc: object) -> None:
        self.module.MODEL = self.before
