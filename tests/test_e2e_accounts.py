"""End to end: reasoning stays with the account across a credential that rotates, and with nobody else.

GitHub Copilot clients exchange their API token again about every 25 minutes; the account behind it stays. A
tool loop that goes on across the refresh is still repaired, and a token of another account that sends the same
history is not. A Google OAuth access token names no account the proxy can read: when it rotates, its scope ends
(as it always did), and the proxy says so.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider, Recorded
from tests.support.planted import ACCOUNT, ORG_ACCOUNT, copilot_token, planted
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import QUESTION, TOOLS, client

pytestmark = pytest.mark.e2e

COPILOT_GEMINI = "gemini-3-pro-preview"
ANSWER = "The directory holds two files."


class CopilotAccount:
    """One Copilot account: each `token()` is what the client holds after one more refresh (new exp, iat and MAC)."""

    def __init__(self, tid: str, account: dict[str, str]) -> None:
        self.tid, self.account = tid, account
        self.issued = int(time.time())

    def token(self) -> str:
        self.issued += 1500
        mac = hashlib.sha256(f"{self.tid}:{self.issued}".encode()).hexdigest()
        issue = {"iat": str(self.issued), "ip": "203.0.113.7", "asn": "AS64500"}
        return copilot_token(self.tid, exp=self.issued + 1800, mac=mac, account=self.account, issue=issue)


def sent_with(fake: FakeProvider, token: str) -> Recorded:
    """The latest request that reached the fake with this token."""
    return fake.find("authorization", f"Bearer {token}")[-1]


def repaired_calls(log: LogTail, call_ids: list[str]) -> list[dict[str, Any]]:
    """The `repaired` event of this test's request that restored every one of `call_ids`, once it is written."""

    def restores_all(event: dict[str, Any]) -> bool:
        return set(call_ids) <= {a.get("tool_call_id") for a in event["actions"] if a["kind"] == "restored"}

    return log.wait_for("repaired", where=restores_all)


def step(llm: openai.OpenAI, messages: list[dict[str, Any]]) -> openai.types.chat.ChatCompletionMessage:
    return llm.chat.completions.create(model=COPILOT_GEMINI, messages=messages, tools=TOOLS).choices[0].message


def as_zed_sends_it(reply: openai.types.chat.ChatCompletionMessage) -> list[dict[str, Any]]:
    """A tool step as a client that drops `reasoning_opaque` and `reasoning_text` puts it in the history."""
    calls = [{"id": c.id, "type": "function", "function": c.function.model_dump()} for c in reply.tool_calls or []]
    assert calls, "the step should call a tool"
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "a.txt\nb.txt"} for c in calls]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, *results]


OTHER_ACCOUNTS: dict[str, Callable[[str], CopilotAccount]] = {
    "another tid": lambda tid: CopilotAccount(uuid.uuid4().hex, ORG_ACCOUNT),
    "same tid, another sku": lambda tid: CopilotAccount(tid, ORG_ACCOUNT | {"sku": "copilot_for_business_seat"}),
    "same tid, another layout": lambda tid: CopilotAccount(tid, ACCOUNT),
}


@pytest.mark.slow
def test_a_copilot_token_refreshed_in_the_middle_of_a_tool_loop_keeps_the_loop_repaired(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path
) -> None:
    log = LogTail(proxy_state / "events.jsonl")
    tid = uuid.uuid4().hex
    account = CopilotAccount(tid, ORG_ACCOUNT)
    first = account.token()
    messages = [QUESTION]

    # Step 1 of the loop, with the token the client holds now.
    reply = step(client(proxy.url, first, steps="3"), messages)
    one = [c.id for c in reply.tool_calls or []]
    assert getattr(reply, "reasoning_opaque", None) == fake.issued[one[0]]["reasoning_opaque"]
    messages += as_zed_sends_it(reply)

    # The client refreshes its token: same account, new exp, iat and MAC. Sent straight to the provider, the history
    # without the opaque is refused; through the proxy, step 2 gets it back.
    second = account.token()
    with pytest.raises(openai.BadRequestError, match=r"in the 2\. content block is missing a `thought_signature`"):
        step(client(fake.url, second, steps="3"), messages)
    reply = step(client(proxy.url, second, steps="3"), messages)
    two = [c.id for c in reply.tool_calls or []]
    assert sent_with(fake, second).doc["messages"][1]["reasoning_opaque"] == fake.issued[one[0]]["reasoning_opaque"]
    (repaired,) = repaired_calls(log, one)
    assert [a["via"] for a in repaired["actions"] if a["kind"] == "restored"] == ["id"]
    messages += as_zed_sends_it(reply)

    # Another refresh before step 3: what was captured under both earlier tokens comes back.
    third = account.token()
    reply = step(client(proxy.url, third, steps="3"), messages)
    assert reply.tool_calls, "step 3 should call a tool"
    sent = sent_with(fake, third).doc["messages"]
    opaques = [m.get("reasoning_opaque") for m in sent if m.get("tool_calls")]
    assert opaques == [fake.issued[one[0]]["reasoning_opaque"], fake.issued[two[0]]["reasoning_opaque"]]
    (repaired,) = repaired_calls(log, two)
    assert repaired["again_by_kind"].get("restored") == 1  # step 1's value, listed when it was first restored

    # Tokens of other accounts sending the same history get nothing: the provider's own 400.
    for name, other in OTHER_ACCOUNTS.items():
        stranger = other(tid).token()
        with pytest.raises(openai.BadRequestError, match="missing a `thought_signature`"):
            step(client(proxy.url, stranger, steps="3"), messages)
        sent = sent_with(fake, stranger).doc["messages"]
        assert not any("reasoning_opaque" in m for m in sent), name

    # And the account's next token still gets everything back: the refusals dropped nothing.
    fourth = account.token()
    assert step(client(proxy.url, fourth, steps="2"), messages).content == ANSWER
    assert [m.get("reasoning_opaque") for m in sent_with(fake, fourth).doc["messages"] if m.get("tool_calls")] == [
        fake.issued[call]["reasoning_opaque"] for call in (one[0], two[0])
    ]


# --- a credential that rotates with no account in it ---------------------------------------------

VERTEX_TOOLS = [
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
VERTEX_QUESTION = {"role": "user", "parts": [{"text": QUESTION["content"]}]}
VERTEX_PLACEHOLDER = "skip_thought_signature_validator"


def vertex_post(base_url: str, path: str, token: str, contents: list[dict[str, Any]]) -> httpx.Response:
    """Vertex AI as its clients call it: the project in the path, a Google OAuth access token as the bearer."""
    body = {"contents": contents, "tools": VERTEX_TOOLS}
    return httpx.post(base_url + path, json=body, headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_a_vertex_oauth_token_that_rotates_ends_its_scope_and_the_proxy_says_so(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path
) -> None:
    """The project in the path does not tell apart the people who use it, and the token names nobody: reasoning
    captured under one token stays with that token."""
    model = f"gemini-3-pro-preview-{uuid.uuid4().hex[:8]}"
    path = f"/v1/projects/demo-{uuid.uuid4().hex[:8]}/locations/global/publishers/google/models/{model}:generateContent"
    token, rotated = (planted("ya29.", f"a0AfB_{uuid.uuid4().hex}") for _ in range(2))
    log = LogTail(proxy_state / "events.jsonl")

    first = vertex_post(proxy.url, path, token, [VERTEX_QUESTION])
    assert first.status_code == 200, first.text
    parts = first.json()["candidates"][0]["content"]["parts"]
    signature = parts[0]["thoughtSignature"]
    calls = [{"functionCall": p["functionCall"]} for p in parts if "functionCall" in p]
    results = [
        {"functionResponse": {"name": c["functionCall"]["name"], "response": {"result": "a.txt"}}} for c in calls
    ]
    history = [VERTEX_QUESTION, {"role": "model", "parts": calls}, {"role": "user", "parts": results}]

    # After the rotation the cache has nothing for this caller: the proxy sends Google's placeholder (degraded).
    assert vertex_post(proxy.url, path, rotated, history).status_code == 200
    assert fake.find("authorization", f"Bearer {rotated}")[-1].doc["contents"][1]["parts"][0]["thoughtSignature"] == (
        VERTEX_PLACEHOLDER
    )
    (degraded,) = log.wait_for("repaired", where=lambda e: f"/models/{model}:" in e["url"])
    assert [a["kind"] for a in degraded["actions"]] == ["placeholder"]
    # The token it was captured under still gets the real signature back.
    assert vertex_post(proxy.url, path, token, history).status_code == 200
    assert fake.find("authorization", f"Bearer {token}")[-1].doc["contents"][1]["parts"][0]["thoughtSignature"] == (
        signature
    )

    # Once per host and kind of credential (an earlier test of the session may have been the first to say it).
    host = fake.url.removeprefix("http://")
    said = f"llm scope: requests to {host} carry a Google OAuth access token (ya29.…), which rotates"
    proxy.wait_for_line(said)
    assert sum(said in line for line in proxy.lines) == 1
    assert not any(token in line or rotated in line for line in proxy.lines)
