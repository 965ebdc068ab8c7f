"""End to end: what a client or an upstream sends to make the addon's own work large stays bounded (issue 27).

1. An AWS event-stream answer whose frames carry 128 KiB of distinct headers each, through a real mitmdump: no more
   memory than plain mitmdump spends on it.
2. A capture of a thousand alike messages a turn, through the real `scripts/report`: done in about the time of an
   ordinary capture of its size.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
from llm_reasoning_proxy.wire.event_stream import MAX_HEADERS_BYTES, encode_frame
from mitmproxy import http
from mitmproxy.addons.savehar import SaveHar
from mitmproxy.test import tflow

from tests.support import fake_bedrock
from tests.support.event_log import LogTail
from tests.support.hostile_upstream import Answer, HostileUpstream
from tests.support.proxy import ROOT, MitmdumpProcess, plain_streaming, reverse_proxy, scripts_env

pytestmark = pytest.mark.e2e

MB = 1 << 20

# --- 1. an event stream of many distinct headers -----------------------------------------------------------

CONVERSE_STREAM = "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse-stream"
EVENT_STREAM = {"content-type": "application/vnd.amazon.eventstream"}


def many_headers_answer(frames: int = 64) -> bytes:
    """A ConverseStream answer whose reasoning comes in `frames` well-formed frames (both CRCs right), each with
    Bedrock's three headers and then as many distinct boolean headers of 6-byte names as fit in the 128 KiB the AWS
    SDKs accept."""
    bedrock = {":message-type": "event", ":event-type": "contentBlockDelta", ":content-type": "application/json"}
    room = MAX_HEADERS_BYTES - sum(4 + len(name) + len(value) for name, value in bedrock.items())
    many = room // 8  # a boolean header is its name's length, the name (6 bytes here), and its type
    thought = {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "a thought "}}}
    return b"".join(
        [fake_bedrock.frame("messageStart", {"role": "assistant"})]
        + [
            encode_frame(
                bedrock | {f"{frame:02x}{index:04x}": True for index in range(many)}, json.dumps(thought).encode()
            )
            for frame in range(frames)
        ]
        + [
            fake_bedrock.frame(
                "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "c2ln"}}}
            ),
            fake_bedrock.frame("contentBlockStop", {"contentBlockIndex": 0}),
            fake_bedrock.frame("messageStop", {"stopReason": "end_turn"}),
        ]
    )


def memory_mb(pid: int, field: str = "VmRSS") -> float:
    """Resident memory of a process from /proc: now (VmRSS), or its peak so far (VmHWM)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith(f"{field}:"))) / 1024


def streamed(proxy: MitmdumpProcess, path: str) -> int:
    with httpx.Client(base_url=proxy.url, timeout=120) as client:
        with client.stream("POST", path, json={"messages": []}) as response:
            assert response.status_code == 200
            return sum(len(piece) for piece in response.iter_raw())


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostileUpstream]:
    upstream = HostileUpstream().start()
    yield upstream
    upstream.stop()


class Grown(NamedTuple):
    idle: float  # MB of resident memory held once the answers are over
    peak: float  # MB of peak resident memory while they went through


def grown_after_streams(proxy: MitmdumpProcess, path: str, body: bytes, log: LogTail | None) -> Grown:
    """What the proxy's memory grew by over three such answers one after another, then six at once."""
    with proxy:
        httpx.get(f"{proxy.url}/warm-up", timeout=60)  # a first flow: what is measured is the answers' own cost
        started = memory_mb(proxy.pid)
        for _ in range(3):
            assert streamed(proxy, path) == len(body)
        with ThreadPoolExecutor(6) as pool:
            assert list(pool.map(lambda _: streamed(proxy, path), range(6))) == [len(body)] * 6
        if log is not None:  # the addon is done with an answer once it logged what it made of it
            log.wait_for("captured", 9, where=lambda e: path in e["url"])
        return Grown(memory_mb(proxy.pid) - started, memory_mb(proxy.pid, "VmHWM") - started)


@pytest.mark.slow
def test_an_event_stream_of_many_distinct_headers_costs_no_more_memory_than_plain_mitmdump(
    hostile: HostileUpstream, confdir: Path, tmp_path: Path
) -> None:
    """64 frames, each with 128 KiB of headers all unlike (16,000 headers, 1.6 MB once parsed): a parser that kept
    the headers it read would hold 100 MB per stream, and give little of it back to the system."""
    body = many_headers_answer()
    path = f"/{uuid.uuid4().hex}{CONVERSE_STREAM}"
    pieces = [body[at : at + 64 * 1024] for at in range(0, len(body), 64 * 1024)]
    hostile.serve(path, Answer(headers=EVENT_STREAM, body=lambda: pieces))
    log = LogTail(tmp_path / "events.jsonl")
    addon = reverse_proxy(hostile.url, confdir, llm_cache=tmp_path / "cache.db", llm_log=tmp_path / "events.jsonl")
    plain = grown_after_streams(plain_streaming(hostile.url, confdir), path, body, None)
    grown = grown_after_streams(addon, path, body, log)
    print(
        f"9 streams of {len(body) // MB} MB: +{grown.idle:.0f} MB held, +{grown.peak:.0f} MB at the peak through the "
        f"addon; +{plain.idle:.0f} MB, +{plain.peak:.0f} MB through plain mitmdump"
    )  # shown with -s
    assert grown.idle <= plain.idle + 64, (grown, plain)
    assert grown.peak <= plain.peak + 64, (grown, plain)


# --- 2. a report of a capture of alike messages -----------------------------------------------------------------

CONVERSATIONS = 32
WORDS = 990  # one-word user messages a request: two turns' histories under a million pairs, which difflib aligned


def one_word_messages(turn: int, shape: str) -> list[dict]:
    """Alike: all "A" on a first turn, "A" and "C" in turn on a second. Ordinary: distinct words, alike on both."""
    if shape == "ordinary":
        return [{"role": "user", "content": f"w{at}"} for at in range(WORDS)]
    return [{"role": "user", "content": "A" if turn == 0 or at % 2 == 0 else "C"} for at in range(WORDS)]


def chat_flow(messages: list[dict], answer: dict) -> http.HTTPFlow:
    request = http.Request.make(
        "POST",
        "https://api.deepseek.com/chat/completions",
        json.dumps({"model": "deepseek-reasoner", "messages": messages}),
        {"content-type": "application/json"},
    )
    response = http.Response.make(
        200, json.dumps({"choices": [{"index": 0, "message": answer}]}), {"content-type": "application/json"}
    )
    return tflow.tflow(req=request, resp=response)


def tool_loops_har(path: Path, shape: str) -> Path:
    """A HAR of `CONVERSATIONS` DeepSeek tool loops of two turns, each request `WORDS` one-word user messages (then,
    on the second turn, the tool call and its result, reasoning_content dropped by the client)."""
    flows = []
    for conversation in range(CONVERSATIONS):
        call = {"id": f"call_{conversation:04d}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        answer = {"role": "assistant", "content": None, "reasoning_content": "a thought", "tool_calls": [call]}
        flows.append(chat_flow(one_word_messages(0, shape), answer))
        result = {"role": "tool", "tool_call_id": call["id"], "content": "done"}
        history = [*one_word_messages(1, shape), {"role": "assistant", "content": None, "tool_calls": [call]}, result]
        flows.append(chat_flow(history, {"role": "assistant", "content": "Done."}))
    path.write_text(json.dumps(SaveHar().make_har(flows)))
    return path


def report(capture: Path, out: Path) -> tuple[str, float]:
    """scripts/report's output, and the seconds it took. Before its comparisons were bounded, the alike capture took
    minutes (some ten seconds a conversation): the timeout fails it."""
    started = time.monotonic()
    done = subprocess.run(
        [str(ROOT / "scripts" / "report"), str(capture), "-o", str(out)],
        env=scripts_env() | {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, time.monotonic() - started


def since_previous(page: Path) -> list[dict]:
    found = re.search(r'<script id="data" type="application/json">(.*?)</script>', page.read_text(), re.S)
    assert found is not None
    return [turn["since"] for turn in json.loads(found.group(1))["T"]]


def test_a_capture_of_a_thousand_alike_messages_a_turn_is_reported_as_an_ordinary_one(tmp_path: Path) -> None:
    seconds = {}
    for shape in ("ordinary", "alike"):
        capture = tool_loops_har(tmp_path / f"{shape}.har", shape)
        said, seconds[shape] = report(capture, tmp_path / f"{shape}.html")
        expected = f"wrote {tmp_path / shape}.html: {2 * CONVERSATIONS} exchange(s) in {CONVERSATIONS} conversation(s)"
        assert said.startswith(expected), said
        print(f"{shape}: {capture.stat().st_size / MB:.2f} MB, reported in {seconds[shape]:.1f} s")  # shown with -s
    # Each second turn against the first: the tool result new, and what the client dropped (the reasoning, and the
    # 495 words that changed, each shown against the one it replaced).
    since = since_previous(tmp_path / "alike.html")
    assert since[::2] == [None] * CONVERSATIONS
    assert [(turn["new"], turn["dropped"], len(turn["msgs"])) for turn in since[1::2]] == [
        (1, 496, 497)
    ] * CONVERSATIONS
