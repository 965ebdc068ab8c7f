"""End to end: flow files written by a real `mitmdump -w`, checked offline and exported as fixtures."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import openai
import pytest
from llm_reasoning_proxy.offline.check import check_flows
from llm_reasoning_proxy.offline.cli import load_flows
from llm_reasoning_proxy.offline.fixtures import read_fixture_dir
from mitmproxy import flow, io
from mitmproxy.test import tflow

from tests.support.agent import run_session
from tests.support.fake_provider import FakeProvider
from tests.support.offline_cli import offline_cli as cli
from tests.support.planted import planted
from tests.support.proxy import MitmdumpProcess

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parent.parent
TOKEN = planted("sk-test-", "PLANTED0123456789abcdefghij")
QUERY_KEY = planted("AIza", "PLANTEDQUERY0123456789abcdefghijkl")
BODY_KEY = planted("sk-proj-", "PLANTEDINBODY0123456789abcdef")


def record(fake: FakeProvider, confdir: Path, out: Path, *, repair: bool) -> Path:
    """Runs the OpenCode-style session through a proxy writing `out` (-w); returns the flow file."""
    args = (
        "--mode",
        f"reverse:{fake.url}",
        "--set",
        "llm_cache=memory",
        "--set",
        "llm_log=",
        "--set",
        f"llm_repair={'true' if repair else 'false'}",
        "-w",
        str(out),
    )
    with MitmdumpProcess(*args, confdir=confdir) as proxy:
        task = f"Read README.md and summarise it to SUMMARY.md. (Deploy key for later: {BODY_KEY})"
        session = run_session(f"{proxy.url}/v1", TOKEN, query={"key": QUERY_KEY}, task=task)
    assert session.statuses == ([200, 200, 200] if repair else [200, 400]), session.statuses
    return out


@pytest.fixture(scope="module")
def failing_capture(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The conversation recorded without repair: turn 2 fails because the client dropped reasoning_content."""
    return record(fake, confdir, tmp_path_factory.mktemp("capture") / "failing.mitm", repair=False)


@pytest.mark.slow
def test_check_explains_the_failure_and_shows_the_repair(failing_capture: Path) -> None:
    result = cli("check", str(failing_capture))
    assert result.returncode == 0, result.stdout + result.stderr  # the proxy would fix every request
    report = result.stdout
    first, second = report.split("\n#2 ")[0], report.split("\n#2 ")[1].split("Tool-call chain:")[0]
    assert "-> HTTP 200" in first and "as sent: breaks no known rule" in first and "calls read(call_" in first
    assert "-> HTTP 400" in second and "as sent: would fail" in second
    assert "drops reasoning_content the provider returned (messages[2], tool call call_" in second
    assert "the provider answered: reasoning_content_missing" in second
    assert "Missing `reasoning_content` field in the assistant message at message index 2" in second
    assert "restored reasoning_content on messages[2]" in second
    added = [line.strip() for line in second.splitlines() if line.strip().startswith("+ ")]
    assert any(line.endswith('"reasoning_content": "The user wants a listing. I will call read."') for line in added)
    assert "after repair: breaks no known rule" in second
    assert "#1 deepseek-reasoner -> calls read(call_" in report
    assert "#2 deepseek-reasoner -> HTTP 400 reasoning_content_missing (client dropped state for call_" in report
    assert report.rstrip().endswith(
        "2 LLM request(s); 1 would fail as sent (#2); 0 would still fail through the proxy."
    )
    assert TOKEN not in report and QUERY_KEY not in report and BODY_KEY not in report


@pytest.mark.slow
def test_check_reads_the_same_capture_as_har(failing_capture: Path, confdir: Path, tmp_path: Path) -> None:
    har = tmp_path / "failing.har"
    converted = MitmdumpProcess(
        "-n", "-r", str(failing_capture), "--set", f"hardump={har}", confdir=confdir, addon=False
    )
    converted.command = [c for c in converted.command if c not in ("--listen-host", "127.0.0.1", "--listen-port", "0")]
    subprocess.run(converted.command, cwd=ROOT, capture_output=True, timeout=60, check=True)
    as_flows = check_flows(load_flows(failing_capture))
    as_har = check_flows(load_flows(har))
    assert [c.actions for c in as_har] == [c.actions for c in as_flows]
    assert [c.status for c in as_har] == [200, 400]


@pytest.mark.slow
def test_a_conversation_repaired_live_is_checked_as_the_client_sent_it(
    fake: FakeProvider, confdir: Path, tmp_path: Path
) -> None:
    capture = record(fake, confdir, tmp_path / "repaired.mitm", repair=True)
    result = cli("check", "--no-diff", str(capture))
    assert result.returncode == 0
    assert result.stdout.count("(the recording proxy repaired this request live") == 2
    assert "3 LLM request(s); 2 would fail as sent (#2, #3); 0 would still fail through the proxy." in result.stdout
    assert "#3 deepseek-reasoner -> answer (client dropped state for call_" in result.stdout


@pytest.mark.slow
def test_exit_status_says_a_request_would_still_fail(fake: FakeProvider, confdir: Path, tmp_path: Path) -> None:
    """Turn 1 went straight to the provider, so nothing in the capture can repair turn 2."""
    turn_one = run_session(f"{fake.url}/v1", TOKEN, turns=1)
    assert turn_one.statuses == [200]
    read_call = {"id": "call_direct", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [
        *turn_one.messages,
        {"role": "assistant", "content": "", "tool_calls": [read_call]},
        {"role": "tool", "tool_call_id": "call_direct", "content": "ok"},
    ]
    out = tmp_path / "late.mitm"
    args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", "llm_log=", "-w", str(out))
    with MitmdumpProcess(*args, confdir=confdir) as proxy:
        llm = openai.OpenAI(base_url=f"{proxy.url}/v1", api_key=TOKEN, max_retries=0)
        with pytest.raises(openai.BadRequestError):
            llm.chat.completions.create(model="deepseek-reasoner", messages=history)
    result = cli("check", str(out))
    assert result.returncode == 1
    assert "the addon cannot fix this: nothing cached for it" in result.stdout
    assert "1 would still fail through the proxy" in result.stdout


@pytest.mark.slow
def test_unreadable_input_is_a_clear_error(tmp_path: Path) -> None:
    junk = tmp_path / "junk.mitm"
    junk.write_bytes(b"\x00\x01 not a flow file")
    result = cli("check", str(junk))
    assert result.returncode == 2
    assert "not a readable mitmproxy flow file or HAR file" in result.stderr


@pytest.mark.slow
def test_export_removes_credentials_and_replays_to_the_same_repairs(failing_capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "fixture"
    result = cli("export", str(failing_capture), str(out), "--placeholders")
    assert result.returncode == 0, result.stderr
    written = b"".join(path.read_bytes() for path in sorted(out.iterdir()))
    for secret in (TOKEN, QUERY_KEY, BODY_KEY):
        assert secret.encode() not in written
    meta = json.loads((out / "meta.json").read_text())
    assert meta["source"] == "failing.mitm" and meta["exchanges"] == 2
    fixtures = read_fixture_dir(out)
    assert fixtures[1].expect.repairs[0].startswith("restored reasoning_content on messages[2] (tool call call_")
    assert fixtures[1].response.status == 400
    # The fixtures replay through the addon to exactly the repairs they were exported with.
    replayed = check_flows(load_flows(out))
    assert [[a.describe() for a in c.actions] for c in replayed] == [f.expect.repairs for f in fixtures]
    assert cli("check", str(out)).returncode == 0


@pytest.mark.slow
def test_a_har_entry_mitmproxy_writes_twice_is_read_once(confdir: Path, tmp_path: Path) -> None:
    """A flow that ended with both an answer and an error (the client hung up after its answer) is written to a
    HAR file twice by mitmproxy's own export; the offline tools read it once."""
    answered = tflow.tflow(resp=True)
    answered.error = flow.Error("client disconnected")
    flows, har = tmp_path / "hung-up.mitm", tmp_path / "hung-up.har"
    with flows.open("wb") as handle:
        io.FlowWriter(handle).add(answered)
    converted = MitmdumpProcess("-n", "-r", str(flows), "--set", f"hardump={har}", confdir=confdir, addon=False)
    converted.command = [c for c in converted.command if c not in ("--listen-host", "127.0.0.1", "--listen-port", "0")]
    subprocess.run(converted.command, cwd=ROOT, capture_output=True, timeout=60, check=True)
    assert len(json.loads(har.read_text())["log"]["entries"]) == 2  # mitmproxy's export, as it is
    assert len(load_flows(har)) == 1
