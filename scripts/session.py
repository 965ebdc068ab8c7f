"""One long Copilot session through the proxy: how many bytes of event log each turn writes.

Starts the fake provider (tests/support/fake_provider.py, which enforces each provider's rules with its real
error texts) in a process of its own, and one `mitmdump -s ADDON` with a fresh state directory in front of it.
Then it drives one conversation as Zed drives GitHub Copilot's Gemini 3 (`gemini-3-pro-preview`, streamed, POST
/chat/completions) for TURNS tool-call turns: 200 turns make a 400-message history. The client drops
`reasoning_opaque` and sends `content: []` on every turn, so each turn after the first is answered 200 only if the
proxy repaired it, and each needs every earlier turn's repairs again. After each turn it waits until the turn's
events are in the log (its `repaired` event from turn 2 on, and the `captured` event of its answer) and reads the
log's size.

    scripts/session [--turns 200] [--out session-results.json]
    scripts/session --addon addon/main.py --addon OTHER_CHECKOUT/addon/main.py   # side by side

Each --addon (default: this checkout's addon/main.py) runs the same session with a proxy and a state directory
of its own, one after the other; the report puts them side by side.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import openai  # noqa: E402

from tests.support.agent import add_chunk  # noqa: E402
from tests.support.fake_provider import fake_provider_process  # noqa: E402

# The fake answers as GitHub Copilot serving Gemini 3 (reasoning_opaque on tool calls), to one `read` tool.
from tests.support.load import MODEL, TOOLS  # noqa: E402
from tests.support.proxy import ADDON_MAIN, WAIT_SECONDS, MitmdumpProcess  # noqa: E402

TOOL_RESULT = "def f(): pass\n" * 40
REPORTED_TURNS = (10, 50, 100, 200)


@dataclass
class Turn:
    turn: int
    messages: int  # in the request
    status: int
    seconds: float  # the request and its whole streamed answer, seen by the client
    log_bytes: int  # the event log's size once the turn's events are in it
    written: int  # bytes the turn added to the log: its repaired event and its answer's captured event
    repaired_line: int  # bytes of the turn's repaired event (0 on turn 1, which needs no repair)
    listed: int  # repairs the repaired event lists in full
    again: int | None  # repairs it only counts (None: an event without the count, as before it existed)


@dataclass
class Session:
    addon: str
    turns: list[Turn] = field(default_factory=list)
    proxy_errors: list[str] = field(default_factory=list)

    @property
    def every_turn_ok(self) -> bool:
        return bool(self.turns) and all(t.status == 200 for t in self.turns)

    def at(self, turn: int) -> Turn | None:
        return self.turns[turn - 1] if 0 < turn <= len(self.turns) else None


class LogReader:
    """Reads a growing JSONL event log from where it left off, one whole line at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.partial = b""

    def new_lines(self) -> list[bytes]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            data = handle.read()
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        return lines


def wait_for_turn_events(reader: LogReader, turn: int) -> list[bytes]:
    """The log lines of one turn, once its answer's `captured` event and (from turn 2 on) its `repaired` event are
    in the log."""
    lines: list[bytes] = []
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        lines += reader.new_lines()
        kinds = [json.loads(line)["kind"] for line in lines]
        if "captured" in kinds and (turn == 1 or "repaired" in kinds):
            return lines
        if time.monotonic() > deadline:
            raise AssertionError(f"turn {turn}: its events did not reach the log: {kinds}")
        time.sleep(0.005)


def run_session(addon: Path, fake_url: str, turns: int, scratch: Path) -> Session:
    """One session through `mitmdump -s ADDON` (labelled by the path as given)."""
    log = scratch / "events.jsonl"
    proxy = MitmdumpProcess(
        "-s",
        str(addon.resolve()),
        "--mode",
        f"reverse:{fake_url}",
        "--set",
        f"llm_cache={scratch / 'cache.db'}",
        "--set",
        f"llm_log={log}",
        "--set",
        "llm_log_max_size=1GB",  # never rotated: every byte is counted
        confdir=scratch / "conf",
        addon=False,  # the addon given, not this checkout's
    )
    session = Session(addon=str(addon))
    with proxy:
        proxy.wait_for_line(" active: ")
        llm = openai.OpenAI(
            base_url=proxy.url,  # Copilot's route: POST /chat/completions
            api_key=f"tid={uuid.uuid4().hex};exp=1999999999",
            max_retries=0,
            timeout=120,
            default_headers={"x-fake-steps": str(turns), "copilot-integration-id": "vscode-chat"},
        )
        reader = LogReader(log)
        reader.new_lines()  # the started event
        size = reader.offset
        messages: list[dict] = [{"role": "user", "content": "Read the files one by one, then summarise them."}]
        for turn in range(1, turns + 1):
            sent = len(messages)
            started = time.perf_counter()
            try:
                stream = llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True)
                content: list[str] = []
                calls: dict[int, dict] = {}
                for chunk in stream:
                    add_chunk(chunk, content, calls)
            except openai.APIStatusError as e:
                session.turns.append(Turn(turn, sent, e.status_code, time.perf_counter() - started, size, 0, 0, 0, 0))
                break
            seconds = time.perf_counter() - started
            lines = wait_for_turn_events(reader, turn)
            written = sum(len(line) + 1 for line in lines)
            repaired = [line for line in lines if json.loads(line)["kind"] == "repaired"]
            event = json.loads(repaired[0]) if repaired else {}
            session.turns.append(
                Turn(
                    turn=turn,
                    messages=sent,
                    status=200,
                    seconds=seconds,
                    log_bytes=size + written,
                    written=written,
                    repaired_line=len(repaired[0]) + 1 if repaired else 0,
                    listed=len(event.get("actions", [])),
                    again=event.get("again") if repaired else 0,
                )
            )
            size += written
            if not calls:
                raise AssertionError(f"turn {turn}: the fake answered without a tool call")
            # What Zed sends back: no reasoning_opaque, and `content: []` for a message without text.
            tool_calls = [calls[i] for i in sorted(calls)]
            messages.append({"role": "assistant", "content": "".join(content) or [], "tool_calls": tool_calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": TOOL_RESULT} for c in tool_calls]
    output = proxy.output.splitlines()
    session.proxy_errors = [line for line in output if "Traceback" in line or "failed on flow" in line][:20]
    return session


def listed(turn: Turn | None) -> str:
    if turn is None:
        return "-"
    return f"{turn.listed} / {'-' if turn.again is None else turn.again}"


def render(sessions: list[Session], turns: int) -> str:
    width = max(24, *(len(s.addon) + 2 for s in sessions))
    head = f"{'':<28}" + "".join(f"{s.addon:>{width}}" for s in sessions)
    lines = [
        f"one Copilot session of {turns} tool-call turns ({2 * turns} messages), the client dropping "
        "reasoning_opaque and sending content: [] every turn",
        head,
    ]

    def row(label: str, value) -> None:  # noqa: ANN001
        lines.append(f"{label:<28}" + "".join(f"{value(s):>{width}}" for s in sessions))

    row("turns answered 200", lambda s: f"{sum(t.status == 200 for t in s.turns)}/{turns}")
    for n in [n for n in REPORTED_TURNS if n < turns] + [turns]:
        row(f"log bytes written, turn {n}", lambda s, n=n: f"{s.at(n).written:,}" if s.at(n) else "-")
        row("  of which repaired event", lambda s, n=n: f"{s.at(n).repaired_line:,}" if s.at(n) else "-")
        row("  repairs listed / counted", lambda s, n=n: listed(s.at(n)))
    row("log bytes in all", lambda s: f"{s.turns[-1].log_bytes:,}" if s.turns else "-")
    row("mean bytes per turn", lambda s: f"{s.turns[-1].log_bytes // len(s.turns):,}" if s.turns else "-")
    row("seconds in requests", lambda s: f"{sum(t.seconds for t in s.turns):.1f}")
    row("proxy errors", lambda s: str(len(s.proxy_errors)))
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--addon", type=Path, action="append", help="an addon/main.py to run (repeat to compare)")
    parser.add_argument("--out", type=Path, default=Path("session-results.json"))
    args = parser.parse_args()
    addons = args.addon or [ADDON_MAIN.relative_to(ROOT)]
    for addon in addons:
        if not addon.is_file():
            parser.error(f"--addon {addon}: no such file")
    sessions = []
    with fake_provider_process() as fake_url:
        for addon in addons:
            with tempfile.TemporaryDirectory() as scratch:
                sessions.append(run_session(addon, fake_url, args.turns, Path(scratch)))
    print(render(sessions, args.turns))
    for session in sessions:
        for line in session.proxy_errors:
            print(f"proxy ({session.addon}):", line)
    summary = {
        "turns": args.turns,
        "sessions": [asdict(s) | {"every_turn_ok": s.every_turn_ok} for s in sessions],
    }
    args.out.write_text(json.dumps(summary, indent=2))
    return 0 if all(s.every_turn_ok and not s.proxy_errors for s in sessions) else 1


if __name__ == "__main__":
    sys.exit(main())
