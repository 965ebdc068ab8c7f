"""End to end: reasoning stays with the credential and the host it was issued to; secrets stay out of what is written.

`test_e2e_proxy_behaviour.py` already shows a second bearer token getting nothing, and a bearer token,
`key=` and a cookie staying out of the log and the cache (read after the proxy stopped, under the
runner's umask); `test_e2e_offline.py` shows a bearer token, `key=` and one key in a prompt staying
out of an export and a check report. This file covers the rest:

* every carrier `addon/shared/scope.py` reads (Authorization, api-key, x-api-key, x-goog-api-key, `?key=`),
  each sent alone by the client that uses it, against another credential and against none, and a
  second host name for the same server (one proxy in regular mode, reached as 127.0.0.1 and localhost);
* one recorded session in three wire formats with every carrier and a cookie on every request, and
  credential-shaped text in prompts, the model's words and tool results: the event log and every byte
  of the SQLite files (.db, -wal and -shm read while the proxy still holds them), the flow file (which
  may keep them), the export of that flow file, and the offline check's report;
* the modes of the state directory, the log and the cache files, and the exported fixture files,
  created under a permissive umask.
"""

from __future__ import annotations

import json
import re
import sqlite3
import stat
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.support.event_log import LogTail, of_kind
from tests.support.fake_provider import FakeProvider, Recorded
from tests.support.proxy import MitmdumpProcess
from tests.support.turns import QUESTION, TOOLS, first_turn, history_as_sent

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent
DEEPSEEK = "deepseek-reasoner"
DEEPSEEK_MISSING = "Missing `reasoning_content` field in the assistant message at message index 1."
CLAUDE = "claude-sonnet-4-5"
CLAUDE_MISSING = "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."
GEMINI = "gemini-3-pro-preview"
GEMINI_MISSING = "Function call is missing a thought_signature in functionCall parts."
ANTHROPIC_TOOLS = [
    {
        "name": "list_directory",
        "description": "List the files in a directory.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
GEMINI_TOOLS = [
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
CARRIER_HEADERS = ("authorization", "api-key", "x-api-key", "x-goog-api-key")


def received(fake: FakeProvider, secret: str | None) -> Recorded:
    """The latest request the fake received carrying `secret` (None: carrying no credential at all)."""
    for request in reversed(fake.requests):
        carried = [request.headers[name] for name in CARRIER_HEADERS if name in request.headers]
        carried += [request.path.partition("?")[2]] if "key=" in request.path else []
        if (secret is None and not carried) or (secret is not None and any(secret in value for value in carried)):
            return request
    raise AssertionError(f"the fake received no request with {secret!r}")


def carriers_of(request: Recorded) -> set[str]:
    """Which credential carriers a request arrived with."""
    found = {name for name in CARRIER_HEADERS if name in request.headers}
    return found | ({"key"} if "key=" in request.path.partition("?")[2] else set())


# --- one scope per credential and per host -------------------------------------------------------
#
# One proxy in regular (forward) mode: the clients name the upstream host themselves, so one process
# sees the same fake as 127.0.0.1 and as localhost. Gemini's placeholder is off, so a request that
# gets nothing from the cache reaches the fake exactly as the client sent it.


@pytest.fixture(scope="module")
def forward(confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MitmdumpProcess]:
    state = tmp_path_factory.mktemp("security-forward")
    with MitmdumpProcess(
        "--set",
        f"llm_cache={state / 'cache.db'}",
        "--set",
        f"llm_log={state / 'events.jsonl'}",
        "--set",
        "llm_signature_placeholder=off",
        "--set",
        "llm_recover=false",  # a turn nothing is put back for fails as without the proxy
        confdir=confdir,
    ) as process:
        yield process


@dataclass
class Outcome:
    status: int
    text: str


class Chat:
    """DeepSeek thinking mode through the openai SDK: `OpenAI` sends a bearer token, `AzureOpenAI` an api-key."""

    error = DEEPSEEK_MISSING

    def __init__(self, *, azure: bool) -> None:
        self.azure = azure

    def _llm(self, base_url: str, secret: str | None, proxy: str) -> openai.OpenAI:
        http = httpx.Client(proxy=proxy, timeout=30)
        options: dict[str, Any] = dict(api_key=secret or "unused", max_retries=0, http_client=http)
        if self.azure:
            return openai.AzureOpenAI(base_url=f"{base_url}/v1", api_version="2024-10-21", **options)
        return openai.OpenAI(base_url=f"{base_url}/v1", **options)

    def first(self, base_url: str, secret: str, proxy: str) -> list[dict[str, Any]]:
        with self._llm(base_url, secret, proxy) as llm:
            turn = first_turn(llm, DEEPSEEK, stream=False)
        assert turn["reasoning_content"]
        return history_as_sent(turn, drop=("reasoning_content",), content=None)

    def second(self, base_url: str, secret: str | None, proxy: str, history: list[dict[str, Any]]) -> Outcome:
        # The SDKs insist on a key; a request without one is made by omitting the header it goes in.
        omit = {} if secret else {("api-key" if self.azure else "Authorization"): openai.Omit()}
        with self._llm(base_url, secret, proxy) as llm:
            try:
                answer = llm.chat.completions.create(model=DEEPSEEK, messages=history, tools=TOOLS, extra_headers=omit)
            except openai.APIStatusError as e:
                return Outcome(e.status_code, e.message)
        return Outcome(200, answer.choices[0].message.content or "")

    @staticmethod
    def restored(doc: dict[str, Any]) -> bool:
        return "reasoning_content" in doc["messages"][1]


class Anthropic:
    """Anthropic Messages with thinking, through httpx with the key in x-api-key."""

    error = CLAUDE_MISSING

    @staticmethod
    def _post(base_url: str, secret: str | None, proxy: str, messages: list[dict[str, Any]]) -> httpx.Response:
        body = {
            "model": CLAUDE,
            "max_tokens": 4096,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "tools": ANTHROPIC_TOOLS,
            "messages": messages,
        }
        headers = {"anthropic-version": "2023-06-01"} | ({"x-api-key": secret} if secret else {})
        with httpx.Client(proxy=proxy, timeout=30) as http:
            return http.post(f"{base_url}/v1/messages", json=body, headers=headers)

    def first(self, base_url: str, secret: str, proxy: str) -> list[dict[str, Any]]:
        question = {"role": "user", "content": QUESTION["content"]}
        response = self._post(base_url, secret, proxy, [question])
        assert response.status_code == 200, response.text
        content = response.json()["content"]
        assert content[0]["type"] == "thinking"
        uses = [block for block in content if block["type"] == "tool_use"]
        results = [{"type": "tool_result", "tool_use_id": b["id"], "content": "a.txt\nb.txt"} for b in uses]
        dropped = {"role": "assistant", "content": [b for b in content if b["type"] != "thinking"]}
        return [question, dropped, {"role": "user", "content": results}]

    def second(self, base_url: str, secret: str | None, proxy: str, history: list[dict[str, Any]]) -> Outcome:
        response = self._post(base_url, secret, proxy, history)
        return Outcome(response.status_code, response.text)

    @staticmethod
    def restored(doc: dict[str, Any]) -> bool:
        return doc["messages"][1]["content"][0]["type"] == "thinking"


class Gemini:
    """The Gemini API through httpx, the key in x-goog-api-key or in the query (`?key=`)."""

    error = GEMINI_MISSING

    def __init__(self, *, in_query: bool) -> None:
        self.in_query = in_query

    def _post(self, base_url: str, secret: str | None, proxy: str, contents: list[dict[str, Any]]) -> httpx.Response:
        url = f"{base_url}/v1beta/models/{GEMINI}:generateContent"
        params = {"key": secret} if secret and self.in_query else {}
        headers = {"x-goog-api-key": secret} if secret and not self.in_query else {}
        with httpx.Client(proxy=proxy, timeout=30) as http:
            return http.post(url, params=params, headers=headers, json={"contents": contents, "tools": GEMINI_TOOLS})

    def first(self, base_url: str, secret: str, proxy: str) -> list[dict[str, Any]]:
        question = {"role": "user", "parts": [{"text": QUESTION["content"]}]}
        response = self._post(base_url, secret, proxy, [question])
        assert response.status_code == 200, response.text
        parts = response.json()["candidates"][0]["content"]["parts"]
        assert "thoughtSignature" in parts[0]
        calls = [part["functionCall"] for part in parts if "functionCall" in part]
        results = [{"functionResponse": {"name": c["name"], "response": {"result": "a.txt"}}} for c in calls]
        dropped = {"role": "model", "parts": [{"functionCall": call} for call in calls]}
        return [question, dropped, {"role": "user", "parts": results}]

    def second(self, base_url: str, secret: str | None, proxy: str, history: list[dict[str, Any]]) -> Outcome:
        response = self._post(base_url, secret, proxy, history)
        return Outcome(response.status_code, response.text)

    @staticmethod
    def restored(doc: dict[str, Any]) -> bool:
        return "thoughtSignature" in doc["contents"][1]["parts"][0]


# Every carrier `addon/shared/scope.py` reads, each sent alone, by the client that uses it.
CARRIERS: dict[str, Chat | Anthropic | Gemini] = {
    "authorization": Chat(azure=False),
    "api-key": Chat(azure=True),
    "x-api-key": Anthropic(),
    "x-goog-api-key": Gemini(in_query=False),
    "key": Gemini(in_query=True),
}


@pytest.mark.slow
@pytest.mark.parametrize("carrier", list(CARRIERS))
def test_reasoning_is_only_put_back_for_the_credential_it_was_issued_to(
    fake: FakeProvider, forward: MitmdumpProcess, carrier: str
) -> None:
    conversation = CARRIERS[carrier]
    owner, other = (f"{who}-{carrier}-{uuid.uuid4().hex}" for who in ("owner", "other"))
    history = conversation.first(fake.url, owner, forward.url)
    assert carriers_of(received(fake, owner)) == {carrier}

    # Another credential, then none at all: turn 2 reaches the fake as sent and gets the provider's real 400.
    for stranger in (other, None):
        outcome = conversation.second(fake.url, stranger, forward.url, history)
        assert outcome.status == 400 and conversation.error in outcome.text, (stranger, outcome)
        request = received(fake, stranger)
        assert carriers_of(request) == ({carrier} if stranger else set())
        assert not conversation.restored(request.doc), stranger

    # The credential the reasoning was issued to still gets it back: the refusals above dropped nothing.
    outcome = conversation.second(fake.url, owner, forward.url, history)
    assert outcome.status == 200, outcome
    assert conversation.restored(received(fake, owner).doc)


def test_reasoning_is_only_put_back_for_the_host_it_came_from(fake: FakeProvider, forward: MitmdumpProcess) -> None:
    """The same fake, the same credential, reached as 127.0.0.1 and as localhost: two hosts, two scopes."""
    chat, token = Chat(azure=False), f"sk-test-{uuid.uuid4().hex}"
    history = chat.first(fake.url, token, forward.url)
    assert received(fake, token).headers["host"] == fake.url.removeprefix("http://")

    other_host = fake.url.replace("127.0.0.1", "localhost")
    outcome = chat.second(other_host, token, forward.url, history)
    assert outcome.status == 400 and DEEPSEEK_MISSING in outcome.text, outcome
    request = received(fake, token)
    assert request.headers["host"] == other_host.removeprefix("http://")
    assert not chat.restored(request.doc)

    outcome = chat.second(fake.url, token, forward.url, history)
    assert outcome.status == 200, outcome
    assert chat.restored(received(fake, token).doc)


# --- secrets in what the proxy and the tools write down ------------------------------------------


SECRET_SHAPES = {
    # carriers the scope reads, and cookies
    "bearer": "sk-proj-{}",
    "azure": "{}",
    "anthropic": "sk-ant-api03-{}",
    "google": "AIza{}",
    "cookie": "{}",
    "query": "AIza{}",
    # pasted into a prompt or a tool result: the credential shapes that export and check redact in bodies
    "body_openai": "sk-proj-{}",
    "body_github": "ghp_{}",
    "body_google": "AIza{}",
    "body_header": "{}",
    "body_bearer": "{}",
    "body_url": "{}",
    "body_json": "{}",
}


class Secrets:
    """One unique secret per place; each is found by its marker or its random part, so a partial copy counts."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        for name, shape in SECRET_SHAPES.items():
            self.values[name] = shape.format(f"PLANTED{name.replace('_', '').upper()}{uuid.uuid4().hex}")

    def __getattr__(self, name: str) -> str:
        try:
            return self.__dict__["values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def headers(self) -> dict[str, str]:
        return {
            "authorization": f"Bearer {self.bearer}",
            "api-key": self.azure,
            "x-api-key": self.anthropic,
            "x-goog-api-key": self.google,
            "cookie": f"session={self.cookie}; theme=dark",
        }

    def prompt(self) -> str:
        return (
            f"Deploy with {self.body_openai}, push with {self.body_github}, the maps key is {self.body_google}. "
            f"It fails: curl -H 'x-api-key: {self.body_header}' -H 'Authorization: Bearer {self.body_bearer}' "
            f"'https://api.example.com/v1/items?key={self.body_url}'"
        )

    def found_in(self, data: bytes) -> list[str]:
        """The secrets of which `data` holds the marker ("PLANTEDBEARER") or the random part."""
        found = []
        for name, value in self.values.items():
            marker = value[value.index("PLANTED") :]
            if marker[:-32].encode() in data or marker[-32:].encode() in data:
                found.append(name)
        return found


UMASK = 0o002  # group-writable and world-readable by default: only an explicit mode keeps a file private


def with_umask(process: MitmdumpProcess, umask: int, **env: str) -> MitmdumpProcess:
    """The same mitmdump, started under `umask` with `env` added to its environment."""
    wrapper = f'umask {umask:03o} && exec "$@"'
    process.command = ["env", *(f"{k}={v}" for k, v in env.items()), "sh", "-c", wrapper, "mitmdump", *process.command]
    return process


@dataclass
class Recording:
    secrets: Secrets
    state: Path  # the state directory the addon created
    while_running: dict[str, tuple[int, bytes]]  # file name -> (mode, content), read before the proxy stopped
    after_exit: dict[str, tuple[int, bytes]]
    flows: Path
    export: Path
    export_result: subprocess.CompletedProcess[str]
    check_result: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]


def snapshot(directory: Path) -> dict[str, tuple[int, bytes]]:
    return {path.name: (stat.S_IMODE(path.stat().st_mode), path.read_bytes()) for path in directory.iterdir()}


def wait_for_events(log: Path, wanted: dict[str, int]) -> None:
    """Until the log holds at least so many events of each kind."""
    LogTail(log, whole=True).wait(lambda events: all(len(of_kind(events, k)) >= n for k, n in wanted.items()))


def sse_parts(text: str) -> list[dict[str, Any]]:
    docs = [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]
    return [part for doc in docs for part in doc["candidates"][0]["content"]["parts"]]


def converse(base_url: str, secrets: Secrets) -> None:
    """Three formats, turn 1 and a turn 2 that dropped the reasoning, every carrier on every request; a 400; a skip."""
    headers, query, prompt = secrets.headers(), {"key": secrets.query}, secrets.prompt()
    pasted = f"config.env: OPENAI_API_KEY={secrets.body_openai}"  # a tool result
    echoed = f"I will list the directory, then deploy with {secrets.body_github}."  # the model quoting the user

    # chat completions (DeepSeek) with the openai SDK, which sends the bearer itself
    llm = openai.OpenAI(
        base_url=f"{base_url}/v1",
        api_key=secrets.bearer,
        max_retries=0,
        default_headers={name: value for name, value in headers.items() if name != "authorization"},
        default_query=query,
    )
    chat_question = {"role": "user", "content": prompt}
    message = llm.chat.completions.create(model=DEEPSEEK, messages=[chat_question], tools=TOOLS).choices[0].message
    turn = message.model_dump(exclude_none=True) | (message.model_extra or {})
    history = history_as_sent(turn, drop=("reasoning_content",), content=None)
    history[0], history[2]["content"] = chat_question, pasted
    assert llm.chat.completions.create(model=DEEPSEEK, messages=history, tools=TOOLS).choices[0].message.content
    # a turn 2 whose turn 1 the proxy never saw: the provider's 400, diagnosed
    unseen = {"id": "call_unseen", "type": "function", "function": {"name": "list_directory", "arguments": "{}"}}
    history = [
        chat_question,
        {"role": "assistant", "content": None, "tool_calls": [unseen]},
        {"role": "tool", "tool_call_id": "call_unseen", "content": pasted},
    ]
    with pytest.raises(openai.BadRequestError, match="Missing `reasoning_content`"):
        llm.chat.completions.create(model=DEEPSEEK, messages=history, tools=TOOLS)

    with httpx.Client(base_url=base_url, headers=headers, params=query, timeout=30) as http:
        # Anthropic Messages with thinking
        question = {"role": "user", "content": prompt}
        body = {"model": CLAUDE, "max_tokens": 4096, "thinking": {"type": "enabled", "budget_tokens": 2048}}
        body |= {"tools": ANTHROPIC_TOOLS, "messages": [question]}
        answer = http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
        assert answer.status_code == 200, answer.text
        use = next(block for block in answer.json()["content"] if block["type"] == "tool_use")
        body["messages"] = [
            question,
            # the client kept the model's words and the call, and dropped the thinking before them
            {"role": "assistant", "content": [{"type": "text", "text": echoed}, use]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use["id"], "content": pasted}]},
        ]
        answer = http.post("/v1/messages", json=body, headers={"anthropic-version": "2023-06-01"})
        assert answer.status_code == 200, answer.text

        # Gemini API, streamed; the tool result holds a secret under a key that names one
        path, params = f"/v1beta/models/{GEMINI}:streamGenerateContent", {"alt": "sse", **query}
        question = {"role": "user", "parts": [{"text": prompt}]}
        answer = http.post(path, params=params, json={"contents": [question], "tools": GEMINI_TOOLS})
        assert answer.status_code == 200, answer.text
        call = next(part["functionCall"] for part in sse_parts(answer.text) if "functionCall" in part)
        result = {"name": call["name"], "response": {"result": pasted, "api_key": secrets.body_json}}
        contents = [
            question,
            {"role": "model", "parts": [{"functionCall": call}]},
            {"role": "user", "parts": [{"functionResponse": result}]},
        ]
        answer = http.post(path, params=params, json={"contents": contents, "tools": GEMINI_TOOLS})
        assert answer.status_code == 200, answer.text

        # cut-off JSON: forwarded unchanged and logged as skipped, with its URL
        cut = json.dumps({"model": DEEPSEEK, "messages": [chat_question, {"role": "assistant", "tool_calls": []}]})
        answer = http.post("/v1/chat/completions", content=cut[:-3], headers={"content-type": "application/json"})
        assert answer.status_code == 400, answer.text


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        umask=UMASK,
    )


@pytest.fixture(scope="module")
def recording(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Recording:
    """One session through a proxy that uses its default state directory and writes a flow file, under UMASK."""
    root = tmp_path_factory.mktemp("security-recording")
    xdg, flows, export = root / "xdg", root / "session.mitm", root / "fixture"
    state = xdg / "llm-reasoning-proxy"  # settings.default_state_dir(): the addon creates it
    secrets = Secrets()
    proxy = with_umask(
        MitmdumpProcess("--mode", f"reverse:{fake.url}", "-w", str(flows), confdir=confdir),
        UMASK,
        XDG_STATE_HOME=str(xdg),
    )
    with proxy:
        assert f"cache={state / 'cache.db'}" in proxy.output
        converse(proxy.url, secrets)
        wait_for_events(state / "events.jsonl", {"captured": 3, "repaired": 3, "diagnosed": 2, "skipped": 1})
        while_running = snapshot(state)
    after_exit = snapshot(state)
    events = [json.loads(line) for line in after_exit["events.jsonl"][1].splitlines()]
    export_result = run_cli("export", str(flows), str(export))
    check_result = run_cli("check", str(flows))
    return Recording(secrets, state, while_running, after_exit, flows, export, export_result, check_result, events)


@pytest.mark.slow
def test_no_credential_reaches_the_event_log_or_the_cache_files(recording: Recording, tmp_path: Path) -> None:
    secrets = recording.secrets
    # Read while the proxy held the cache open: the newest pages live in -wal, its index in -shm.
    assert set(recording.while_running) == {"cache.db", "cache.db-wal", "cache.db-shm", "events.jsonl"}
    assert set(recording.after_exit) == {"cache.db", "events.jsonl"}  # the last connection checkpointed
    for moment, files in (("while running", recording.while_running), ("after exit", recording.after_exit)):
        for name, (_, content) in files.items():
            assert secrets.found_in(content) == [], f"{name} {moment}"

    # They were there to leak: every request carried them, and the log and the cache hold the session.
    assert secrets.found_in(recording.flows.read_bytes()) == list(SECRET_SHAPES)
    kinds = [event["kind"] for event in recording.events]
    assert kinds.count("captured") >= 3 and kinds.count("repaired") == 3 and {"diagnosed", "skipped"} <= set(kinds)
    urls = [event["url"] for event in recording.events if "url" in event]
    assert len(urls) == len(recording.events) - 1  # every event but `started` names its URL ...
    assert all("key=%5BREDACTED%5D" in url or "key=[REDACTED]" in url for url in urls), urls  # ... with key= masked
    copy = tmp_path / "cache.db"
    copy.write_bytes(recording.after_exit["cache.db"][1])
    with closing(sqlite3.connect(copy)) as db:
        assert db.execute("SELECT count(*) FROM records").fetchone()[0] >= 3
        scopes = {scope for (scope,) in db.execute("SELECT DISTINCT scope FROM record_keys")}
    # one scope for the whole session: the host and a hash of every carrier, never a carrier itself
    assert len(scopes) == 1 and re.fullmatch(r"127\.0\.0\.1:\d+\|[0-9a-f]{32}", scopes.pop())


@pytest.mark.slow
def test_the_flow_file_keeps_credentials_but_the_exported_fixture_does_not(recording: Recording) -> None:
    secrets, result = recording.secrets, recording.export_result
    assert result.returncode == 0, result.stderr
    assert "wrote 8 exchange(s)" in result.stdout
    exported = {path.name: path.read_bytes() for path in sorted(recording.export.iterdir())}
    assert len(exported) == 9
    for name, content in exported.items():
        assert secrets.found_in(content) == [], name
    # What held them is still there, masked: the prompt, the model's words, a tool result, a secret-named key.
    first = json.loads(exported["0001.json"])
    assert first["request"]["url"].endswith("/v1/chat/completions")  # key= removed, not masked
    assert not {"authorization", "api-key", "x-api-key", "x-goog-api-key", "cookie"} & set(first["request"]["headers"])
    assert first["request"]["body"]["messages"][0]["content"].startswith("Deploy with [REDACTED], push with [REDACTED]")
    claude = json.loads(exported["0005.json"])["request"]["body"]["messages"]
    assert claude[1]["content"][0]["text"] == "I will list the directory, then deploy with [REDACTED]."
    gemini = json.loads(exported["0007.json"])["request"]["body"]["contents"][2]["parts"][0]["functionResponse"]
    assert gemini["response"] == {"result": "config.env: OPENAI_API_KEY=[REDACTED]", "api_key": "[REDACTED]"}


@pytest.mark.slow
def test_the_offline_check_report_holds_no_credential(recording: Recording) -> None:
    result = recording.check_result
    assert result.returncode == 1, result.stderr  # #3 still fails: nothing was cached for it
    report = result.stdout
    assert recording.secrets.found_in(report.encode()) == []
    assert report.count("?key=[REDACTED]") == 8  # every URL, query key masked
    # The Anthropic repair's diff shows the words the client sent next to the inserted thinking, key masked.
    assert '"text": "I will list the directory, then deploy with [REDACTED]."' in report
    assert (
        "8 LLM request(s); 4 would fail as sent (#2, #3, #5, #7); 1 would still fail through the proxy (#3)." in report
    )


@pytest.mark.slow
def test_state_directory_log_and_cache_files_are_owner_only_under_a_permissive_umask(recording: Recording) -> None:
    assert stat.S_IMODE(recording.state.parent.stat().st_mode) == 0o775  # the umask applied to what was not ours
    modes = {"state directory": oct(stat.S_IMODE(recording.state.stat().st_mode))}
    modes |= {f"{name} while running": oct(mode) for name, (mode, _) in recording.while_running.items()}
    modes |= {f"{name} after exit": oct(mode) for name, (mode, _) in recording.after_exit.items()}
    assert modes == {
        "state directory": "0o700",
        "cache.db while running": "0o600",
        "cache.db-wal while running": "0o600",
        "cache.db-shm while running": "0o600",
        "events.jsonl while running": "0o600",
        "cache.db after exit": "0o600",
        "events.jsonl after exit": "0o600",
    }


@pytest.mark.slow
def test_exported_fixture_files_are_owner_only_under_a_permissive_umask(recording: Recording) -> None:
    modes = {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in recording.export.iterdir()}
    assert len(modes) == 9
    assert modes == dict.fromkeys(modes, "0o600")
