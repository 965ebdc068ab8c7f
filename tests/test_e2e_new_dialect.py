"""Adding a provider is one module, one registration line and its fake: shown end to end for a made-up provider.

Acme (made up) serves chat completions under /acme/, its thinking models refuse an assistant tool-call message
without its reasoning_content, and it says so in words of its own. The test adds to a copy of the addon exactly
these, and nothing else:

1. `addon/dialects/acme.py` (ACME_DIALECT below): who Acme is, what its models require back, its error texts (one
   with the advice of its own that the explanation gives for it);
2. one line, `"acme",`, in the registration list of `addon/dialects/__init__.py`;

and, on the test's side, 3. its fake (`AcmeFake`), added to the fake provider. The proxy then repairs a client that
drops reasoning_content, and where it may not repair (repair off) it names Acme's rule, points at the message, and
its own check of the request finds the same message.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider, Options, Recorded, Reply
from tests.support.proxy import ROOT, MitmdumpProcess

pytestmark = pytest.mark.e2e

ACME_DIALECT = '''"""Acme Reasoning Cloud, a made-up provider: how a provider is added."""

from __future__ import annotations

from .base import REASONING_CONTENT_MISSING, Dialect, Rule, rx

EFFORT_ADVICE = "leave reasoning_effort out for Acme's thinking models: they choose their own"

RULES = (
    Rule(
        REASONING_CONTENT_MISSING,
        "acme",
        "missing",
        "reasoning_content",
        "has no reasoning_content",
        rx(r"assistant\\s+message\\s+(?P<index>\\d+)\\s+has\\s+no\\s+reasoning_content"),
        "an assistant tool-call message was sent back without its reasoning_content",
    ),
    Rule(
        "acme_effort_unsupported",
        "acme",
        "unsupported",
        "reasoning_effort",
        "do not take reasoning_effort",
        rx(r"thinking\\s+models\\s+do\\s+not\\s+take\\s+reasoning_effort"),
        "the request sets reasoning_effort, which Acme's thinking models do not take",
        advice=EFFORT_ADVICE,
    ),
)


class Acme(Dialect):
    name = "acme"
    rules = RULES

    def serves(self, host: str, path: str, model: str) -> bool:
        return path.startswith("/acme/")

    def requires_reasoning_content(self, model: str) -> bool:
        return model.startswith("acme-think")


DIALECT = Acme()
'''
EFFORT_ADVICE = "leave reasoning_effort out for Acme's thinking models: they choose their own"
MODEL = "acme-think-1"
PATH = "/acme/v1/chat/completions"
TOOLS = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object", "properties": {}}}}]


class AcmeFake:
    """Acme as a fake: a tool call with its reasoning_content, then the answer; a tool-call message sent back without
    its reasoning_content is refused in Acme's words."""

    name = "acme"

    def matches(self, path: str) -> bool:
        return path.startswith("/acme/")

    def handle(self, doc: dict, recorded: Recorded, options: Options) -> Reply:
        messages = doc["messages"]
        if "reasoning_effort" in doc:
            return Reply(400, {"error": {"message": "Acme: thinking models do not take reasoning_effort"}})
        for index, message in enumerate(messages):
            if (
                message.get("role") == "assistant"
                and message.get("tool_calls")
                and not message.get("reasoning_content")
            ):
                text = f"Acme: assistant message {index} has no reasoning_content"
                return Reply(400, {"error": {"message": text, "type": "invalid_request_error"}})
        if messages[-1].get("role") == "tool":
            message = {"role": "assistant", "content": "Two files."}
        else:
            call = {
                "id": f"acme_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": "ls", "arguments": "{}"},
            }
            message = {"role": "assistant", "content": None, "reasoning_content": "List it.", "tool_calls": [call]}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return Reply(200, {"id": uuid.uuid4().hex, "object": "chat.completion", "model": MODEL, "choices": [choice]})


@pytest.fixture
def acme_addon(tmp_path: Path) -> Path:
    """A copy of the addon with Acme added: its module and one registration line."""
    addon = tmp_path / "addon"
    shutil.copytree(ROOT / "addon", addon, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    (addon / "dialects" / "acme.py").write_text(ACME_DIALECT)
    registry = addon / "dialects" / "__init__.py"
    before = registry.read_text()
    registry.write_text(before.replace('    "openrouter",\n', '    "openrouter",\n    "acme",\n', 1))
    added = [line for line in registry.read_text().splitlines() if line not in before.splitlines()]
    assert added == ['    "acme",']  # the one registration line
    return addon / "main.py"


@pytest.fixture
def acme() -> Any:
    provider = FakeProvider().start()
    provider.dialects.insert(0, AcmeFake())
    yield provider
    provider.stop()


def post(base_url: str, messages: list[dict], key: str, **extra: Any) -> httpx.Response:
    body = {"model": MODEL, "messages": messages, "tools": TOOLS, **extra}
    return httpx.post(f"{base_url}{PATH}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=30)


def turn_two_without_reasoning(base_url: str, key: str) -> list[dict]:
    question = {"role": "user", "content": "What is here?"}
    answer = post(base_url, [question], key).json()["choices"][0]["message"]
    assert answer["reasoning_content"] == "List it."
    dropped = {k: v for k, v in answer.items() if k != "reasoning_content"}
    result = {"role": "tool", "tool_call_id": answer["tool_calls"][0]["id"], "content": "a.txt b.txt"}
    return [question, dropped, result]


@pytest.mark.slow
def test_a_provider_added_as_a_module_and_a_line_is_repaired_and_explained(
    acme: FakeProvider, acme_addon: Path, confdir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    options = [
        "--mode",
        f"reverse:{acme.url}",
        "--set",
        f"llm_cache={tmp_path / 'cache.db'}",
        "--set",
        f"llm_log={log}",
    ]
    with MitmdumpProcess(*options, confdir=confdir, script=acme_addon) as proxy:
        key = f"sk-acme-{uuid.uuid4().hex}"
        messages = turn_two_without_reasoning(proxy.url, key)
        refused = post(acme.url, messages, key)
        assert refused.status_code == 400 and "assistant message 1 has no reasoning_content" in refused.text
        assert post(proxy.url, messages, key).status_code == 200  # repaired
        proxy.wait_for_line("llm repaired")
        # Acme's remedy for a text of its own, carried by its rule: no hook names Acme.
        tail = LogTail(log)
        assert post(proxy.url, messages[:1], key, reasoning_effort="high").status_code == 400
        (effort,) = tail.wait_for("diagnosed")
    assert effort["rule"] == "acme_effort_unsupported" and effort["provider"] == "acme"
    assert effort["advice"] == EFFORT_ADVICE

    capture = tmp_path / "refused.mitm"
    refusing = (*options, "--set", "llm_repair=false", "-w", str(capture))
    with MitmdumpProcess(*refusing, confdir=confdir, script=acme_addon) as proxy:
        key, tail = f"sk-acme-{uuid.uuid4().hex}", LogTail(log)
        assert post(proxy.url, turn_two_without_reasoning(proxy.url, key), key).status_code == 400
        (diagnosed,) = tail.wait_for("diagnosed")
    assert diagnosed["rule"] == "reasoning_content_missing" and diagnosed["provider"] == "acme"
    assert diagnosed["location"] == "messages[1]" and diagnosed["message"].startswith("Acme: assistant message 1")
    assert "would have restored reasoning_content on messages[1]" in diagnosed["advice"]

    # Acme's requirement, from its dialect: the offline check of the same copy of the addon finds the message too.
    package = tmp_path / "package"
    package.mkdir()
    (package / "llm_reasoning_proxy").symlink_to(acme_addon.parent)
    check = subprocess.run(
        [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", "check", "--no-diff", str(capture)],
        env={**os.environ, "PYTHONPATH": str(package)},
        cwd=package,  # `-m` puts the working directory first on the path: a checkout's own package must not win
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "- messages[1]: assistant tool-call message without reasoning_content" in check.stdout, check.stderr
    assert "the provider answered: reasoning_content_missing" in check.stdout
