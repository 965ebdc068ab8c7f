"""End to end: Kimi, Z.ai's GLM, Qwen on DashScope and MiniMax through a real mitmdump, driven by the openai SDK.

Kimi refuses a tool-call turn sent back without its reasoning_content; the other three answer it all the same (the
fakes in tests/support/fake_chat.py say so in `x-fake-degraded`), so for them the proxy repairs what the
request asks the provider to read back, and says the provider would not have complained."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.cli import load_flows
from llm_reasoning_proxy.offline.fixtures import read_fixture_dir
from mitmproxy import io

from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli as cli
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import QUESTION, TOOLS, client, logged_events

pytestmark = pytest.mark.e2e
ANSWER = "The directory holds two files."
DEGRADED = "x-fake-degraded"


def ask(llm: openai.OpenAI, model: str, messages: list[dict], *, stream: bool, extra: dict) -> tuple[dict, Any]:
    """One turn: the assistant message as the client received it, and the answer's headers."""
    raw = llm.chat.completions.with_raw_response.create(
        model=model, messages=messages, tools=TOOLS, stream=stream, extra_body=extra
    )
    if not stream:
        message = raw.parse().choices[0].message
        return message.model_dump(exclude_none=True) | (message.model_extra or {}), raw.headers
    content, extra_fields, details, calls = [], {}, [], {}
    for chunk in raw.parse():
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content.append(delta.content or "")
        for key, value in (delta.model_extra or {}).items():
            if key == "reasoning_details" and isinstance(value, list):
                details += value
            elif isinstance(value, str) and key not in ("name", "audio_content"):
                extra_fields[key] = extra_fields.get(key, "") + value
        for call in delta.tool_calls or []:
            slot = calls.setdefault(
                call.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}}
            )
            slot["id"] = slot["id"] or call.id or ""
            if call.function is not None:
                slot["function"]["name"] += call.function.name or ""
                slot["function"]["arguments"] += call.function.arguments or ""
    message = {"role": "assistant", "content": "".join(content), **extra_fields}
    if details:
        message["reasoning_details"] = details
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message, raw.headers


def forgetful(turn: dict, *, content: Any = "", question: dict = QUESTION) -> list[dict]:
    """The next turn as a client that keeps only the tool calls of the answer sends it (and `content`)."""
    calls = [{"id": c["id"], "type": "function", "function": dict(c["function"])} for c in turn["tool_calls"]]
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "a.txt\nb.txt"} for c in calls]
    return [question, {"role": "assistant", "content": content, "tool_calls": calls}, *results]


def sent(fake: FakeProvider) -> dict:
    return fake.last().doc


# --- Kimi ---------------------------------------------------------------------------------------

KIMI = "kimi-k2.6"
KIMI_EXTRA = {"thinking": {"type": "enabled", "keep": "all"}}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_kimi_reasoning_content_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key, path="/moonshot/v1")
    turn, _ = ask(proxied, KIMI, [QUESTION], stream=stream, extra=KIMI_EXTRA)
    call_id = turn["tool_calls"][0]["id"]
    issued = fake.chat_hosts["moonshot"].issued[call_id]
    assert turn["reasoning_content"] == issued["reasoning_content"]
    messages = forgetful(turn)
    with pytest.raises(
        openai.BadRequestError,
        match="thinking is enabled but reasoning_content is missing in assistant tool call message at index 1",
    ):
        ask(client(fake.url, api_key, path="/moonshot/v1"), KIMI, messages, stream=stream, extra=KIMI_EXTRA)

    answer, _ = ask(proxied, KIMI, messages, stream=stream, extra=KIMI_EXTRA)
    assert answer["content"] == ANSWER
    assert sent(fake)["messages"][1]["reasoning_content"] == issued["reasoning_content"]
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", call_id)
    assert captured["streamed"] is stream and list(captured["fields"]) == ["reasoning_content"]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", call_id)
    assert repaired["actions"][0]["fields"] == ["reasoning_content"] and "silent_provider" not in repaired


# --- GLM ----------------------------------------------------------------------------------------

GLM = "glm-4.7"
PRESERVED = {"thinking": {"type": "enabled", "clear_thinking": False}}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_glm_preserved_thinking_is_put_back_though_glm_would_not_refuse(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key, path="/api/paas/v4")
    turn, _ = ask(proxied, GLM, [QUESTION], stream=stream, extra=PRESERVED)
    call_id = turn["tool_calls"][0]["id"]
    issued = fake.chat_hosts["zai"].issued[call_id]
    messages = forgetful(turn)
    direct, headers = ask(client(fake.url, api_key, path="/api/paas/v4"), GLM, messages, stream=stream, extra=PRESERVED)
    assert direct["content"] == ANSWER and headers[DEGRADED] == "reasoning dropped: messages[1]"  # 200, only worse

    answer, headers = ask(proxied, GLM, messages, stream=stream, extra=PRESERVED)
    assert answer["content"] == ANSWER and DEGRADED not in headers
    assert sent(fake)["messages"][1]["reasoning_content"] == issued["reasoning_content"]
    assert fake.chat_hosts["zai"].seen[-1] == {1: issued}
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", call_id)
    assert captured["fields"]["reasoning_content"]["text"] == issued["reasoning_content"]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", call_id)
    assert repaired["silent_provider"] == "zai" and repaired["actions"][0]["fields"] == ["reasoning_content"]


def test_glm_without_preserved_thinking_gets_back_only_the_current_tool_loop(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    """On the standard endpoint GLM clears earlier turns' reasoning: only the current loop's is put back."""
    proxied = client(proxy.url, api_key, path="/api/paas/v4")
    default = {"thinking": {"type": "enabled"}}
    earlier, _ = ask(proxied, GLM, [QUESTION], stream=True, extra=default)
    later_question = {"role": "user", "content": "And in the other directory?"}
    later, _ = ask(proxied, GLM, [later_question], stream=True, extra=default)
    history = [
        *forgetful(earlier),
        {"role": "assistant", "content": "Two files."},
        *forgetful(later, question=later_question),
    ]
    answer, headers = ask(proxied, GLM, history, stream=False, extra=default)
    assert answer["content"] == ANSWER and DEGRADED not in headers
    messages = sent(fake)["messages"]
    assert "reasoning_content" not in messages[1]  # discarded by GLM: left as the client sent it
    assert (
        messages[5]["reasoning_content"]
        == fake.chat_hosts["zai"].issued[later["tool_calls"][0]["id"]]["reasoning_content"]
    )


def test_glm_coding_plan_preserves_thinking_by_default(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    proxied = client(proxy.url, api_key, path="/api/coding/paas/v4")
    earlier, _ = ask(proxied, GLM, [QUESTION], stream=False, extra={})
    later_question = {"role": "user", "content": "And in the other directory?"}
    later, _ = ask(proxied, GLM, [later_question], stream=False, extra={})
    history = [
        *forgetful(earlier),
        {"role": "assistant", "content": "Two files."},
        *forgetful(later, question=later_question),
    ]
    direct = client(fake.url, api_key, path="/api/coding/paas/v4")
    assert (
        ask(direct, GLM, history, stream=False, extra={})[1][DEGRADED] == "reasoning dropped: messages[1], messages[5]"
    )
    _, headers = ask(proxied, GLM, history, stream=False, extra={})
    assert DEGRADED not in headers and set(fake.chat_hosts["zai"].seen[-1]) == {1, 5}


# --- Qwen on DashScope --------------------------------------------------------------------------

QWEN = "qwen3.6-plus"
PRESERVE = {"enable_thinking": True, "preserve_thinking": True}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_qwen_preserved_thinking_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key, path="/compatible-mode/v1", parallel="2")
    turn, _ = ask(proxied, QWEN, [QUESTION], stream=stream, extra=PRESERVE)
    first, second = (c["id"] for c in turn["tool_calls"])
    issued = fake.chat_hosts["dashscope"].issued[first]
    messages = forgetful(turn)
    direct = client(fake.url, api_key, path="/compatible-mode/v1")
    assert ask(direct, QWEN, messages, stream=stream, extra=PRESERVE)[1][DEGRADED] == "reasoning dropped: messages[1]"

    answer, headers = ask(proxied, QWEN, messages, stream=stream, extra=PRESERVE)
    assert answer["content"] == ANSWER and DEGRADED not in headers
    assert sent(fake)["messages"][1]["reasoning_content"] == issued["reasoning_content"]
    assert [c["id"] for c in sent(fake)["messages"][1]["tool_calls"]] == [first, second]
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", first)
    assert repaired["silent_provider"] == "dashscope"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_qwen4_encrypted_thinking_goes_back_unchanged(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    extra = {**PRESERVE, "thinking_display": "summarized"}
    proxied = client(proxy.url, api_key, path="/compatible-mode/v1")
    turn, _ = ask(proxied, "qwen4-max", [QUESTION], stream=stream, extra=extra)
    call_id = turn["tool_calls"][0]["id"]
    issued = fake.chat_hosts["dashscope"].issued[call_id]
    assert turn["encrypted_content"] == issued["encrypted_content"]
    answer, headers = ask(proxied, "qwen4-max", forgetful(turn), stream=stream, extra=extra)
    assert answer["content"] == ANSWER and DEGRADED not in headers
    assert {k: sent(fake)["messages"][1][k] for k in issued} == issued
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", call_id)
    ciphertext = captured["fields"]["encrypted_content"]
    assert ciphertext["length"] == len(issued["encrypted_content"]) and "text" not in ciphertext  # opaque: not logged


# --- MiniMax ------------------------------------------------------------------------------------

MINIMAX = "MiniMax-M2.7"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_minimax_think_block_stripped_by_the_client_is_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str, stream: bool
) -> None:
    proxied = client(proxy.url, api_key, path="/minimax/v1")
    turn, _ = ask(proxied, MINIMAX, [QUESTION], stream=stream, extra={})
    call_id = turn["tool_calls"][0]["id"]
    block = fake.chat_hosts["minimax"].issued[call_id]["content"]
    assert turn["content"] == block and block.startswith("<think>\n")
    messages = forgetful(turn, content=turn["content"].split("</think>")[1])  # what a UI that hides it keeps
    direct = client(fake.url, api_key, path="/minimax/v1")
    assert ask(direct, MINIMAX, messages, stream=stream, extra={})[1][DEGRADED] == "reasoning dropped: messages[1]"

    answer, headers = ask(proxied, MINIMAX, messages, stream=stream, extra={})
    assert answer["content"] == ANSWER and DEGRADED not in headers
    assert sent(fake)["messages"][1]["content"] == block
    (captured,) = logged_events(proxy_state / "events.jsonl", "captured", call_id)
    assert captured["fields"]["<think>"]["text"] == block
    (repaired,) = logged_events(proxy_state / "events.jsonl", "repaired", call_id)
    assert repaired["actions"][0]["fields"] == ["<think>"] and repaired["silent_provider"] == "minimax"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_minimax_reasoning_details_with_reasoning_split_are_put_back(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str, stream: bool
) -> None:
    split = {"reasoning_split": True}
    proxied = client(proxy.url, api_key, path="/minimax/v1")
    turn, _ = ask(proxied, MINIMAX, [QUESTION], stream=stream, extra=split)
    issued = fake.chat_hosts["minimax"].issued[turn["tool_calls"][0]["id"]]
    messages = forgetful(turn)
    direct = client(fake.url, api_key, path="/minimax/v1")
    assert ask(direct, MINIMAX, messages, stream=stream, extra=split)[1][DEGRADED] == "reasoning dropped: messages[1]"
    _, headers = ask(proxied, MINIMAX, messages, stream=stream, extra=split)
    assert DEGRADED not in headers
    assert sent(fake)["messages"][1]["reasoning_details"] == issued["reasoning_details"]


def test_minimax_history_that_kept_its_think_block_is_sent_byte_for_byte(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn, _ = ask(client(proxy.url, api_key, path="/minimax/v1"), MINIMAX, [QUESTION], stream=True, extra={})
    body = json.dumps({"model": MINIMAX, "messages": forgetful(turn, content=turn["content"]), "tools": TOOLS}).encode()
    response = httpx.post(
        f"{proxy.url}/minimax/v1/chat/completions",
        content=body,
        headers={"authorization": f"Bearer {api_key}", "content-type": "application/json"},
    )
    assert response.status_code == 200 and DEGRADED not in response.headers
    assert fake.requests[-1].body == body


# --- a flow file: the refusal explained, the offline check, the export --------------------------


HOSTS = {  # provider: (route, model, what the request asks, what the client drops, the field that goes back)
    "moonshot": ("/moonshot/v1", KIMI, KIMI_EXTRA, "reasoning_content"),
    "zai": ("/api/paas/v4", GLM, PRESERVED, "reasoning_content"),
    "dashscope": ("/compatible-mode/v1", QWEN, PRESERVE, "reasoning_content"),
    "minimax": ("/minimax/v1", MINIMAX, {}, "<think>"),
}


def record(fake: FakeProvider, confdir: Path, out: Path, provider: str, *, repair: bool) -> list[int]:
    """A forgetful client's two turns through a proxy writing `out` (-w); the statuses it got."""
    route, model, extra, _ = HOSTS[provider]
    options = ["--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", f"llm_log={out}.events"]
    options += ["--set", f"llm_repair={'true' if repair else 'false'}", "-w", str(out)]
    with MitmdumpProcess(*options, confdir=confdir) as proxy:
        llm = client(proxy.url, f"sk-test-{uuid.uuid4().hex}", path=route)
        turn, _ = ask(llm, model, [QUESTION], stream=True, extra=extra)
        try:
            ask(llm, model, forgetful(turn, content=""), stream=True, extra=extra)
            return [200, 200]
        except openai.BadRequestError:
            LogTail(Path(f"{out}.events"), whole=True).wait_for("diagnosed")
            return [200, 400]


@pytest.mark.slow
def test_kimi_refusal_is_diagnosed_checked_offline_and_exported(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    capture = tmp_path / "kimi.mitm"
    assert record(fake, confdir, capture, "moonshot", repair=False) == [200, 400]
    (diagnosed,) = LogTail(Path(f"{capture}.events"), whole=True).events("diagnosed")
    assert (diagnosed["rule"], diagnosed["provider"], diagnosed["location"]) == (
        "reasoning_content_missing",
        "moonshot",
        "messages[1]",
    )
    assert "would have restored reasoning_content on messages[1]" in diagnosed["advice"]

    report = cli("check", "--no-diff", str(capture))
    assert report.returncode == 0, report.stdout + report.stderr
    assert "- messages[1]: assistant tool-call message without reasoning_content" in report.stdout
    assert "the provider answered: reasoning_content_missing" in report.stdout
    assert "2 LLM request(s); 1 would fail as sent (#2); 0 would still fail through the proxy." in report.stdout

    out = tmp_path / "kimi-fixture"
    assert cli("export", str(capture), str(out), "--placeholders").returncode == 0
    fixtures = read_fixture_dir(out)
    assert fixtures[1].expect.repairs[0].startswith("restored reasoning_content on messages[1] (tool call call_")
    assert [[a.describe() for a in c.actions] for c in check_flows(load_flows(out))] == [
        f.expect.repairs for f in fixtures
    ]


@pytest.mark.slow
@pytest.mark.parametrize("provider", ["zai", "dashscope", "minimax"])
def test_silent_drops_are_said_on_the_flow_checked_offline_and_exported(
    fake: FakeProvider, confdir: Path, tmp_path: Path, provider: str
) -> None:
    _, model, _, field = HOSTS[provider]
    capture = tmp_path / f"{provider}.mitm"
    assert record(fake, confdir, capture, provider, repair=True) == [200, 200]
    with capture.open("rb") as handle:
        flows = list(io.FlowReader(handle).stream())
    comment = flows[1].comment
    assert f"llm repaired: restored {field} on messages[1]" in comment
    assert f"{provider} would not have refused the request without it: it drops reasoning silently" in comment

    report = cli("check", "--no-diff", str(capture))
    assert report.returncode == 0, report.stdout + report.stderr
    assert f"as sent: {provider} answers it, without the reasoning it issued (its drops are silent)" in report.stdout
    assert f"- drops {field} the provider returned (messages[1], tool call call_" in report.stdout
    assert "2 LLM request(s); 0 would fail as sent; 1 would lose reasoning silently (#2); 0 would" in report.stdout
    assert f"#2 {model} -> answer (client dropped state for call_" in report.stdout

    out = tmp_path / f"{provider}-fixture"
    assert cli("export", str(capture), str(out)).returncode == 0
    fixtures = read_fixture_dir(out)
    assert fixtures[1].expect.repairs[0].startswith(f"restored {field} on messages[1] (tool call call_")
    assert [[a.describe() for a in c.actions] for c in check_flows(load_flows(out))] == [
        f.expect.repairs for f in fixtures
    ]
