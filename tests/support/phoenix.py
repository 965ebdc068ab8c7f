"""A real Arize Phoenix server for the tracing tests: an OTLP/HTTP backend they send spans to and read them back from.

    python -m tests.support.phoenix      # scripts/test runs it before pytest: once per checkout

Phoenix (pinned) is installed from PyPI into a virtual environment of its own, `.test-phoenix/venv/` (git-ignored),
made with the Python that runs this module when Phoenix supports it (3.11 to 3.14), else with the newest such Python
on PATH: the server runs as a program of its own, so one install serves every test venv of the checkout, whatever
its Python or mitmproxy. A second run finds the pinned version stamped and does nothing; a failed install leaves
`.test-phoenix/failed` with pip's last lines, and the tests that need Phoenix skip with them.

How a test uses it (the `phoenix` fixture in tests/conftest.py starts one server for the session):

    exporter = OTLPSpanExporter(endpoint=phoenix.otlp_base + "/v1/traces")
    ...
    spans = phoenix.spans(2, project="my-test")

Which project a span lands in: the `x-project-name` header of the OTLP request if there is one, else the resource
attribute `openinference.project.name`, else "default" (`service.name` plays no part). A test gives its spans a
project of its own with that resource attribute (`Resource.create({"openinference.project.name": ...})`, or
`OTEL_RESOURCE_ATTRIBUTES=openinference.project.name=...` for a process it starts), so the tests can share one
server. Phoenix creates a project when its first span arrives; reading one that does not exist yet is a 404, which
`spans` takes as "nothing yet".

What Phoenix does to spans on the way in (20.26), which tests comparing attributes must allow for:
- It keeps every attribute as sent, with its type: JSON strings verbatim, and nothing cut short (a 30 MB string
  came back whole; the SDK cuts only with OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT set). But it also adds OpenInference
  attributes it derives from `gen_ai.*` ones (`llm.input_messages.*`, `llm.token_count.*`,
  `llm.invocation_parameters`, `llm.finish_reason`, ...), without overwriting any the span has.
- `openinference.span.kind` (sent, or derived: "LLM" for `gen_ai.operation.name=chat`) is not among the attributes
  it gives back: it comes back as `span_kind` ("UNKNOWN" when there is none).
- Attributes whose names end in `metadata`, `tool.parameters` or `llm.prompt_template.variables` are parsed as JSON
  and stored as objects; they come back flattened into dotted keys, not as the string sent.
- An event named `exception` keeps only `exception.type`, `.message`, `.escaped` and `.stacktrace`; other events
  keep all their attributes.
- Resource attributes are not stored with the spans; times come back to the microsecond, not the nanosecond.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

from .redis_server import free_port

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / ".test-phoenix"
VENV = FOLDER / "venv"
STAMP = FOLDER / "installed"  # the version installed, written once the install has succeeded
FAILURE_NOTE = FOLDER / "failed"
PACKAGE = "arize-phoenix"
VERSION = "20.26.1"
PYTHONS = ((3, 11), (3, 15))  # what this version of Phoenix supports: from, and up to but not including
INSTALL_SECONDS = 900
START_SECONDS = 120.0  # a first start creates its database (migrations): about 10 s on a busy two-core machine


def installed() -> bool:
    """Whether the pinned version is in place with its program."""
    try:
        version = STAMP.read_text().strip()
    except OSError:
        return False
    return version == VERSION and (VENV / "bin" / "phoenix").exists()


def why_missing() -> str:
    """A skip reason for the tests that need Phoenix when it is not installed."""
    note = ""
    with contextlib.suppress(OSError):
        note = FAILURE_NOTE.read_text().strip()
    reason = f"{PACKAGE}=={VERSION} is not installed in {VENV}"
    return f"{reason}: {note}" if note else f"{reason} (scripts/test installs it)"


def supports(python: str) -> bool:
    """Whether `python` is a command that runs a Python this Phoenix supports."""
    low, high = PYTHONS
    check = f"import sys; sys.exit(not {low} <= sys.version_info[:2] < {high})"
    try:
        return subprocess.run([python, "-c", check], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_python() -> str | None:
    """The Python running this module when Phoenix supports it, else the newest supported one on PATH."""
    if PYTHONS[0] <= sys.version_info[:2] < PYTHONS[1]:
        return sys.executable
    for minor in range(PYTHONS[1][1] - 1, PYTHONS[0][1] - 1, -1):
        command = shutil.which(f"python3.{minor}")
        if command and supports(command):
            return command
    return None


def last_lines(output: str, count: int = 2, width: int = 300) -> str:
    """pip's last lines, where it says what failed, each cut short (one can list every version there is)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return (
        "; ".join(line if len(line) <= width else line[: width - 3] + "..." for line in lines[-count:]) or "pip failed"
    )


def run_install() -> str | None:
    """Makes the venv (again, when it has no Python that runs) and installs Phoenix into it; what failed, or None."""
    python = VENV / "bin" / "python"
    if not supports(str(python)):
        shutil.rmtree(VENV, ignore_errors=True)
        maker = find_python()
        if maker is None:
            return f"no Python {PYTHONS[0][0]}.{PYTHONS[0][1]} or newer (below {PYTHONS[1][1]}) to run Phoenix with"
        made = subprocess.run([maker, "-m", "venv", str(VENV)], capture_output=True, text=True)
        if made.returncode:
            return f"{maker} -m venv failed: {last_lines(made.stderr + made.stdout)}"
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", f"{PACKAGE}=={VERSION}"]
    try:
        pip = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=INSTALL_SECONDS)
    except subprocess.TimeoutExpired:
        return f"pip took more than {INSTALL_SECONDS} s"
    if pip.returncode:
        return last_lines(pip.stderr + pip.stdout)
    if not (VENV / "bin" / "phoenix").exists():
        return f"pip installed no phoenix program for {PACKAGE}=={VERSION}"
    return None


def install() -> str | None:
    """Installs Phoenix unless the pinned version is there; what went wrong (also kept for the skip reason), or None."""
    if installed():
        return None
    FOLDER.mkdir(exist_ok=True)
    with open(FOLDER / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other test venv's scripts/test may be installing it right now
        if installed():
            return None
        print(f"installing {PACKAGE}=={VERSION} into {VENV}", file=sys.stderr)
        STAMP.unlink(missing_ok=True)
        failure = run_install()
        if failure is None:
            STAMP.write_text(VERSION + "\n")
            FAILURE_NOTE.unlink(missing_ok=True)
        else:
            FAILURE_NOTE.write_text(failure + "\n")
        return failure


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Phoenix's nested attributes as the dotted OTel names they were sent with; lists of plain values stay lists
    (lists of objects, which OTel cannot send but Phoenix derives, get their index as a name part, as in Phoenix)."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        items = ((str(index), item) for index, item in enumerate(value))
    else:
        return {prefix: value}
    flat: dict[str, Any] = {}
    for key, item in items:
        flat.update(flatten(item, f"{prefix}.{key}" if prefix else key))
    return flat


def plain_span(span: dict[str, Any]) -> dict[str, Any]:
    """One span of Phoenix's REST answer as the tests read it."""
    return {
        "name": span["name"],
        "trace_id": span["context"]["trace_id"],
        "span_id": span["context"]["span_id"],
        "parent_span_id": span["parent_id"],
        "start_time": datetime.fromisoformat(span["start_time"]),
        "end_time": datetime.fromisoformat(span["end_time"]),
        "status_code": span["status_code"],  # "UNSET", "OK" or "ERROR"
        "status_message": span["status_message"],
        "span_kind": span["span_kind"],  # the OpenInference kind Phoenix gives or derives, not the OTel kind
        "attributes": flatten(span["attributes"]),
        "events": [
            {
                "name": event["name"],
                "attributes": flatten(event["attributes"]),
                "timestamp": datetime.fromisoformat(event["timestamp"]),
            }
            for event in span["events"]
        ],
    }


class PhoenixServer:
    """`phoenix serve` on loopback, with HTTP and gRPC ports of its own and its SQLite database in `workdir`.

    `otlp_base` is where an OTLP/HTTP exporter sends to (it appends /v1/traces); `spans` reads back what arrived."""

    def __init__(self, workdir: Path) -> None:
        if not installed():
            raise RuntimeError(why_missing())
        self.workdir = workdir
        self.port = free_port()
        self.grpc_port = free_port()
        self.log_path = workdir / "phoenix.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def otlp_base(self) -> str:
        return self.url

    def environment(self) -> dict[str, str]:
        # None of the caller's PHOENIX_* or OTEL_* settings (a Postgres URL, a collector to report to) reaches it.
        env = {key: value for key, value in os.environ.items() if not key.startswith(("PHOENIX_", "OTEL_"))}
        env.update(
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(self.grpc_port),
            PHOENIX_WORKING_DIR=str(self.workdir),
            PHOENIX_SQL_DATABASE_URL=f"sqlite:///{self.workdir / 'phoenix.db'}",
            # Offline and quiet: no web fonts, telemetry pixels or sandbox downloads, no assistant agent, and no
            # SQL of every migration in the log.
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
            PHOENIX_ENABLE_AUTH="false",
            PHOENIX_LOG_MIGRATIONS="false",
            PHOENIX_LOGGING_LEVEL="warning",
        )
        return env

    def output(self) -> str:
        """What the server has written so far (its last 4,000 characters), for failure messages."""
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-4000:]
        return ""

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/readyz", timeout=5) as answer:
                return answer.status == 200
        except (OSError, urllib.error.URLError):
            return False

    def start(self, timeout: float = START_SECONDS) -> PhoenixServer:
        """Starts the server and waits until it says it is ready (its database answers)."""
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [str(VENV / "bin" / "phoenix"), "serve"],
                env=self.environment(),
                cwd=self.workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return self
            if self._process.poll() is not None:
                raise RuntimeError(f"phoenix serve exited with {self._process.returncode}:\n{self.output()}")
            time.sleep(0.2)
        self.stop()
        raise TimeoutError(f"phoenix serve was not ready within {timeout} s:\n{self.output()}")

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._process = None

    def __enter__(self) -> PhoenixServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def get(self, path: str, **query: Any) -> Any:
        """GET on Phoenix's REST API; the decoded JSON, or None for a 404 (a project no span has reached yet)."""
        address = f"{self.url}{path}?{urllib.parse.urlencode(query, doseq=True)}"
        try:
            with urllib.request.urlopen(address, timeout=30) as answer:
                return json.load(answer)
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def read_spans(self, project: str, trace_id: str | None = None) -> list[dict[str, Any]]:
        """Every span of the project (of one trace, with `trace_id`) that Phoenix has stored, page by page."""
        spans: list[dict[str, Any]] = []
        query: dict[str, Any] = {"limit": 1000, **({"trace_id": trace_id} if trace_id else {})}
        path = f"/v1/projects/{urllib.parse.quote(project, safe='')}/spans"
        while True:
            page = self.get(path, **query)
            if page is None:
                return spans
            spans += page["data"]
            if not page.get("next_cursor"):
                return spans
            query["cursor"] = page["next_cursor"]

    def spans(
        self, count: int, project: str = "default", *, trace_id: str | None = None, deadline: float = 30.0
    ) -> list[dict[str, Any]]:
        """The project's spans, oldest first, once at least `count` have arrived (Phoenix stores what it receives
        in the background, a moment after the exporter's request has been answered).

        Each is a dict: name, trace_id and span_id (hex), parent_span_id (None for a root), start_time and end_time
        (aware datetimes), status_code ("UNSET", "OK", "ERROR"), status_message, span_kind, attributes (dotted
        names to values; lists stay lists) and events (each a dict of name, attributes and timestamp)."""
        give_up = time.monotonic() + deadline
        while True:
            found = self.read_spans(project, trace_id)
            if len(found) >= count:
                spans = [plain_span(span) for span in found]
                return sorted(spans, key=lambda span: (span["start_time"], span["end_time"]))
            if time.monotonic() > give_up:
                seen = ", ".join(span["name"] for span in found) or "none"
                raise TimeoutError(
                    f"Phoenix had {len(found)} of {count} spans in project {project!r} after {deadline} s "
                    f"(seen: {seen}); its log:\n{self.output()}"
                )
            time.sleep(0.1)


def main() -> int:
    failure = install()
    if failure:
        print(f"could not install {PACKAGE}=={VERSION} (its tests will skip): {failure}", file=sys.stderr)
    return 0  # failing soft: the tests say Phoenix is missing


if __name__ == "__main__":
    sys.exit(main())
