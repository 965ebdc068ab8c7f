"""A short recorded session for the report's and the content view's tests and screenshots: turn 1 of an agent that
lists a directory through GitHub Copilot's Gemini 3, then turn 2 sent by a client that dropped the reasoning, through
a real `mitmdump -w` with the addon; with the proxy's repair off, turn 2 is refused and diagnosed."""

from __future__ import annotations

from pathlib import Path

import openai

from tests.support.fake_provider import FakeProvider
from tests.support.proxy import reverse_proxy
from tests.support.turns import client, first_turn, history_as_sent, second_turn

MODEL = "gemini-3-pro-preview"
ANSWER = "The directory holds two files."  # the fake provider's answer to turn 2


def record_session(fake: FakeProvider, confdir: Path, flows: Path, api_key: str, *, repair: bool = True) -> None:
    options = {"llm_cache": "memory"} | ({} if repair else {"llm_repair": "false"})
    with reverse_proxy(fake.url, confdir, "-w", str(flows), **options) as proxy:
        turn = first_turn(client(proxy.url, api_key), MODEL, stream=True)
        messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=[])
        if repair:
            assert second_turn(client(proxy.url, api_key), MODEL, messages, stream=True) == ANSWER
            proxy.wait_for_line("llm repaired")
        else:
            try:
                second_turn(client(proxy.url, api_key), MODEL, messages, stream=True)
            except openai.BadRequestError:
                proxy.wait_for_line("llm 400 from")
            else:
                raise AssertionError("turn 2 without its reasoning was answered")
