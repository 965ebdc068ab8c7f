"""End to end: the openai SDK as a Responses client of DeepSeek (`https://api.deepseek.com/responses`), a real
mitmdump with the addon, and the fake DeepSeek Responses route.

DeepSeek's reasoning items carry their text as `reasoning_text` content, with no `encrypted_content`; a client that
drops them gets "The `reasoning_text` in the thinking mode must be passed back to the API." The proxy captures them
like any Responses provider's and puts them back.
"""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.fake_responses import FINAL_ANSWER, REASONING_TEXT_MISSING
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import client
from tests.test_e2e_responses import QUESTION, TOOLS, results, without_reasoning

pytestmark = pytest.mark.e2e

MODEL = "deepseek-v4-flash"
BASE = "/deepseek"  # stands for https://api.deepseek.com, the base DeepSeek documents (the SDK appends /responses)


def create(llm: openai.OpenAI, items: list[dict], *, stream: bool) -> tuple[str, list[dict], str]:
    arguments = {"model": MODEL, "input": items, "tools": TOOLS}  # no store, no include: DeepSeek keeps nothing
    if not stream:
        response = llm.responses.create(**arguments)
        return response.id, [item.to_dict() for item in response.output], response.output_text
    done: dict[int, dict] = {}
    text, response_id = [], ""
    for event in llm.responses.create(**arguments, stream=True):
        if event.type == "response.output_item.done":
            done[event.output_index] = event.item.to_dict()
        elif event.type == "response.output_text.delta":
            text.append(event.delta)
        elif event.type == "response.completed":
            response_id = event.response.id
    return response_id, [done[i] for i in sorted(done)], "".join(text)


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_dropped_reasoning_item_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url + BASE, api_key, path="")
    response_id, output, _ = create(proxied, [QUESTION], stream=stream)
    reasoning, *calls = output
    assert reasoning["content"][0]["type"] == "reasoning_text" and "encrypted_content" not in reasoning
    issued = fake.deepseek_responses.issued[reasoning["id"]]
    assert reasoning == issued.item

    turn_two = [QUESTION, *without_reasoning(output), *results(output)]
    with pytest.raises(openai.BadRequestError) as refused:
        create(client(fake.url + BASE, api_key, path=""), turn_two, stream=stream)
    assert refused.value.body["message"] == REASONING_TEXT_MISSING

    _, _, text = create(proxied, turn_two, stream=stream)
    assert text == FINAL_ANSWER
    assert fake.last(f"{BASE}/responses").doc["input"] == [QUESTION, issued.item, *turn_two[1:]]

    (repaired,) = LogTail(proxy_state / "events.jsonl", whole=True).wait_for(
        "repaired", where=lambda e: any(a.get("response_id") == response_id for a in e["actions"])
    )
    assert [(a["kind"], a["location"]) for a in repaired["actions"]] == [("inserted", "input[2]")]


def test_a_refusal_is_diagnosed_as_deepseeks(fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path) -> None:
    """A reasoning item nobody captured cannot be put back: the refusal is explained."""
    key = "sk-deepseek-never-seen"
    _, output, _ = create(client(fake.url + BASE, key, path=""), [QUESTION], stream=False)  # not through the proxy
    with pytest.raises(openai.BadRequestError):
        create(
            client(proxy.url + BASE, key, path=""),
            [QUESTION, *without_reasoning(output), *results(output)],
            stream=False,
        )
    (diagnosed,) = LogTail(proxy_state / "events.jsonl", whole=True).wait_for(
        "diagnosed", where=lambda e: e.get("rule") == "deepseek_reasoning_text_missing"
    )
    assert diagnosed["provider"] == "deepseek"
