"""End to end: real LLM clients run a tool loop through scripts/with-proxy, against the fake under real host names.

Each client (pinned, installed by scripts/test: tests/support/real_clients.py) runs headless with a home of its own,
a fake key and the permission to run its tools, and knows nothing of the proxy: with-proxy's variables alone take it
through mitmdump to the fake provider (tests/support/real_hosts.py). The fake answers turn 1 with a call of one of the
client's own tools, reading a file whose text only the tool's output can carry into turn 2. The proxy captures the
reasoning state of turn 1; turn 2 reaches the provider holding it byte for byte, put back by the proxy (`repaired`)
where the client drops it, passed through where the client keeps it (as each of these does today).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.event_log import LogTail
from tests.support.fake_provider import Recorded, ToolCall, decode_body
from tests.support.real_clients import CLIENTS, NODE, Package, client_path, installed, why_missing
from tests.support.real_hosts import RealHostsFake
from tests.support.with_proxy import ANSWER, WithProxy

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
PROMPT = "What does notes.txt say?"


@dataclass
class Workspace:
    """A client's own home (its configuration, sessions, caches) and the folder it works in, holding the notes."""

    root: Path
    api_key: str
    marker: str = field(default_factory=lambda: f"notes-{uuid.uuid4().hex}")

    def __post_init__(self) -> None:
        self.home.mkdir(parents=True)
        self.work.mkdir(parents=True)
        self.notes.write_text(f"The notes say {self.marker}.\n")

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def notes(self) -> Path:
        return self.work / "notes.txt"

    def write(self, relative: str, content: dict | str) -> None:
        path = self.home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content))


@dataclass(frozen=True)
class Run:
    """How to run one client headless: its command, its variables, and the tool call the fake makes it run."""

    command: list[str]
    env: dict[str, str]
    tool: ToolCall


@dataclass(frozen=True)
class Client:
    package: Package
    wire_format: str  # as the proxy's events name it
    prepare: Callable[[Workspace], Run]
    drops_state: bool = False  # whether turn 2 leaves out what turn 1 issued, for the proxy to put back
    name: str = ""  # the test's id, where a client is run against more than one provider

    @property
    def id(self) -> str:
        return self.name or self.package.name


def opencode(space: Workspace, *model: str) -> Run:
    # OpenCode's own variables: https://opencode.ai/docs/cli/#environment-variables; `run --auto` approves its tools.
    env = {"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1"}
    env |= {"DEEPSEEK_API_KEY": space.api_key, "ANTHROPIC_API_KEY": space.api_key}
    command = ["opencode", "run", "--auto", "-m", *model, PROMPT]
    return Run(command, env, ToolCall("read", {"filePath": str(space.notes)}))


def opencode_deepseek(space: Workspace) -> Run:
    return opencode(space, "deepseek/deepseek-flash")


def opencode_anthropic(space: Workspace) -> Run:
    return opencode(space, "anthropic/claude-opus-4-5", "--variant", "high")  # the variant turns thinking on


def claude_code(space: Workspace) -> Run:
    # --bare: ANTHROPIC_API_KEY only, no OAuth, hooks or plugins; IS_SANDBOX lets root skip the permission checks.
    env = {
        "ANTHROPIC_API_KEY": space.api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
    }
    command = ["claude", "-p", "--bare", "--dangerously-skip-permissions", PROMPT]
    return Run(command, env, ToolCall("Read", {"file_path": str(space.notes)}))


# Codex's built-in OpenAI provider talks to the Responses API over a WebSocket, which the proxy passes through
# unrepaired; a provider of the same host without it takes the HTTP path (supports_websockets, as in
# https://github.com/github/gh-aw/issues/27710).
CODEX_CONFIG = """\
model_provider = "openai-http"

[model_providers.openai-http]
name = "OpenAI over HTTP"
base_url = "https://api.openai.com/v1"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
supports_websockets = false
"""


def codex(space: Workspace) -> Run:
    space.write(".codex/config.toml", CODEX_CONFIG)
    env = {"OPENAI_API_KEY": space.api_key, "CODEX_HOME": str(space.home / ".codex")}
    command = ["codex", "exec", "--skip-git-repo-check", "--ephemeral", "--dangerously-bypass-approvals-and-sandbox"]
    command += ["-m", "gpt-5.1-codex", PROMPT]
    return Run(command, env, ToolCall("exec_command", {"cmd": "cat notes.txt"}))


def gemini_cli(space: Workspace) -> Run:
    # https://geminicli.com/docs/get-started/configuration/: no usage statistics, no update check, the API key.
    settings = {
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    }
    space.write(".gemini/settings.json", settings)
    # A model named: left to pick one, Gemini CLI first asks a classifier model, which the fake cannot answer.
    command = ["gemini", "--yolo", "--skip-trust", "-m", "gemini-3.1-pro-preview", "-p", PROMPT]
    return Run(command, {"GEMINI_API_KEY": space.api_key}, ToolCall("read_file", {"file_path": str(space.notes)}))


def qwen_code(space: Workspace) -> Run:
    space.write(".qwen/settings.json", {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}})
    env = {"OPENAI_API_KEY": space.api_key, "OPENAI_BASE_URL": "https://api.deepseek.com/v1"}
    command = ["qwen", "--yolo", "--auth-type", "openai", "-m", "deepseek-flash", "-p", PROMPT]
    return Run(command, env, ToolCall("read_file", {"file_path": str(space.notes)}))


CASES = [
    Client(CLIENTS["opencode"], "chat_completions", opencode_deepseek, name="opencode-deepseek"),
    Client(CLIENTS["opencode"], "anthropic_messages", opencode_anthropic, name="opencode-anthropic"),
    Client(CLIENTS["claude"], "anthropic_messages", claude_code),
    Client(CLIENTS["codex"], "openai_responses", codex),
    Client(CLIENTS["gemini"], "gemini_native", gemini_cli),
    Client(CLIENTS["qwen"], "chat_completions", qwen_code),
]


def installed_or_skip(package: Package) -> pytest.MarkDecorator:
    missing = next((p for p in (NODE, package) if not installed(p)), None)
    return pytest.mark.skipif(missing is not None, reason=why_missing(missing) if missing else "")


@pytest.fixture(scope="module")
def real_hosts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealHostsFake]:
    fake = RealHostsFake(tmp_path_factory.mktemp("real-hosts")).start()
    yield fake
    fake.stop()


@pytest.fixture
def with_proxy(tmp_path: Path, confdir: Path, real_hosts: RealHostsFake, api_key: str) -> Iterator[WithProxy]:
    yield WithProxy(tmp_path, confdir, real_hosts, api_key)
    real_hosts.tool = None


def issued_state(fake: RealHostsFake, wire_format: str, call_id: str, tool: ToolCall) -> list[tuple[str, ...]]:
    """Each piece of reasoning state the fake issued with the call, as the strings any of which carries it back."""
    if wire_format == "anthropic_messages":
        blocks = fake.anthropic.issued[call_id]
        return [(block[name],) for block in blocks for name in ("thinking", "signature", "data") if name in block]
    if wire_format == "chat_completions":
        return [(value,) for value in fake.chat.issued[call_id].values()]
    if wire_format == "openai_responses":
        issued = fake.responses.issued[fake.responses.calls[call_id][1]]
        copies = (issued.item["encrypted_content"], issued.completed_content)
        return [(issued.item["id"],), tuple(copy for copy in copies if copy)]
    if wire_format == "gemini_native":  # calls have no ids: the signature issued with this tool's call
        return [
            (signature,)
            for signature, what in fake.gemini.issued.items()
            if what.get("name") == tool.name and what.get("args") == tool.arguments
        ]
    raise ValueError(wire_format)


def holds(body: bytes, value: str) -> bool:
    """Whether a JSON body holds the string as JSON writes it (non-ASCII as UTF-8, as Node, Bun and Rust do)."""
    return json.dumps(value, ensure_ascii=False).encode() in body


def turns_of_the_loop(fake: RealHostsFake, response_id: str, marker: str) -> tuple[Recorded, Recorded]:
    """Turn 1, the request the fake answered with the call; turn 2, the first one after it carrying the tool's
    output: the client ran the tool."""
    requests = list(fake.requests)
    first = next(i for i, r in enumerate(requests) if response_id.encode() in r.sent)
    second = next(
        (r for r in requests[first + 1 :] if marker.encode() in decode_body(r.body, r.headers.get("content-encoding"))),
        None,
    )
    assert second is not None, f"no request after turn 1 carried the tool's output: {[r.path for r in requests]}"
    return requests[first], second


@pytest.mark.parametrize("client", [pytest.param(c, id=c.id, marks=installed_or_skip(c.package)) for c in CASES])
def test_a_real_client_runs_its_tool_loop_through_with_proxy(
    with_proxy: WithProxy, tmp_path: Path, api_key: str, client: Client
) -> None:
    space = Workspace(tmp_path / "client", api_key)
    run = client.prepare(space)
    with_proxy.fake.tool = run.tool
    home = {"HOME": str(space.home), **{f"XDG_{d}_HOME": str(space.home / d.lower()) for d in ("CONFIG", "DATA")}}
    env = {**home, "XDG_CACHE_HOME": str(space.home / "cache"), "PATH": client_path(client.package), **run.env}
    done = with_proxy.run(client=run.command, cwd=space.work, **env)

    summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    assert "went through the proxy" in summary and "nothing" not in summary, summary
    assert done.returncode == 0, done.stderr[-4000:]
    assert ANSWER in done.stdout, done.stdout[-2000:]

    log = LogTail(with_proxy.events, whole=True)
    captured = [
        e
        for e in log.events("captured")
        if e["wire_format"] == client.wire_format and any(c["name"] == run.tool.name for c in e["tool_calls"])
    ]
    assert captured, f"no {run.tool.name} call captured: {log.events()}"
    call_id = next(c["id"] for c in captured[0]["tool_calls"] if c["name"] == run.tool.name)
    _, turn_two = turns_of_the_loop(with_proxy.fake, captured[0]["response_id"], space.marker)
    assert turn_two.status == 200, turn_two.sent[:2000]

    body = decode_body(turn_two.body, turn_two.headers.get("content-encoding"))
    state = issued_state(with_proxy.fake, client.wire_format, call_id, run.tool)
    assert state, "the fake issued no reasoning state with the call"
    assert all(any(holds(body, value) for value in copies) for copies in state), body[:4000]
    repaired = len(log.events("repaired"))
    assert repaired == (1 if client.drops_state else 0), log.events("repaired")
    line = rf"with-proxy: \d+ request\(s\) went through the proxy \(\d+ to LLM providers: {repaired} repaired, 0 recov"
    assert re.match(line, summary), summary
