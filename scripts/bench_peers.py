"""The tools a user would pick instead of this addon, run beside it by scripts/bench as pass-through proxies.

Each is installed from PyPI, at the version named here, into a venv of its own (`.venv-peers/NAME`, made on first
use), and started in front of the benchmark's fake provider with its recording on and everything that would reach
the internet or start a browser turned off. `scripts/bench --no-peers` leaves them out.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENVS = ROOT / ".venv-peers"
# Only to catch a peer that never comes up: it is ready when its port answers, however long that takes before this.
START_DEADLINE_S = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class Route:
    """One way clients use a peer: a target of its own in the bench's rounds."""

    name: str
    workloads: frozenset[str]  # the bench's workloads it applies to
    prefix: str = ""  # what the client puts before the provider's path


@dataclass(frozen=True)
class Peer:
    name: str
    requirement: str  # what pip installs, pinned: figures are quoted for this version
    what: str  # what it is and how it runs here, for the report
    routes: tuple[Route, ...]
    command: Callable[[Path, int, int, Path], list[str]]  # (venv, upstream port, listen port, scratch) -> argv
    env: Callable[[Path], dict[str, str]] = lambda scratch: {}
    forward: bool = False  # a forward proxy: clients send to the fake through it, not to it as a base URL
    setup: Callable[[Path, int], None] = lambda scratch, upstream_port: None  # writes its config, if it has one
    stop_signal: int = signal.SIGINT  # the signal that lets it finish its records
    stdin: bool = False  # it runs while its stdin is open (closing it stops it)


@dataclass
class RunningPeer:
    peer: Peer
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def client_options(self, route: Route, upstream_url: str) -> dict[str, object]:
        """httpx.Client arguments that send the bench's requests through this peer, by one of its routes."""
        if self.peer.forward:
            return {
                "base_url": upstream_url + route.prefix,
                "proxy": f"http://127.0.0.1:{self.port}",
                "trust_env": False,
            }
        return {"base_url": f"http://127.0.0.1:{self.port}{route.prefix}", "trust_env": False}

    def stop(self) -> None:
        if self.process.poll() is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            else:
                self.process.send_signal(self.peer.stop_signal)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class PeerFailure:
    name: str
    reason: str


@dataclass
class Peers:
    running: list[RunningPeer] = field(default_factory=list)
    failed: list[PeerFailure] = field(default_factory=list)

    def stop(self) -> None:
        for peer in self.running:
            peer.stop()


def venv_of(peer: Peer) -> Path:
    return VENVS / peer.name


def ensure_installed(peer: Peer) -> Path:
    """The peer's venv, made and installed from the registry if it does not hold the pinned version yet."""
    venv = venv_of(peer)
    marker = venv / "installed.txt"
    if marker.exists() and marker.read_text() == peer.requirement:
        return venv
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    started = time.monotonic()
    result = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", peer.requirement], capture_output=True, text=True
    )
    if result.returncode != 0:
        raise RuntimeError(f"pip install {peer.requirement} failed: {result.stderr.strip().splitlines()[-1:]}")
    print(f"installed {peer.requirement} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    marker.write_text(peer.requirement)
    return venv


def start(peer: Peer, upstream_port: int, scratch: Path) -> RunningPeer:
    venv = ensure_installed(peer)
    home = scratch / peer.name
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    peer.setup(home, upstream_port)
    log = home / "output.log"
    env = {**os.environ, "HOME": str(home), "PYTHONUNBUFFERED": "1", **peer.env(home)}
    env.pop("VIRTUAL_ENV", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            peer.command(venv, upstream_port, port, home),
            cwd=home,
            env=env,
            stdin=subprocess.PIPE if peer.stdin else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    running = RunningPeer(peer, process, port, log)
    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"exited with {process.returncode}: {log.read_text(errors='replace')[-400:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return running
        if time.monotonic() > deadline:
            running.stop()
            raise RuntimeError(f"not listening on {port} after {START_DEADLINE_S} s")
        time.sleep(0.1)


def start_all(upstream_port: int, scratch: Path) -> Peers:
    peers = Peers()
    for peer in PEERS:
        try:
            peers.running.append(start(peer, upstream_port, scratch))
        except Exception as e:  # a peer that cannot run here is reported, not fatal
            peers.failed.append(PeerFailure(peer.name, f"{type(e).__name__}: {e}"))
    return peers


# --- the peers -----------------------------------------------------------------------------------

CLAUDE_TAP = Peer(
    name="claude-tap",
    requirement="claude-tap==0.1.146",
    what="LLM trace recorder (aiohttp reverse proxy); every request and answer into its SQLite trace database",
    routes=(Route("claude-tap", frozenset({"a", "b", "b2_400", "d", "s_anthropic"})),),
    command=lambda venv, upstream, port, home: [
        str(venv / "bin" / "claude-tap"),
        "--tap-no-launch",  # else it starts the `claude` CLI itself
        "--tap-no-live",  # else it starts a dashboard process that outlives it
        "--tap-no-open",
        "--tap-host",
        "127.0.0.1",
        "--tap-port",
        str(port),
        "--tap-target",
        f"http://127.0.0.1:{upstream}",
        "--tap-allow-path",  # it forwards known API paths only (404 otherwise)
        "/v1/telemetry",
        "--tap-output-dir",
        str(home / "traces"),
        "--tap-max-traces",
        "0",
    ],
    env=lambda home: {"CLOUDTAP_DB": str(home / "traces.sqlite3")},
)

LLM_INTERCEPTOR = Peer(
    name="llm-interceptor",
    requirement="llm-interceptor==2.10.0",
    what=(
        "LLM traffic recorder on mitmproxy (`lli watch`, a forward proxy: it has no reverse mode); records each "
        "request and answer event as JSONL; its web UI cannot be turned off; it reads a stream whole before the "
        "client gets any of it"
    ),
    routes=(Route("llm-interceptor", frozenset({"a", "b", "b2_400", "d", "s_anthropic"})),),
    command=lambda venv, upstream, port, home: [
        str(venv / "bin" / "lli"),
        "watch",
        "--port",
        str(port),
        "--ui-port",
        str(free_port()),
        "-o",
        str(home / "traces"),
        "--include",  # it records only known provider hosts, or these
        "*127.0.0.1*",
    ],
    forward=True,
    stdin=True,  # `lli watch` stops cleanly when its stdin closes
)


def litellm_config(home: Path, upstream_port: int) -> None:
    """Its gateway routes the bench's models to the fake (chat completions, sent on as OpenAI-compatible), and its
    generic pass-through endpoint `/fake` sends any path on with the client's headers."""
    models = "".join(
        f"""
  - model_name: {model}
    litellm_params:
      model: openai/{model}
      api_base: http://127.0.0.1:{upstream_port}/v1
      api_key: bench-key
"""
        for model in ("gemini-3-pro-preview", "deepseek-v4-flash")
    )
    (home / "config.yaml").write_text(
        f"""model_list:{models}
general_settings:
  forward_client_headers_to_llm_api: true  # the fake is asked for its answer in x-bench-* headers
  pass_through_endpoints:
    - path: /fake
      target: http://127.0.0.1:{upstream_port}
      include_subpath: true
      forward_headers: true
"""
    )


LITELLM = Peer(
    name="litellm",
    requirement="litellm[proxy]==1.106.2",
    what=(
        "LLM gateway (FastAPI on uvicorn, one worker, no database); 'litellm pass-through' is its generic "
        "pass-through endpoint (answers passed on as received; request JSON parsed and sent again), 'litellm "
        "gateway' its own /v1/chat/completions, which re-encodes every chunk of an answer"
    ),
    routes=(
        Route("litellm pass-through", frozenset({"b", "b2_400", "d", "s_anthropic"}), "/fake"),
        Route("litellm gateway", frozenset({"b", "b2_400", "d"})),
    ),
    command=lambda venv, upstream, port, home: [
        str(venv / "bin" / "litellm"),
        "--config",
        str(home / "config.yaml"),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        "1",
    ],
    env=lambda home: {
        "LITELLM_MASTER_KEY": "bench-key",  # it refuses to start without one; clients send it
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # else it fetches its cost map from GitHub at import
        "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",  # else fetched from GitHub on a first Anthropic request
        "LITELLM_LOG": "ERROR",
        "LITELLM_DONT_SHOW_FEEDBACK_BOX": "true",
    },
    setup=litellm_config,
    stop_signal=signal.SIGTERM,
)

PEERS: tuple[Peer, ...] = (CLAUDE_TAP, LLM_INTERCEPTOR, LITELLM)
