"""Turn latency against the size of the cache (scripts/load --cache-sizes): the same agent conversations through a
proxy opened on an empty cache and on caches of many entries, at the default limit of 100,000.

A cache over its limit is brought down while the proxy serves (addon/hooks/upkeep.py), so the run on a million
entries times every turn while the proxy prunes: the case a proxy meets when started on a file that another, with
a higher limit, filled. A GET to a path that is not LLM traffic is timed alongside: pruning must not hold up other
sites either.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import httpx
import openai

from tests.support.cache_fill import fill_cache
from tests.support.fake_provider import fake_provider_process
from tests.support.load import conversation
from tests.support.proxy import MitmdumpProcess

RECORD_BYTES = 1024  # reasoning per filler record: a million come to about 1.3 GB on disk


@dataclass
class SizedRun:
    entries: int
    fill_seconds: float
    startup_seconds: float  # from starting mitmdump to its listening
    turns_ok: int
    turns_failed: int
    turn_p50_ms: float
    turn_p99_ms: float
    turn_max_ms: float
    other_p99_ms: float  # a GET that is not LLM traffic, sent every 50 ms during the run
    records_after: int  # in the file once the run ended


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] * 1000 if ordered else 0.0


async def _run(base_url: str, conversations: int, turns: int, concurrency: int) -> tuple[list, dict, list]:
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    other: list[float] = []
    gate = asyncio.Semaphore(concurrency)
    done = asyncio.Event()
    limits = httpx.Limits(max_connections=concurrency + 1, max_keepalive_connections=concurrency + 1)
    async with httpx.AsyncClient(limits=limits, timeout=120) as http:

        async def one() -> None:
            async with gate:
                llm = openai.AsyncOpenAI(
                    base_url=f"{base_url}/v1",
                    api_key=f"sk-size-{uuid.uuid4().hex}",
                    max_retries=0,
                    http_client=http,
                    default_headers={"x-fake-steps": str(turns)},
                )
                await conversation(llm, turns, latencies, statuses)

        async def elsewhere() -> None:
            while not done.is_set():
                started = time.perf_counter()
                await http.get(f"{base_url}/health")
                other.append(time.perf_counter() - started)
                await asyncio.sleep(0.05)

        side = asyncio.create_task(elsewhere())
        await asyncio.gather(*(one() for _ in range(conversations)))
        done.set()
        await side
    return latencies, statuses, other


def run_cache_sizes(
    sizes: list[int], conversations: int, turns: int, concurrency: int, scratch: Path
) -> list[SizedRun]:
    runs = []
    with fake_provider_process() as fake_url:
        for entries in sizes:
            cache = scratch / f"cache-{entries}.db"
            started = time.perf_counter()
            if entries:
                fill_cache(cache, entries, stored_at=time.time() - 3600, record_bytes=RECORD_BYTES)
            filled = time.perf_counter()
            proxy = MitmdumpProcess(
                "--mode",
                f"reverse:{fake_url}",
                "--set",
                f"llm_cache={cache}",
                "--set",
                f"llm_log={scratch / f'events-{entries}.jsonl'}",
                confdir=scratch / "conf",
            )
            proxy.start(timeout=600)
            try:
                listening = time.perf_counter()
                latencies, statuses, other = asyncio.run(_run(proxy.url, conversations, turns, concurrency))
            finally:
                proxy.stop()
            with sqlite3.connect(cache) as db:
                records_after = db.execute("SELECT count(*) FROM records").fetchone()[0]
            runs.append(
                SizedRun(
                    entries=entries,
                    fill_seconds=filled - started,
                    startup_seconds=listening - filled,
                    turns_ok=statuses.get("200", 0),
                    turns_failed=sum(v for k, v in statuses.items() if k != "200"),
                    turn_p50_ms=statistics.median(latencies) * 1000 if latencies else 0.0,
                    turn_p99_ms=_percentile(latencies, 0.99),
                    turn_max_ms=_percentile(latencies, 1.0),
                    other_p99_ms=_percentile(other, 0.99),
                    records_after=records_after,
                )
            )
            cache.unlink()
            for companion in ("-wal", "-shm"):
                cache.with_name(cache.name + companion).unlink(missing_ok=True)
    return runs


def render_sizes(runs: list[SizedRun], conversations: int, turns: int, concurrency: int) -> str:
    # Against the fastest run on an empty cache (name 0 twice, first and last, so that warming up falls on it too).
    empty = min((run for run in runs if run.entries == 0), key=lambda run: run.turn_p99_ms, default=None)
    lines = [
        f"{conversations} conversations x {turns} tool-call turns (+ the answer), {concurrency} at a time, "
        "through one proxy at the default limit of 100,000 entries",
        f"{'entries':>9} {'start s':>8} {'ok':>5} {'failed':>6} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} "
        f"{'p99/empty':>9} {'other p99':>9} {'after':>8}",
    ]
    for run in runs:
        ratio = f"{run.turn_p99_ms / empty.turn_p99_ms:.2f}" if empty and empty.turn_p99_ms else "-"
        lines.append(
            f"{run.entries:>9,} {run.startup_seconds:>8.1f} {run.turns_ok:>5} {run.turns_failed:>6} "
            f"{run.turn_p50_ms:>7.1f} {run.turn_p99_ms:>7.1f} {run.turn_max_ms:>7.1f} {ratio:>9} "
            f"{run.other_p99_ms:>9.1f} {run.records_after:>8,}"
        )
    return "\n".join(lines)
