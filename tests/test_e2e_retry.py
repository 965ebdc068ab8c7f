"""End to end: a request the provider refuses for reasoning state the proxy never saw is sent once more without it
(llm_recover), through a real mitmdump, and the client gets the second answer."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import httpx
import pytest
from llm_reasoning_proxy.hooks.annotate import RECOVER_MARKER
from llm_reasoning_proxy.shared.flow_meta import RETRY_OF
from mitmproxy import io

from tests import test_e2e_gemini as gemini
from tests import test_e2e_responses as responses
from tests.support.event_log import LogTail
from tests.support.fake_chat import DEEPSEEK_MISSING_REASONING
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli
from tests.support.proxy import MitmdumpProcess, read_flow_file, reverse_proxy
from tests.support.real_hosts import RealHostsFake
from tests.support.turns import client
from tests.test_e2e_anthropic import (
    ANSWER,
    QUESTION,
    answer_text,
    error_message,
    post,
    reply,
    request,
    results,
)
from tests.test_e2e_recover import chat_turn_two, send
from tests.test_e2e_refused_values import signature_of_another_model

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

INVALID = "messages.1.content.0: Invalid `signature` in `thinking` block"


def resumed_elsewhere(turn: dict) -> dict:
    """The assistant turn as a client resumes it from a session another proxy (or none) saw: its thinking block
    carries a signature this provider never issued here."""
    content = [
        {"type": "thinking", "thinking": "Let me look.", "signature": "EqQBCkYIBxgCKkA" + "x" * 80}
        if block["type"] == "thinking"
        else block
        for block in turn["content"]
    ]
    return {"role": "assistant", "content": content}


def recovered_events(state: Path) -> list[dict]:
    return LogTail(state / "events.jsonl", whole=True).wait_for("recovered")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def proxy_with(fake: FakeProvider, confdir: Path, state: Path):
    started: list[MitmdumpProcess] = []

    def start(*args: str, **options: object) -> MitmdumpProcess:
        options = {"llm_recover": "true", **options}  # the suite's proxies run without it unless asked
        process = reverse_proxy(
            fake.url, confdir, *args, llm_cache=state / "cache.db", llm_log=state / "events.jsonl", **options
        ).start()
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_a_signature_never_issued_here_is_sent_again_without_it(
    fake: FakeProvider, proxy_with, state: Path, api_key: str, stream: bool
) -> None:
    proxy = proxy_with()
    turn = reply(post(fake.url, api_key, request([QUESTION], stream=False)), stream=False)
    messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
    assert error_message(post(fake.url, api_key, request(messages, stream=stream))) == INVALID
    before = len(fake.find("x-api-key", api_key))

    answered = post(proxy.url, api_key, request(messages, stream=stream))
    assert answered.status_code == 200, proxy.output
    assert answer_text(reply(answered, stream=stream)) == ANSWER
    sent = fake.find("x-api-key", api_key)[before:]
    assert len(sent) == 2  # the client's request, then once more
    assert sent[0].doc["messages"][1] == messages[1]
    second = sent[1].doc
    assert [b["type"] for b in second["messages"][1]["content"]] == ["tool_use"]
    assert second["thinking"] == {"type": "disabled"}
    (event,) = recovered_events(state)
    assert event["how"] == "retry" and event["first_status"] == 400 and event["status"] == 200
    assert INVALID in event["first_error"]
    assert event["removed"] and event["rule"]
    assert "llm recovered" in proxy.output and "sent again after its 400" in proxy.output


def test_off_the_client_gets_the_refusal(fake: FakeProvider, proxy_with, state: Path, api_key: str) -> None:
    proxy = proxy_with(llm_recover="false")
    turn = reply(post(fake.url, api_key, request([QUESTION], stream=False)), stream=False)
    messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
    before = len(fake.find("x-api-key", api_key))
    assert error_message(post(proxy.url, api_key, request(messages, stream=False))) == INVALID
    # A second sending happens before the client has its answer: by now it would be at the fake.
    assert len(fake.find("x-api-key", api_key)) == before + 1
    LogTail(state / "events.jsonl", whole=True).wait_for("diagnosed")
    assert not LogTail(state / "events.jsonl", whole=True).events("recovered")


@pytest.mark.parametrize("status", [401, 403, 429, 500])
def test_never_sent_again_for_these(fake: FakeProvider, proxy_with, state: Path, api_key: str, status: int) -> None:
    proxy = proxy_with()
    turn = reply(post(fake.url, api_key, request([QUESTION], stream=False)), stream=False)
    messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
    before = len(fake.find("x-api-key", api_key))
    text = base64.b64encode(INVALID.encode()).decode()
    answered = post(proxy.url, api_key, request(messages, stream=False), status=str(status), say=text)
    assert answered.status_code == status
    assert len(fake.find("x-api-key", api_key)) == before + 1


@pytest.mark.parametrize("mode", ["regular", "upstream"])
def test_sent_again_as_mitmproxy_sends_requests(tmp_path: Path, confdir: Path, api_key: str, mode: str) -> None:
    """Regular mode to an HTTPS provider whose CA only `ssl_verify_upstream_trusted_ca` names; and upstream mode,
    through another proxy: the second request goes the way the first went."""
    fake = RealHostsFake(tmp_path).start()
    trusted = ("--set", f"ssl_verify_upstream_trusted_ca={fake.ca_file}")
    log = tmp_path / "events.jsonl"
    options = ("--set", f"llm_cache={tmp_path / 'cache.db'}", "--set", f"llm_log={log}", "--set", "llm_recover=true")
    processes = []
    try:
        if mode == "upstream":
            # The proxy in front intercepts TLS with the same CA (one confdir): ours is told to trust it.
            front = MitmdumpProcess(*trusted, confdir=confdir, addon=False).start()
            processes.append(front)
            front_ca = f"ssl_verify_upstream_trusted_ca={confdir / 'mitmproxy-ca-cert.pem'}"
            ours = ("--mode", f"upstream:{front.url}", "--set", front_ca)
        else:
            ours = trusted
        proxy = MitmdumpProcess(*ours, *options, confdir=confdir).start()
        processes.append(proxy)
        client = httpx.Client(
            proxy=proxy.url, verify=ssl.create_default_context(cafile=confdir / "mitmproxy-ca-cert.pem"), timeout=30
        )
        headers = {"x-api-key": api_key, "anthropic-version": "2023-06-01"}
        url = f"{fake.url}/v1/messages"
        turn = client.post(url, json=request([QUESTION], stream=False), headers=headers).json()
        messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
        answered = client.post(url, json=request(messages, stream=True), headers=headers)
        assert answered.status_code == 200, proxy.output
        assert len(fake.find("x-api-key", api_key)) == 3
        (event,) = LogTail(log, whole=True).wait_for("recovered")
        assert event["how"] == "retry" and event["status"] == 200
    finally:
        for process in processes:
            process.stop()
        fake.stop()


def test_the_flow_file_the_check_and_the_report_show_it(
    fake: FakeProvider, proxy_with, state: Path, api_key: str
) -> None:
    flows = state / "flows.mitm"
    proxy = proxy_with("-w", str(flows))
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False)), stream=False)
    messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
    assert post(proxy.url, api_key, request(messages, stream=False)).status_code == 200
    recovered_events(state)
    proxy.stop()  # the flow file is complete

    with flows.open("rb") as handle:
        recorded = list(io.FlowReader(handle).stream())
    # The second sending is answered, and saved, before the flow it was sent for.
    first, again, refused = recorded
    assert again.metadata[RETRY_OF] == refused.id and again.is_replay == "request"
    assert refused.response.status_code == 200 and refused.marked == RECOVER_MARKER
    assert "llm recovered" in refused.comment and "sent again after its 400" in refused.comment
    assert refused.metadata["llm"]["recovered"]["how"] == "retry"

    checked = offline_cli("check", str(flows), "--no-diff")
    assert "the recording proxy recovered it: sent again after its 400" in checked.stdout, checked.stdout
    assert "2 LLM request(s)" in checked.stdout  # the second sending is told of on its flow, not counted again

    exported = offline_cli("export", str(flows), str(state / "fixtures"))
    assert "wrote 2 exchange(s)" in exported.stdout, exported.stdout + exported.stderr

    for source in (flows, state / "events.jsonl"):
        page = state / f"{source.stem}.html"
        assert offline_cli("report", str(source), "-o", str(page)).returncode == 0
        assert "sent again after its 400" in page.read_text()


def test_a_refusal_read_from_a_flow_file_is_never_sent_again(
    fake: FakeProvider, confdir: Path, proxy_with, state: Path, api_key: str
) -> None:
    """`mitmdump -r` (and `scripts/web -r`) shows a recorded refusal, diagnosed: it never sends the recorded request
    with its credential to the provider again."""
    flows = state / "flows.mitm"
    proxy = proxy_with("-w", str(flows), llm_recover="false")
    turn = reply(post(proxy.url, api_key, request([QUESTION], stream=False)), stream=False)
    messages = [QUESTION, resumed_elsewhere(turn), results(turn)]
    assert post(proxy.url, api_key, request(messages, stream=False)).status_code == 400
    proxy.stop()  # the flow file is complete
    asked = len(fake.find("x-api-key", api_key))

    result = read_flow_file(
        flows, confdir, "--set", "llm_recover=true", "--set", "llm_cache=memory", "--set", "llm_log="
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "llm 400 from" in result.stdout  # explained, as live
    assert len(fake.find("x-api-key", api_key)) == asked


def test_a_request_changed_before_sending_is_not_sent_again(
    fake: FakeProvider, proxy_with, state: Path, api_key: str
) -> None:
    """At most one change per client request: one that went with an empty reasoning_content and is refused all the
    same (a refusal the fake is told to give) reaches the client as refused, the provider asked once; a second
    sending would have gone without any reasoning state."""
    proxy = proxy_with()
    path = "/v1/chat/completions"
    body, _ = chat_turn_two(fake, api_key, path, "deepseek-v4-pro")
    before = len(fake.find("x-api-key", api_key))
    text = base64.b64encode(DEEPSEEK_MISSING_REASONING.format(index=1).encode()).decode()
    refused = send(proxy.url, path, api_key, body, status="400", say=text)
    assert refused.status_code == 400
    (event,) = recovered_events(state)
    assert event["how"] == "before"
    LogTail(state / "events.jsonl", whole=True).wait_for("diagnosed")
    (sent,) = fake.find("x-api-key", api_key)[before:]
    assert sent.doc["messages"][1]["reasoning_content"] == ""  # changed before sending, and only then


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_responses_encrypted_content_the_provider_no_longer_takes_is_sent_again_without_it(
    fake: FakeProvider, proxy_with, state: Path, api_key: str, stream: bool
) -> None:
    """OpenAI refusing its own value (openai/codex #8120, 2025-12-16), which the proxy captured and the client sent as
    issued: the session would end there. Sent again without that reasoning item, and its call without its `fc_` id."""
    proxy = proxy_with()
    proxied = client(proxy.url, api_key, wording="2026")
    _, output, _ = responses.create(proxied, [responses.QUESTION], stream=stream)
    reasoning, call = output
    fake.responses.revoked.add(reasoning["encrypted_content"])
    before = len(fake.find("authorization", f"Bearer {api_key}"))

    turn_two = [responses.QUESTION, reasoning, call, *responses.results(output)]
    assert responses.create(proxied, turn_two, stream=stream)[2] == responses.FINAL_ANSWER
    first, again = fake.find("authorization", f"Bearer {api_key}")[before:]
    assert first.status == 400 and [item.get("type") for item in first.doc["input"]][1] == "reasoning"
    kinds = [item.get("type") for item in again.doc["input"]]
    assert "reasoning" not in kinds and "id" not in again.doc["input"][1]
    (event,) = recovered_events(state)
    assert (event["how"], event["first_status"], event["status"]) == ("retry", 400, 200)
    assert event["removed"][0].startswith("input[1]") and reasoning["id"] in event["first_error"]


@pytest.mark.parametrize("mode", ["plain", "sse"], ids=["plain", "streamed"])
def test_a_corrupted_thought_signature_is_sent_again_with_the_placeholder(
    fake: FakeProvider, proxy_with, state: Path, api_key: str, mode: str
) -> None:
    """A Gemini 3 signature from another model's answer, which the proxy never saw (turn 1 went straight to Google):
    Google's documented placeholder stands in for it on the second sending."""
    proxy = proxy_with()
    contents = signature_of_another_model(fake, api_key, mode)
    answered = gemini.GeminiClient(proxy.url, api_key).post(gemini.route(mode=mode), contents)
    assert answered.status_code == 200, answered.text
    (event,) = recovered_events(state)
    assert (event["how"], event["first_status"]) == ("retry", 400)
    assert "Corrupted thought signature." in event["first_error"]
    assert event["removed"] == ["contents[1].parts[0]: thoughtSignature"]
