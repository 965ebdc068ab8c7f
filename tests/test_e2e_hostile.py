"""End to end: the proxy stays bounded, private and exact whatever a client or an upstream sends.

Each section is one of the attacks the README's "Under faults" and "Security" sections promise to withstand,
tried against a real `mitmdump -s addon/main.py`:

1. compression bombs in requests, JSON answers, streams and error answers;
2. answers that would cost a quadratic parse;
3. answers too big to store or log;
4. credentials in headers the proxy did not know, and the name-and-arguments fallback across tenants;
5. secrets of every common shape in prompts, tool results and the model's reasoning;
6. numbers that would not survive re-serialisation;
7. JSON too deep for the offline tools;
8. a log rotation that fails;
9. links and loose modes at the paths the proxy writes;
10. the model read from the path.
"""

from __future__ import annotations

import base64
import json
import os
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from mitmproxy import io

from tests.support import hostile_answers
from tests.support.event_log import LogTail
from tests.support.fake_provider import FakeProvider, Recorded
from tests.support.hostile_upstream import Answer, HostileUpstream
from tests.support.offline_cli import offline_cli
from tests.support.planted import every_shape
from tests.support.proxy import MitmdumpProcess, plain_streaming, reverse_proxy, start_failure
from tests.support.turns import QUESTION, TOOLS, client, first_turn, history_as_sent, second_turn

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent

DEEPSEEK = "deepseek-reasoner"
ANSWER = "The directory holds two files."


def bearer(api_key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}", "content-type": "application/json"}


def deepseek_turns(proxy: MitmdumpProcess, api_key: str, turns: int) -> None:
    """Tool-call turns of a DeepSeek conversation whose client drops reasoning_content, each repaired."""
    llm = client(proxy.url, api_key)
    for _ in range(turns):
        turn = first_turn(llm, DEEPSEEK, stream=True)
        messages = history_as_sent(turn, drop=("reasoning_content",), content=None)
        assert second_turn(llm, DEEPSEEK, messages, stream=False) == ANSWER


# --- 8. a log rotation that fails ----------------------------------------------------------------


@pytest.mark.slow
def test_a_failed_rotation_is_said_once_and_the_log_goes_on(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    log = tmp_path / "events.jsonl"
    obstruction = tmp_path / "events.jsonl.1"
    obstruction.mkdir()  # a folder where the backup goes, with something in it: the rename fails
    (obstruction / "keep").write_text("x")
    with reverse_proxy(
        fake.url, confdir, llm_cache="memory", llm_log=log, llm_log_max_size="4KB", llm_log_backups="1"
    ) as proxy:
        deepseek_turns(proxy, api_key, 4)
        # Both turns of each of the four conversations are captured (the answer too: it has reasoning_content).
        assert len(LogTail(log, whole=True).wait_for("captured", 8)) == 8
        proxy.wait_for_line("cannot rotate")  # mitmdump's output is read by a thread: wait for the line
    assert proxy.output.count("cannot rotate") == 1, proxy.output  # all of it, once the proxy has stopped
    assert log.stat().st_size > 4096  # it wrote on past its size rather than dropping events
    assert (obstruction / "keep").read_text() == "x"


# --- 9. links and loose modes at the paths the proxy writes --------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("option, name", [("llm_log", "events.jsonl"), ("llm_cache", "cache.db")])
def test_a_link_at_a_path_the_proxy_writes_stops_it_at_startup(
    confdir: Path, tmp_path: Path, option: str, name: str
) -> None:
    target = tmp_path / "someone-elses-file"
    target.write_bytes(b"not yours\n")
    (tmp_path / name).symlink_to(target)
    process = MitmdumpProcess(
        "--set", f"llm_cache={tmp_path / 'cache.db'}", "--set", f"llm_log={tmp_path / 'events.jsonl'}", confdir=confdir
    )
    code, output = start_failure(process)
    assert code == 1, output
    assert f"{option}: " in output and "is a symbolic link; the proxy never writes through a link" in output
    assert " active: " not in output
    assert target.read_bytes() == b"not yours\n"


@pytest.mark.slow
def test_files_left_world_readable_become_owner_only(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    names = ("cache.db", "cache.db-wal", "cache.db-shm", "events.jsonl")
    for name in names:
        (tmp_path / name).touch()
        os.chmod(tmp_path / name, 0o644)
    os.remove(tmp_path / "cache.db")  # an empty file is not a database; the companions may be left over
    (tmp_path / "cache.db").touch()
    os.chmod(tmp_path / "cache.db", 0o644)
    with reverse_proxy(fake.url, confdir, llm_cache=tmp_path / "cache.db", llm_log=tmp_path / "events.jsonl") as proxy:
        deepseek_turns(proxy, api_key, 1)
        modes = {name: oct(stat.S_IMODE((tmp_path / name).stat().st_mode)) for name in names}
    assert modes == dict.fromkeys(names, "0o600")


# --- 6. numbers that would not survive re-serialisation ------------------------------------------

NUMBERS = (
    b'{"order_id":123456789012345678901234567890,"limit":1e400,"price":1.50,"scale":1E5,"zero":-0,'
    b'"tiny":1e-07,"wide":-9223372036854775809}'
)


def turn_two_body(turn: dict, extra: bytes) -> bytes:
    """DeepSeek's turn 2 without reasoning_content, with `extra` spliced in as a top-level field, byte for byte."""
    messages = history_as_sent(turn, drop=("reasoning_content",), content=None)
    body = json.dumps({"model": DEEPSEEK, "messages": messages, "tools": TOOLS}).encode()
    return body[:-1] + b',"metadata":' + extra + b"}"


def test_a_repaired_request_keeps_every_number_as_the_client_wrote_it(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    turn = first_turn(client(proxy.url, api_key), DEEPSEEK, stream=False)
    body = turn_two_body(turn, NUMBERS)
    response = httpx.post(f"{proxy.url}/v1/chat/completions", content=body, headers=bearer(api_key), timeout=60)
    assert response.status_code == 200, response.text
    forwarded = fake.last().body
    assert b'"reasoning_content":' in forwarded  # it was repaired
    assert forwarded.endswith(b',"metadata":' + NUMBERS + b"}")  # and every number came through as written


def test_a_body_that_cannot_be_written_back_exactly_goes_on_as_sent(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    turn = first_turn(client(proxy.url, api_key), DEEPSEEK, stream=False)
    log = LogTail(proxy_state / "events.jsonl")
    body = turn_two_body(turn, b'{"limit":1e400,"note":"\\ud800"}')  # a lone surrogate and an exact number
    response = httpx.post(f"{proxy.url}/v1/chat/completions", content=body, headers=bearer(api_key), timeout=60)
    assert response.status_code == 400  # DeepSeek's own answer to the missing reasoning_content
    assert fake.last().body == body
    # Only this request's event: another test's answer may be logged just after this tail began.
    (skipped,) = log.wait_for("skipped", where=lambda e: "written back" in e["reason"])
    assert skipped["reason"].startswith("request body cannot be written back exactly")
    assert skipped["reason"].endswith("; forwarded unrepaired")


# --- 7. JSON too deep for the offline tools ------------------------------------------------------

# Deeper than any supported Python's JSON parsers follow (3.13 follows some thousands of levels, 3.11 one thousand).
DEEP = b'{"model":"deepseek-reasoner","messages":[{"role":"user","content":' + b"[" * 20000 + b"]" * 20000 + b"}]}"


@pytest.fixture(scope="module")
def deep_capture(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A flow file (mitmdump -w) with a repaired DeepSeek turn, a request 20,000 levels deep, and a turn after it."""
    out = tmp_path_factory.mktemp("deep") / "deep.mitm"
    api_key = "sk-test-deep-json"
    with reverse_proxy(fake.url, confdir, "-w", str(out), llm_cache="memory", llm_log="") as proxy:
        deepseek_turns(proxy, api_key, 1)
        response = httpx.post(f"{proxy.url}/v1/chat/completions", content=DEEP, headers=bearer(api_key), timeout=60)
        assert response.status_code == 400  # the provider cannot parse it; the proxy forwarded it as it came
        assert fake.last().body == DEEP
        deepseek_turns(proxy, api_key, 1)
    return out


@pytest.mark.slow
def test_the_offline_check_says_in_one_line_what_it_could_not_read(deep_capture: Path) -> None:
    result = offline_cli("check", str(deep_capture), "--no-diff")
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "RecursionError" not in result.stdout + result.stderr
    assert result.stdout.count("not checked: request body is JSON nested too deeply to parse") == 1
    # Every other exchange is still checked, the ones after it too.
    assert (
        result.stdout.count("through the proxy:") == 2
        and result.stdout.count("after repair: breaks no known rule") == 2
    )
    assert (
        "5 LLM request(s); 2 would fail as sent (#2, #5); 0 would still fail through the proxy; 1 could not be checked (#3)."
        in (result.stdout)
    )


@pytest.mark.slow
def test_the_export_keeps_every_exchange_it_can_and_says_which_it_cannot(deep_capture: Path, tmp_path: Path) -> None:
    result = offline_cli("export", str(deep_capture), str(tmp_path / "out"))
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 3, result.stdout + result.stderr
    assert "exchange #3: request body is JSON nested too deeply to parse; exported as text" in result.stderr
    assert len(list((tmp_path / "out").glob("0*.json"))) == 5
    assert offline_cli("check", str(tmp_path / "out")).returncode == 3  # the fixture replays the same way


# --- 10. the model read from the path ------------------------------------------------------------

AZURE = "/openai/deployments/{}/chat/completions?api-version=2024-10-21"
NO_MODEL = "/default-deepseek/v1/chat/completions"  # a gateway route that picks the model: bodies name none


def chat(proxy: MitmdumpProcess, path: str, api_key: str, messages: list[dict]) -> httpx.Response:
    """A chat completions request with no `model` in its body, as Azure OpenAI clients send it."""
    body = json.dumps({"messages": messages, "tools": TOOLS}).encode()
    headers = {"api-key": api_key, "content-type": "application/json"}
    return httpx.post(f"{proxy.url}{path}", content=body, headers=headers, timeout=60)


def turn_one(proxy: MitmdumpProcess, path: str, api_key: str) -> list[dict]:
    """Turn 1 through `path`, and turn 2's history as a client that drops reasoning_content sends it."""
    response = chat(proxy, path, api_key, [QUESTION])
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message["reasoning_content"] and message["tool_calls"]
    return history_as_sent(message, drop=("reasoning_content",), content=None)


def test_reasoning_goes_back_only_to_the_deployment_that_issued_it(
    fake: FakeProvider, proxy: MitmdumpProcess, proxy_state: Path, api_key: str
) -> None:
    history = turn_one(proxy, AZURE.format("deepseek-r1"), api_key)
    log = LogTail(proxy_state / "events.jsonl")
    # Another deployment, and a route that names no model, get nothing: DeepSeek's own 400.
    for path in (AZURE.format("deepseek-v3-2"), NO_MODEL):
        response = chat(proxy, path, api_key, history)
        assert response.status_code == 400 and "Missing `reasoning_content`" in response.text
        assert "reasoning_content" not in fake.last().doc["messages"][1]
    reasons = [e["reason"] for e in log.wait_for("skipped", 2, where=lambda e: "not replayed" in e["reason"])]
    assert reasons[0].endswith("came from model deepseek-r1; not replayed into model deepseek-v3-2")
    assert reasons[1].endswith("came from model deepseek-r1; not replayed into a request that named no model")
    # The deployment that issued it gets it back.
    assert chat(proxy, AZURE.format("deepseek-r1"), api_key, history).status_code == 200
    assert fake.last().doc["messages"][1]["reasoning_content"]


def test_a_request_that_names_no_model_gets_only_what_such_requests_left(
    fake: FakeProvider, proxy: MitmdumpProcess, api_key: str
) -> None:
    history = turn_one(proxy, NO_MODEL, api_key)
    response = chat(proxy, AZURE.format("deepseek-r1"), api_key, history)
    assert response.status_code == 400 and "reasoning_content" not in fake.last().doc["messages"][1]
    assert chat(proxy, NO_MODEL, api_key, history).status_code == 200
    assert fake.last().doc["messages"][1]["reasoning_content"]


# --- 4. credentials in headers the proxy did not know; the fallback across tenants ---------------


def post_chat(proxy: MitmdumpProcess, headers: dict[str, str], messages: list[dict]) -> httpx.Response:
    body = json.dumps({"model": DEEPSEEK, "messages": messages, "tools": TOOLS}).encode()
    return httpx.post(
        f"{proxy.url}/v1/chat/completions",
        content=body,
        headers={**headers, "content-type": "application/json"},
        timeout=60,
    )


def tool_turn(proxy: MitmdumpProcess, headers: dict[str, str]) -> dict:
    """Turn 1 of a DeepSeek conversation: the assistant message with its tool call and reasoning_content."""
    response = post_chat(proxy, headers, [QUESTION])
    assert response.status_code == 200, response.text
    return response.json()["choices"][0]["message"]


def own_call(turn: dict, call_id: str) -> list[dict]:
    """A turn-2 history whose assistant message holds the same call (name and arguments) under `call_id`: what a
    client that rewrites ids sends, or another user whose agent made the very same call."""
    call = {**turn["tool_calls"][0], "id": call_id}
    return history_as_sent({"tool_calls": [call]}, drop=("reasoning_content",), content=None)


@pytest.mark.parametrize(
    "name", ["x-litellm-api-key", "cf-aig-authorization", "x-portkey-api-key", "helicone-auth", "cookie"]
)
def test_a_gateway_credential_keeps_one_tenants_reasoning_from_another(
    fake: FakeProvider, proxy: MitmdumpProcess, name: str
) -> None:
    tenant = {name: f"tenant-a-{uuid.uuid4().hex}"}
    other = {name: f"tenant-b-{uuid.uuid4().hex}"}
    turn = tool_turn(proxy, tenant)
    response = post_chat(proxy, other, own_call(turn, "call_b_own_listing"))
    assert response.status_code == 400 and "Missing `reasoning_content`" in response.text
    assert "reasoning_content" not in fake.last().doc["messages"][1]
    # Within one tenant, the name-and-arguments fallback still finds a call whose id the client rewrote.
    assert post_chat(proxy, tenant, own_call(turn, "call_a_rewritten")).status_code == 200
    assert fake.last().doc["messages"][1]["reasoning_content"] == turn["reasoning_content"]


@pytest.mark.slow
def test_a_header_the_user_names_is_a_credential(fake: FakeProvider, confdir: Path) -> None:
    with reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log="", llm_credential_headers="X-Team-Id") as proxy:
        turn = tool_turn(proxy, {"x-team-id": "red"})
        assert post_chat(proxy, {"x-team-id": "blue"}, own_call(turn, "call_blue")).status_code == 400
        assert post_chat(proxy, {"x-team-id": "red"}, own_call(turn, "call_red")).status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("fallback", ["false", "true"])
def test_without_any_credential_only_ids_find_reasoning_unless_the_user_opts_in(
    fake: FakeProvider, confdir: Path, fallback: str
) -> None:
    with reverse_proxy(fake.url, confdir, llm_cache="memory", llm_log="", llm_anonymous_fallback=fallback) as proxy:
        turn = tool_turn(proxy, {})
        # The id the provider issued is found whatever the scope: no one else can know it.
        assert post_chat(proxy, {}, own_call(turn, turn["tool_calls"][0]["id"])).status_code == 200
        # A call with another id and the same name and arguments may be anyone's.
        response = post_chat(proxy, {}, own_call(turn, "call_someone_elses"))
        assert response.status_code == (200 if fallback == "true" else 400)
        assert ("reasoning_content" in fake.last().doc["messages"][1]) is (fallback == "true")


# --- 5. secrets of every shape, in every place ---------------------------------------------------

ANTHROPIC_TOOLS = [
    {
        "name": "list_directory",
        "description": "List the files in a directory.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
RESPONSES_TOOLS = [{"type": "function", **TOOLS[0]["function"]}]
STATELESS = {"store": False, "include": ["reasoning.encrypted_content"]}
NONCE = uuid.uuid4().hex[:20]
SHAPES = every_shape(NONCE)
CREDENTIALS = " ".join(value for value, _ in SHAPES.values())
SAID = f"Noting what the tool printed: {CREDENTIALS}"  # the model quoting them


def leaked(data: bytes | str) -> list[str]:
    """The planted shapes whose random part is in `data`."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [name for name, (_, marker) in SHAPES.items() if marker in text]


@dataclass
class SecretSession:
    state: Path
    output: str
    cache_while_running: bytes
    flows: Path
    turns: dict[str, int]  # status of each format's turn 2
    forwarded: dict[str, Recorded]


@pytest.fixture(scope="module")
def secret_session(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> SecretSession:
    state = tmp_path_factory.mktemp("secrets")
    flows = state / "session.mitm"
    say = {"x-fake-say": base64.b64encode(SAID.encode()).decode()}
    prompt = f"My keys, for later: {CREDENTIALS}"
    pasted = f"config.env:\n{SHAPES['env'][0]}\n{SHAPES['pem'][0]}"  # a tool result
    headers = {"authorization": "Bearer sk-test-secret-session", "content-type": "application/json", **say}
    turns, forwarded = {}, {}
    with reverse_proxy(
        fake.url, confdir, "-w", str(flows), llm_cache=state / "cache.db", llm_log=state / "events.jsonl"
    ) as proxy:
        with httpx.Client(base_url=proxy.url, headers=headers, timeout=60) as http:
            # DeepSeek: reasoning_content quotes the keys; the client drops it.
            question = {"role": "user", "content": prompt}
            body = {"model": DEEPSEEK, "messages": [question], "tools": TOOLS}
            message = http.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]
            history = history_as_sent(message, drop=("reasoning_content",), content=None)
            history[0], history[2]["content"] = question, pasted
            turns["deepseek"] = http.post("/v1/chat/completions", json=body | {"messages": history}).status_code
            forwarded["deepseek"] = fake.last()
            # Anthropic: the thinking quotes the keys; the client drops the thinking.
            question = {"role": "user", "content": prompt}
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 4096,
                "thinking": {"type": "enabled", "budget_tokens": 2048},
            }
            body |= {"tools": ANTHROPIC_TOOLS, "messages": [question]}
            content = http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"}).json()[
                "content"
            ]
            use = next(block for block in content if block["type"] == "tool_use")
            body["messages"] = [
                question,
                {"role": "assistant", "content": [use]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": pasted}]},
            ]
            response = http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
            turns["anthropic"], forwarded["anthropic"] = response.status_code, fake.last("/v1/messages")
            # Responses: the summary quotes the keys; the client drops the reasoning item.
            body = {"model": "gpt-5", "input": [{"role": "user", "content": prompt}], "tools": RESPONSES_TOOLS}
            body |= STATELESS
            output = http.post("/v1/responses", json=body).json()["output"]
            call = next(item for item in output if item["type"] == "function_call")
            body["input"] += [call, {"type": "function_call_output", "call_id": call["call_id"], "output": pasted}]
            turns["responses"] = http.post("/v1/responses", json=body).status_code
            forwarded["responses"] = fake.last("/v1/responses")
            # A provider's error that echoes the keys back: the diagnosis quotes it in the log, a comment and a line.
            body = {"model": DEEPSEEK, "messages": [{"role": "user", "content": prompt}]}
            echoed = {
                "x-fake-status": "400",
                "x-fake-say": base64.b64encode(f"Invalid key: {CREDENTIALS}".encode()).decode(),
            }
            assert http.post("/v1/chat/completions", json=body, headers=echoed).status_code == 400
        # DeepSeek's two turns and the first turns of the others (their second turns are refused)
        LogTail(state / "events.jsonl", whole=True).wait_for("captured", 4)
        cache = b"".join(path.read_bytes() for path in sorted(state.glob("cache.db*")))
    return SecretSession(state, proxy.output, cache, flows, turns, forwarded)


@pytest.mark.slow
def test_unsigned_reasoning_is_stored_masked_and_put_back_masked(secret_session: SecretSession) -> None:
    assert secret_session.turns["deepseek"] == 200
    restored = secret_session.forwarded["deepseek"].doc["messages"][1]["reasoning_content"]
    assert "[REDACTED]" in restored and leaked(restored) == []


def test_signed_reasoning_that_holds_a_secret_is_not_stored(secret_session: SecretSession) -> None:
    # What the provider signed cannot be stored masked: it is not stored, and the turn fails as it would without
    # the proxy (the client dropped it), with a skipped event that says why.
    assert secret_session.turns["anthropic"] == 400 and secret_session.turns["responses"] == 400
    events = LogTail(secret_session.state / "events.jsonl", whole=True).events("skipped")
    reasons = [e["reason"] for e in events if "holds a credential; not cached" in e["reason"]]
    assert len(reasons) == 2
    assert any("its thinking_blocks, thinking holds" in r for r in reasons)
    assert any("its summary holds" in r for r in reasons)


def test_no_planted_secret_is_in_the_log_the_cache_or_the_proxys_output(secret_session: SecretSession) -> None:
    state = secret_session.state
    log = b"".join(path.read_bytes() for path in state.glob("events.jsonl*"))
    assert b'"kind":"captured"' in log and b'"kind":"repaired"' in log
    assert leaked(log) == []
    assert leaked(secret_session.cache_while_running) == []
    assert leaked(b"".join(path.read_bytes() for path in state.glob("cache.db*"))) == []
    assert leaked(secret_session.output) == []


@pytest.mark.slow
def test_no_planted_secret_is_in_flow_comments_the_export_or_the_check_report(
    secret_session: SecretSession, tmp_path: Path
) -> None:
    with secret_session.flows.open("rb") as handle:
        comments = [flow.comment for flow in io.FlowReader(handle).stream()]
    assert any("llm repaired" in comment for comment in comments)
    assert any("llm 400 from" in comment and "Invalid key: [REDACTED]" in comment for comment in comments)
    assert leaked("\n".join(comments)) == []
    out = tmp_path / "fixture"
    assert offline_cli("export", str(secret_session.flows), str(out)).returncode == 0
    assert leaked(b"".join(path.read_bytes() for path in out.iterdir())) == []
    report = offline_cli("check", str(secret_session.flows))
    assert "would fail as sent" in report.stdout and leaked(report.stdout + report.stderr) == []


# --- 2. answers that would cost a quadratic parse -------------------------------------------------

ANSWERS = {
    "chat reasoning_details with distinct indexes": ("/v1/chat/completions", hostile_answers.chat_details),
    "chat tool calls without index": ("/v1/chat/completions", hostile_answers.chat_calls_without_index),
    "responses items without output_index": ("/v1/responses", hostile_answers.responses_items_without_index),
}
FRAGMENTS = 30_000  # 4 to 6 MB answers


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    upstream = HostileUpstream().start()
    yield upstream
    upstream.stop()


@pytest.fixture(scope="module")
def hostile_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile-state")


@pytest.fixture(scope="module")
def side_by_side(hostile: HostileUpstream, confdir: Path, hostile_state: Path) -> Iterator[dict[str, MitmdumpProcess]]:
    """The addon, and plain mitmdump that only streams event streams (as any LLM proxy must), both in front of
    the hostile upstream."""
    state = hostile_state
    addon = reverse_proxy(hostile.url, confdir, llm_cache=state / "cache.db", llm_log=state / "events.jsonl")
    plain = plain_streaming(hostile.url, confdir)
    with addon, plain:
        yield {"addon": addon, "plain": plain}


def answer_then_another(proxy: MitmdumpProcess, path: str, body: bytes) -> float:
    """Seconds until the client has the whole answer and then another conversation's (small) request answered:
    the reader's work, done after the answer's last byte, would hold that second request up."""
    started = time.monotonic()
    with httpx.Client(base_url=proxy.url, timeout=300) as http:
        with http.stream("POST", path, content=body, headers={"content-type": "application/json"}) as response:
            assert response.status_code == 200 and sum(len(piece) for piece in response.iter_raw()) > 4_000_000
        assert http.get("/another/conversation").status_code == 200
    return time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_an_answer_built_to_be_expensive_to_read_costs_what_plain_mitmdump_spends_on_it(
    hostile: HostileUpstream, side_by_side: dict[str, MitmdumpProcess], case: str
) -> None:
    path, make = ANSWERS[case]
    served = f"/{uuid.uuid4().hex}{path}"
    hostile.serve(served, Answer(headers={"content-type": "text/event-stream"}, body=lambda: [make(FRAGMENTS)]))
    body = json.dumps({"model": "m", "messages": [QUESTION], "input": [QUESTION], "stream": True}).encode()
    # Side by side, alternating, the fastest of two each: the machine's noise falls on both alike.
    seconds = {name: [] for name in side_by_side}
    for _ in range(2):
        for name, proxy in side_by_side.items():
            seconds[name].append(answer_then_another(proxy, served, body))
    addon, plain = min(seconds["addon"]), min(seconds["plain"])
    print(f"{case}: {addon:.2f}s through the addon, {plain:.2f}s through plain mitmdump")  # shown with -s
    assert addon < 3 * plain + 2.0, f"{case}: {addon:.2f}s through the addon, {plain:.2f}s through plain mitmdump"


# --- 3. answers too big to store or log -----------------------------------------------------------

MB = 1 << 20


def thinking_stream(size: int) -> Iterator[bytes]:
    """An Anthropic answer whose thinking is `size` bytes (64 KB a delta), then a tool call: 110 MB in the field."""

    def event(kind: str, doc: dict) -> bytes:
        return f"event: {kind}\ndata: {json.dumps(doc)}\n\n".encode()

    yield event("message_start", {"type": "message_start", "message": {"id": f"msg_{uuid.uuid4().hex}", "model": "c"}})
    yield event(
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    )
    piece = event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "y" * 65536}},
    )
    for _ in range(size // 65536):
        yield piece
    yield event(
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}},
    )
    yield event("content_block_stop", {"type": "content_block_stop", "index": 0})
    use = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex}", "name": "f", "input": {}}
    yield event("content_block_start", {"type": "content_block_start", "index": 1, "content_block": use})
    yield event("content_block_stop", {"type": "content_block_stop", "index": 1})
    yield event("message_stop", {"type": "message_stop"})


def arguments_stream(size: int) -> Iterator[bytes]:
    """A chat answer that streams `size` bytes of one tool call's arguments, 64 KB a chunk."""
    head = {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "r"}}],
    }
    yield b"data: " + json.dumps(head).encode() + b"\n\n"
    call = {"index": 0, "id": f"call_{uuid.uuid4().hex}", "function": {"name": "f", "arguments": ""}}
    yield (
        b"data: "
        + json.dumps({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}).encode()
        + b"\n\n"
    )
    fragment = {
        "id": "c1",
        "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "z" * 65536}}]}}],
    }
    chunk = b"data: " + json.dumps(fragment).encode() + b"\n\n"
    for _ in range(size // 65536):
        yield chunk
    yield b"data: [DONE]\n\n"


def stream_through(proxy: MitmdumpProcess, path: str, body: dict) -> int:
    with httpx.Client(base_url=proxy.url, timeout=600) as http:
        with http.stream("POST", path, json=body) as response:
            assert response.status_code == 200
            return sum(len(piece) for piece in response.iter_raw())


BIG = {
    "anthropic thinking": ("/v1/messages", lambda: thinking_stream(110 * MB), "thinking"),
    "chat tool call arguments": ("/v1/chat/completions", lambda: arguments_stream(300 * MB), "tool call arguments"),
    "chat reasoning_content": (
        "/v1/chat/completions",
        lambda: iter([json_event(reasoning_chunk("w" * (5 * MB)))]),
        "reasoning_content",
    ),
}


def reasoning_chunk(text: str) -> dict:
    call = {"index": 0, "id": f"call_{uuid.uuid4().hex}", "function": {"name": "f", "arguments": "{}"}}
    return {
        "id": "c1",
        "model": "m",
        "choices": [{"index": 0, "delta": {"reasoning_content": text, "tool_calls": [call]}}],
    }


def json_event(doc: dict) -> bytes:
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of a process from /proc: now (VmRSS), or its peak so far (VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:"))) / 1024


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BIG))
def test_an_answer_too_big_to_store_is_logged_bounded_not_cached_and_its_memory_given_back(
    hostile: HostileUpstream, confdir: Path, tmp_path: Path, case: str
) -> None:
    path, make, what = BIG[case]
    served = f"/{uuid.uuid4().hex}{path}"
    hostile.serve(served, Answer(headers={"content-type": "text/event-stream"}, body=make))
    body = {"model": "m", "max_tokens": 1, "messages": [QUESTION], "thinking": {"type": "enabled"}, "stream": True}
    log = LogTail(tmp_path / "events.jsonl")
    with reverse_proxy(
        hostile.url, confdir, llm_cache=tmp_path / "cache.db", llm_log=tmp_path / "events.jsonl"
    ) as proxy:
        httpx.get(f"{proxy.url}/warm-up", timeout=60)  # a first flow: what is measured is the answers' own cost
        started = memory_mb(proxy.pid)
        for answer in range(3):
            assert stream_through(proxy, served, body) > 5 * MB
            log.wait_for("skipped", answer + 1, where=lambda e: served in e["url"])
            if answer == 0:
                after_first = memory_mb(proxy.pid)
        after_all, peak = memory_mb(proxy.pid), memory_mb(proxy.pid, "VmHWM")
    skipped = [e for e in log.events("skipped") if served in e["url"]]
    assert [e["reason"] for e in skipped] == [
        f"answer over a bound: its {what} is over the 4 MiB limit per stored value; read to its end, not cached"
    ] * 3
    captured = [e for e in log.events("captured") if served in e["url"]]
    assert not any(e["stored"] for e in captured)  # what was read is logged (or nothing is), never stored
    # No log line is longer than its bound, the cache holds nothing of it, and memory is back where it was.
    assert max(len(line) for line in (tmp_path / "events.jsonl").read_bytes().splitlines()) <= 64 * 1024
    assert sum(p.stat().st_size for p in tmp_path.glob("cache.db*")) < 8 * MB
    assert after_all - after_first < 16, f"{case}: {after_first:.0f} MB after one answer, {after_all:.0f} after three"
    assert peak - started < 64, f"{case}: {started:.0f} MB before, {peak:.0f} MB at the peak"


# --- 1. compression bombs ---------------------------------------------------------------------------

BOMBS = ("br", "gzip", "zstd")


def chunks_of(data: bytes, size: int = 16 * 1024) -> Callable[[], Iterator[bytes]]:
    return lambda: (data[start : start + size] for start in range(0, len(data), size))


def raw_exchange(proxy: MitmdumpProcess, path: str, body: bytes = b"{}", **headers: str) -> tuple[int, bytes]:
    """A POST whose answer is read as it came off the wire (never decoded by the client)."""
    with httpx.Client(base_url=proxy.url, timeout=120) as http:
        with http.stream("POST", path, content=body, headers=headers) as response:
            return response.status_code, b"".join(response.iter_raw())


@dataclass
class BombRun:
    grown: float  # MB of peak resident memory over what the proxy had before the bombs
    log: list[dict]
    output: str


def run_bombs(hostile: HostileUpstream, proxy: MitmdumpProcess, prefix: str) -> BombRun:
    with proxy:
        assert raw_exchange(proxy, "/warm-up")[0] == 200
        started = memory_mb(proxy.pid)
        for encoding in BOMBS:
            payload = hostile_answers.bomb(encoding)
            json_type = {"content-type": "application/json", "content-encoding": encoding}
            # A compressed request to any path, and to an LLM route: it reaches the upstream as it was sent.
            for path in ("/upload", "/v1/chat/completions"):
                status, _ = raw_exchange(proxy, f"/{prefix}{path}", payload, **json_type)
                assert status == 200 and hostile.last().body == payload
            # Answers: JSON, an event stream, an error; the client gets each as it was sent.
            answers = {
                "json": Answer(headers=json_type, body=payload),
                "sse": Answer(headers={**json_type, "content-type": "text/event-stream"}, body=chunks_of(payload)),
                "error": Answer(status=400, headers=json_type, body=payload),
            }
            for kind, answer in answers.items():
                path = f"/{prefix}/{encoding}/{kind}/v1/chat/completions"
                hostile.serve(path, answer)
                body = json.dumps({"model": "m", "messages": [QUESTION], "stream": kind == "sse"}).encode()
                status, received = raw_exchange(proxy, path, body, **{"content-type": "application/json"})
                assert (status, received) == (answer.status, payload)
            # Other traffic goes on meanwhile.
            assert raw_exchange(proxy, "/another/conversation")[0] == 200
        grown = memory_mb(proxy.pid, "VmHWM") - started
    return BombRun(grown, [], proxy.output)


@pytest.fixture(scope="module")
def bombs_side_by_side(
    hostile: HostileUpstream, confdir: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, BombRun]:
    for encoding in BOMBS:
        hostile_answers.bomb(encoding)  # made before any proxy runs, outside what is measured
    state = tmp_path_factory.mktemp("bombs")
    plain = plain_streaming(hostile.url, confdir)
    addon = reverse_proxy(hostile.url, confdir, llm_cache=state / "cache.db", llm_log=state / "events.jsonl")
    runs = {"plain": run_bombs(hostile, plain, "plain"), "addon": run_bombs(hostile, addon, "addon")}
    runs["addon"].log = LogTail(state / "events.jsonl", whole=True).events()
    return runs


@pytest.mark.slow
def test_bombs_cost_the_addon_no_more_memory_than_plain_mitmdump_plus_a_bound(
    bombs_side_by_side: dict[str, BombRun],
) -> None:
    addon, plain = bombs_side_by_side["addon"].grown, bombs_side_by_side["plain"].grown
    print(f"bombs: peak memory +{addon:.0f} MB through the addon, +{plain:.0f} MB through plain mitmdump")  # -s
    assert addon <= plain + 64, (
        f"peak memory grew {addon:.0f} MB through the addon, {plain:.0f} MB through plain mitmdump"
    )


@pytest.mark.slow
def test_each_bomb_on_an_llm_route_is_forwarded_untouched_and_said_so(bombs_side_by_side: dict[str, BombRun]) -> None:
    log = bombs_side_by_side["addon"].log
    reasons = [(e["url"].split("/")[4:6], e["reason"]) for e in log if e["kind"] == "skipped"]
    for encoding in BOMBS:
        assert [r for where, r in reasons if where == [encoding, "json"]] == [
            "response body decodes to more than 16 MiB; not read"
        ]
        assert [r for where, r in reasons if where == [encoding, "sse"]] == [
            "stream copy decodes to more than 16 MiB; the rest of it is not read (the client gets all of it)"
        ]
    requests = [e["reason"] for e in log if e["kind"] == "skipped" and e["url"].endswith("/addon/v1/chat/completions")]
    assert requests == ["request body decodes to more than 16 MiB; forwarded untouched"] * len(BOMBS)
    # Nothing on another path was even decoded, and no error answer's bomb got in the way of its diagnosis.
    assert not any("/upload" in e.get("url", "") for e in log)
    assert len([e for e in log if e["kind"] == "diagnosed"]) == len(BOMBS)
    assert not [e for e in log if e["kind"] == "failure"]
    assert "Traceback" not in bombs_side_by_side["addon"].output
