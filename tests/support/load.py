"""Many agent conversations at once through one proxy (scripts/load, tests/test_e2e_load.py): every turn must be
repaired and answered.

Starts the fake provider (tests/support/fake_provider.py, which enforces each
provider's rules with its real error texts) in a process of its own, and one
`mitmdump -s addon/main.py` in front of it with a SQLite cache. Then it runs
waves of concurrent agent conversations with the openai SDK. Each conversation
makes its tool-call turns and then gets its answer. The client drops
reasoning_opaque and sends `content: []` (as Zed does with GitHub Copilot's
Gemini 3), so every turn after the first is answered 200 only if the proxy
repaired it. After each wave it records the proxy's resident memory. The first
two waves are the warm-up: they fill the proxy's bounded caches (2,048 parsed
records, 16,384 remembered keys per process); after them memory is flat.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import openai

from tests.support.agent import add_chunk
from tests.support.fake_provider import fake_provider_process
from tests.support.proxy import MitmdumpProcess

MODEL = "gemini-3-pro-preview"  # the fake answers as GitHub Copilot serving Gemini 3
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
        },
    }
]
WARMUP_WAVES = 2


@dataclass
class Wave:
    conversations: int
    seconds: float
    turns_ok: int
    turns_failed: int
    answers: int
    turn_p50_ms: float
    turn_p95_ms: float
    rss_after_mb: float
    proxy_cpu_seconds: float  # what the proxy process spent on the CPU during the wave
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def turns_per_second(self) -> float:
        return (self.turns_ok + self.turns_failed) / self.seconds


@dataclass
class LoadReport:
    conversations: int
    turns: int
    waves: list[Wave]
    repaired_events: int
    failure_events: int
    proxy_errors: list[str]

    @property
    def every_turn_ok(self) -> bool:
        return all(w.turns_failed == 0 and w.answers == w.conversations for w in self.waves)

    @property
    def growth_after_warmup_mb(self) -> float:
        warm = self.waves[min(WARMUP_WAVES, len(self.waves)) - 1]
        return self.waves[-1].rss_after_mb - warm.rss_after_mb


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def conversation(llm: openai.AsyncOpenAI, turns: int, latencies: list[float], statuses: dict[str, int]) -> bool:
    """One agent loop; True when it reached its answer with every turn answered 200."""
    messages: list[dict] = [{"role": "user", "content": "Read the files one by one, then summarise them."}]
    for _ in range(turns + 1):
        started = time.perf_counter()
        try:
            stream = await llm.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True)
            content: list[str] = []
            calls: dict[int, dict] = {}
            async for chunk in stream:
                add_chunk(chunk, content, calls)
        except openai.APIStatusError as e:
            statuses[str(e.status_code)] = statuses.get(str(e.status_code), 0) + 1
            return False
        except (openai.APIConnectionError, httpx.HTTPError) as e:
            statuses[type(e).__name__] = statuses.get(type(e).__name__, 0) + 1
            return False
        latencies.append(time.perf_counter() - started)
        statuses["200"] = statuses.get("200", 0) + 1
        if not calls:
            return True
        # What the client sends back: no reasoning_opaque, and `content: []` for a message without text.
        tool_calls = [calls[i] for i in sorted(calls)]
        messages.append({"role": "assistant", "content": "".join(content) or [], "tool_calls": tool_calls})
        messages += [{"role": "tool", "tool_call_id": c["id"], "content": "def f(): pass\n" * 40} for c in tool_calls]
    return False


async def wave(base_url: str, conversations: int, turns: int) -> tuple[float, list[bool], list[float], dict]:
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    limits = httpx.Limits(max_connections=conversations, max_keepalive_connections=conversations)
    async with httpx.AsyncClient(limits=limits, timeout=120) as http_client:
        llms = [
            openai.AsyncOpenAI(
                base_url=f"{base_url}/v1",
                api_key=f"sk-load-{uuid.uuid4().hex}",  # a user each, as many editors behind one proxy
                max_retries=0,
                http_client=http_client,
                default_headers={"x-fake-steps": str(turns)},
            )
            for _ in range(conversations)
        ]
        started = time.perf_counter()
        results = await asyncio.gather(*(conversation(llm, turns, latencies, statuses) for llm in llms))
        return time.perf_counter() - started, list(results), latencies, statuses


def run_load(conversations: int, turns: int, waves: int, scratch: Path) -> LoadReport:
    log = scratch / "events.jsonl"
    with fake_provider_process() as fake_url:
        proxy = MitmdumpProcess(
            "--mode",
            f"reverse:{fake_url}",
            "--set",
            f"llm_cache={scratch / 'cache.db'}",
            "--set",
            f"llm_log={log}",
            "--set",
            "llm_log_max_size=1GB",  # every event is counted below
            confdir=scratch / "conf",
        )
        done: list[Wave] = []
        with proxy:
            for _ in range(waves):
                cpu_before = cpu_seconds(proxy.pid)
                seconds, results, latencies, statuses = asyncio.run(wave(proxy.url, conversations, turns))
                ok = statuses.get("200", 0)
                latencies.sort()
                done.append(
                    Wave(
                        conversations=conversations,
                        seconds=seconds,
                        turns_ok=ok,
                        turns_failed=sum(v for k, v in statuses.items() if k != "200"),
                        answers=sum(results),
                        turn_p50_ms=statistics.median(latencies) * 1000 if latencies else 0.0,
                        turn_p95_ms=latencies[int(len(latencies) * 0.95)] * 1000 if latencies else 0.0,
                        rss_after_mb=rss_mb(proxy.pid),
                        proxy_cpu_seconds=cpu_seconds(proxy.pid) - cpu_before,
                        statuses=statuses,
                    )
                )
            output = proxy.output
    kinds = [json.loads(line)["kind"] for line in log.read_text().splitlines()]
    errors = [line for line in output.splitlines() if "Traceback" in line or "failed on flow" in line]
    return LoadReport(
        conversations=conversations,
        turns=turns,
        waves=done,
        repaired_events=kinds.count("repaired"),
        failure_events=kinds.count("failure"),
        proxy_errors=errors[:20],
    )


def render(report: LoadReport) -> str:
    lines = [
        f"{report.conversations} concurrent conversations x {report.turns} tool-call turns (+ the answer), "
        f"{len(report.waves)} waves through one proxy",
        f"{'wave':>4} {'seconds':>8} {'turns/s':>8} {'ok':>6} {'failed':>6} {'answers':>8} "
        f"{'p50 ms':>8} {'p95 ms':>8} {'proxy CPU':>10} {'proxy RSS MB':>13}",
    ]
    for n, w in enumerate(report.waves, 1):
        lines.append(
            f"{n:>4} {w.seconds:>8.1f} {w.turns_per_second:>8.1f} {w.turns_ok:>6} {w.turns_failed:>6} "
            f"{w.answers:>8} {w.turn_p50_ms:>8.0f} {w.turn_p95_ms:>8.0f} {w.proxy_cpu_seconds / w.seconds:>9.0%} "
            f"{w.rss_after_mb:>13.1f}"
        )
    lines += [
        f"repaired events: {report.repaired_events}, failure events: {report.failure_events}, "
        f"proxy errors: {len(report.proxy_errors)}",
        f"proxy memory after the {WARMUP_WAVES} warm-up waves: {report.growth_after_warmup_mb:+.1f} MB by the last",
    ]
    return "\n".join(lines)
