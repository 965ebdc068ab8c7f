"""Running clients through scripts/with-proxy in end-to-end tests: the command, its environment, its state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .proxy import ROOT, WAIT_SECONDS, scripts_env
from .real_hosts import RealHostsFake

WITH_PROXY = ROOT / "scripts" / "with-proxy"
CLIENTS = ROOT / "tests" / "support" / "clients"
ANSWER = "The directory holds two files."

# A client that writes down its own pid and those of its siblings (mitmdump, the other child of with-proxy), then
# waits for the test to end it when given "wait".
SIBLINGS = """
import json, os, sys, time
def parent_of(pid):
    try:
        return int(open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
parent = os.getppid()
siblings = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid() and parent_of(p) == parent]
path = sys.argv[1]
with open(path + ".partial", "w") as f:
    json.dump({"client": os.getpid(), "siblings": siblings}, f)
os.replace(path + ".partial", path)
if sys.argv[2:] == ["wait"]:
    time.sleep(3600)  # until the test ends it
"""


def python_client(library: str) -> list[str]:
    return [sys.executable, str(CLIENTS / "tool_loop.py"), library]


def node_client(how: str) -> list[str]:
    return ["node", str(CLIENTS / "tool_loop.js"), how]


def siblings_client(record: Path, *, wait: bool) -> list[str]:
    return [sys.executable, "-c", SIBLINGS, str(record), *(["wait"] if wait else [])]


@dataclass
class WithProxy:
    """One test's with-proxy runs: its state folder (the cache, mitmdump's logs), its event log and credential,
    mitmproxy's configuration folder, and the fake behind the providers' real host names."""

    tmp: Path
    confdir: Path
    fake: RealHostsFake
    api_key: str

    @property
    def events(self) -> Path:
        return self.tmp / "events.jsonl"

    def env(self, **extra: str) -> dict[str, str]:
        # The venv the tests run in (scripts/_venv.sh's LLM_PROXY_VENV), so both lines of mitmproxy are tested.
        return {
            **os.environ,
            **scripts_env(),
            "XDG_STATE_HOME": str(self.tmp / "state"),
            "FAKE_API_KEY": self.api_key,
            **extra,
        }

    def command(self, options: tuple[str, ...], client: list[str]) -> list[str]:
        ours = ["--set", f"confdir={self.confdir}", "--set", f"llm_log={self.events}", *self.fake.mitmdump_options()]
        return [str(WITH_PROXY), *ours, *options, "--", *client]

    def run(
        self, *options: str, client: list[str], cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(options, client),
            env=self.env(**env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=WAIT_SECONDS * 3,
        )

    def start(self, *options: str, client: list[str], **env: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.command(options, client),
            env=self.env(**env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def wait_for_record(path: Path, process: subprocess.Popen[str]) -> dict:
    """What a siblings client wrote, once it has (or the failure, if with-proxy ended first)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not path.exists():
        if process.poll() is not None:
            out, err = process.communicate()
            raise AssertionError(f"with-proxy exited with {process.returncode} first:\n{out}\n{err}")
        assert time.monotonic() < deadline, "the client never wrote its record"
        time.sleep(0.02)
    return json.loads(path.read_text())


def running(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
