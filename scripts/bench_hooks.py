"""Where the addon's time goes on a stream's way to its first event, inside a running mitmdump.

    scripts/bench-hooks [--rounds N]

Sends each dense stream of scripts/bench.py (first event alone, the rest 10 ms later) through plain mitmdump and
through the addon, interleaved round by round as `scripts/bench` does, with the addon loaded through
scripts/bench_hooks_timed.py, which times each of its hooks as it runs. Prints, per stream, the first event's
medians and the addon's added milliseconds, then the hooks' medians over the whole run: what the proxy's own code
took of the added time. In a warm loop (`scripts/bench`'s "hooks on a stream's way to its first event") the same
hooks take several times less: between two requests, the other processes' work leaves the caches cold.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from scripts import bench  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=100, help="paused streams per dialect and target")
    args = parser.parse_args()
    upstream, port = bench.start_upstream()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        times = scratch / "hook-times.json"
        plain, addon = bench.proxies(
            port,
            scratch,
            script=bench.ROOT / "scripts" / "bench_hooks_timed.py",
            env={"LLM_BENCH_HOOK_TIMES": str(times)},
        )
        try:
            plain.start()
            addon.start()
            for pid, cpu in ((os.getpid(), 0), (upstream.pid, 0), (plain.pid, 1), (addon.pid, 1)):
                bench.pin(pid, cpu)
            targets = ("plain", "addon")
            clients = {t: httpx.Client(base_url=p.url, timeout=60) for t, p in zip(targets, (plain, addon))}
            print(f"{'first event (ms, median)':44} {'plain':>8} {'addon':>8} {'added':>8} {'ratio':>8}")
            for _, label, path, body, dense in bench.DENSE_STREAMS:
                first = bench.streamed(
                    clients,
                    2000,
                    args.rounds,
                    path=path,
                    body=body,
                    dense=dense,
                    targets=targets,
                    pause_ms=bench.FIRST_EVENT_PAUSE_MS,
                ).first
                added = statistics.median(a - p for a, p in zip(first.samples["addon"], first.samples["plain"]))
                print(
                    f"{label:44} {first.median('plain'):>8.3f} {first.median('addon'):>8.3f} {added:>8.3f} "
                    f"{first.ratio('addon', 'plain'):>8.3f}"
                )
            for client in clients.values():
                client.close()
        finally:
            plain.stop()
            addon.stop()
            upstream.terminate()
        measured = json.loads(times.read_text())
    print("\nthe addon's hooks inside mitmdump (µs, median over every call; 'other': not LLM traffic)")
    for label, median in sorted(measured["median_us"].items()):
        print(f"  {label:44} {median:>8.1f}  ({measured['calls'][label]} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
