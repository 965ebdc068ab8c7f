"""Runs a real `mitmdump -s addon/main.py` subprocess for end-to-end tests."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADDON_MAIN = ROOT / "addon" / "main.py"
MITMDUMP = Path(sys.executable).with_name("mitmdump")
_LISTENING = re.compile(r"listening at \S*?:(\d+)\.?\s*$")
# Generous: these bounds only matter when something is wrong (a busy CI machine may be slow, never this slow).
WAIT_SECONDS = 60.0


def scripts_env() -> dict[str, str]:
    """The environment in which scripts/run, scripts/web and scripts/demo use the venv running the tests.

    Only a venv that scripts/test made and installed is used: in any other, the scripts would install the
    project while the tests run."""
    import hashlib

    import pytest

    venv = Path(sys.executable).parent.parent
    stamp = venv / ".installed-test"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != want:
        pytest.skip(f"{venv} was not made by scripts/test (no install stamp for this pyproject.toml)")
    return {"LLM_PROXY_VENV": str(venv)}


class MitmdumpProcess:
    def __init__(
        self,
        *args: str,
        confdir: Path,
        cwd: Path | None = None,
        addon: bool = True,
        preexec_fn: Callable[[], None] | None = None,
        env: dict[str, str] | None = None,
        mitmdump: Path = MITMDUMP,
        script: Path = ADDON_MAIN,
        python: Path | None = None,  # runs the mitmdump script with this Python, unbuffered
    ) -> None:
        script_args = ["-s", str(script)] if addon else []
        # llm_recover is off unless a test sets it: most tests show what the repair puts back, and that a turn it has
        # nothing for fails as it would without the proxy; tests/test_e2e_recover.py runs it on, as users do.
        if addon and not any(arg.startswith("llm_recover=") for arg in args):
            script_args += ["--set", "llm_recover=false"]
        self.command = [
            *([str(python), "-u"] if python else []),
            str(mitmdump),
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            "0",
            "--set",
            f"confdir={confdir}",
            *script_args,
            *args,
        ]
        self.cwd = cwd or ROOT
        self.addon = addon
        self.preexec_fn = preexec_fn  # runs in the child before mitmdump starts (to set resource limits, say)
        self.env = env or {}  # on top of the test's own environment
        self.lines: list[str] = []
        self.port: int | None = None
        self._process: subprocess.Popen[str] | None = None
        self._drain_thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._active = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """None while it runs; once it has exited, its status (negative: the signal that ended it, -7 for SIGBUS)."""
        assert self._process is not None
        return self._process.poll()

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def start(self, timeout: float = 30.0) -> MitmdumpProcess:
        self._process = subprocess.Popen(
            self.command,
            cwd=self.cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            preexec_fn=self.preexec_fn,
        )
        self._drain_thread = threading.Thread(target=self._drain, daemon=True)
        self._drain_thread.start()
        deadline = time.monotonic() + timeout
        # The listening line comes just before the `running` hook, which logs "active".
        while time.monotonic() < deadline:
            if self._ready.is_set() and (self._active.is_set() or not self.addon):
                return self
            if self._process.poll() is not None:
                self._join_drain()  # every line it wrote, up to its exit
                raise RuntimeError(f"mitmdump exited with {self._process.returncode}:\n{self.output}")
            time.sleep(0.02)
        self.stop()
        raise TimeoutError(f"mitmdump did not start:\n{self.output}")

    def _drain(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self.lines.append(line.rstrip("\n"))
            match = _LISTENING.search(line)
            if match and self.port is None:
                self.port = int(match.group(1))
                self._ready.set()
            if " active: " in line:
                self._active.set()

    def wait_for_line(self, text: str, timeout: float = WAIT_SECONDS, *, since: int = 0) -> str:
        """The first output line from `since` on that holds `text`, once mitmdump has printed it.

        Output lags: mitmdump prints its own flow lines after the addon's hooks ran, and a thread reads them."""
        deadline = time.monotonic() + timeout
        while True:
            finished = self._drain_thread is not None and not self._drain_thread.is_alive()
            line = next((line for line in self.lines[since:] if text in line), None)
            if line is not None:
                return line
            if finished or time.monotonic() > deadline:  # nothing more will come, or the time is up
                raise AssertionError(f"{text!r} not in mitmdump's output:\n{self.output}")
            time.sleep(0.02)

    def _join_drain(self) -> None:
        """Once the process has exited: waits until the drain thread has read the output to its end."""
        if self._drain_thread is not None:
            self._drain_thread.join(WAIT_SECONDS)

    def wait_exit(self, timeout: float = 20.0) -> int:
        assert self._process is not None
        code = self._process.wait(timeout)
        self._join_drain()
        return code

    def kill(self) -> None:
        """SIGKILL; afterwards `lines` holds all the process wrote."""
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGKILL)
            self._process.wait(WAIT_SECONDS)
        self._join_drain()

    def stop(self) -> None:
        """SIGTERM, and SIGKILL only if mitmdump has not exited by itself in WAIT_SECONDS (a clean exit closes the
        cache, checkpointing its WAL); afterwards `lines` holds all the process wrote."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                self.kill()
        self._join_drain()

    def __enter__(self) -> MitmdumpProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def reverse_proxy(
    upstream: str,
    confdir: Path,
    *args: str,
    preexec_fn: Callable[[], None] | None = None,
    **options: object,
) -> MitmdumpProcess:
    """`mitmdump -s addon/main.py --mode reverse:UPSTREAM`, each keyword set as `--set name=value`."""
    sets = [arg for name, value in options.items() for arg in ("--set", f"{name}={value}")]
    return MitmdumpProcess("--mode", f"reverse:{upstream}", *sets, *args, confdir=confdir, preexec_fn=preexec_fn)


def read_flow_file(flows: Path, confdir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`mitmdump -n -r FLOWS -s addon/main.py`: reads a flow file through the addon, serves nothing, and exits."""
    reading = MitmdumpProcess("-n", "-r", str(flows), *args, confdir=confdir)
    command = [c for c in reading.command if c not in ("--listen-host", "127.0.0.1", "--listen-port", "0")]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=WAIT_SECONDS)


def plain_streaming(upstream: str, confdir: Path) -> MitmdumpProcess:
    """Plain mitmdump, without the addon, in front of `upstream`, that only streams event streams as any LLM
    proxy must (scripts/bench_stream_only.py): what the addon's costs are measured against."""
    script = ROOT / "scripts" / "bench_stream_only.py"
    return MitmdumpProcess("--mode", f"reverse:{upstream}", "-s", str(script), confdir=confdir, addon=False)


def start_failure(process: MitmdumpProcess) -> tuple[int | None, str]:
    """Starts a mitmdump that is expected to refuse to start: its exit code and its output."""
    try:
        process.start()
    except RuntimeError:
        pass
    finally:
        process.stop()
    return (process._process.returncode if process._process else None), process.output
