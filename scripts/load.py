"""Many agent conversations at once through one proxy: every turn must be repaired and answered.

Starts the fake provider (tests/support/fake_provider.py, which enforces each
provider's rules with its real error texts) in a process of its own, and one
`mitmdump -s addon/main.py` in front of it with a SQLite cache. Then it runs
waves of CONVERSATIONS concurrent agent conversations with the openai SDK.
Each conversation makes TURNS tool-call turns and then gets its answer. The
client drops reasoning_opaque and sends `content: []` (as Zed does with GitHub
Copilot's Gemini 3), so every turn after the first is answered 200 only if the
proxy repaired it. After each wave it records the proxy's resident memory. The
first two waves are the warm-up: they fill the proxy's bounded caches (2,048
parsed records, 16,384 remembered keys per process); after them memory is flat.

    scripts/load [--conversations 200] [--turns 5] [--waves 3] [--out load-results.json]

With --cache-sizes it times turns against the size of the cache instead (tests/support/load_cache_sizes.py):
CONVERSATIONS conversations (300 unless given), CONCURRENCY at a time, through a proxy opened on a cache of each
size, and prints each size's p99 next to the empty cache's:

    scripts/load --cache-sizes 0,100000,1000000,0 [--conversations 300] [--turns 3] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.load import render, run_load  # noqa: E402
from tests.support.load_cache_sizes import render_sizes, run_cache_sizes  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int)
    parser.add_argument("--turns", type=int)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--cache-sizes", help="comma-separated entry counts, such as 0,100000,1000000")
    parser.add_argument("--concurrency", type=int, default=4, help="conversations at a time, with --cache-sizes")
    parser.add_argument("--out", type=Path, default=Path("load-results.json"))
    args = parser.parse_args()
    if args.cache_sizes:
        return sizes(args)
    conversations, turns = args.conversations or 200, args.turns or 5
    with tempfile.TemporaryDirectory() as scratch:
        report = run_load(conversations, turns, args.waves, Path(scratch))
    print(render(report))
    for line in report.proxy_errors:
        print("proxy:", line)
    summary = asdict(report) | {"every_turn_ok": report.every_turn_ok, "cpus": os.cpu_count()}
    args.out.write_text(json.dumps(summary, indent=2))
    return 0 if report.every_turn_ok and not report.failure_events and not report.proxy_errors else 1


def sizes(args: argparse.Namespace) -> int:
    counts = [int(size) for size in args.cache_sizes.split(",")]
    conversations, turns = args.conversations or 300, args.turns or 3
    with tempfile.TemporaryDirectory() as scratch:
        runs = run_cache_sizes(counts, conversations, turns, args.concurrency, Path(scratch))
    print(render_sizes(runs, conversations, turns, args.concurrency))
    args.out.write_text(json.dumps({"cache_sizes": [asdict(run) for run in runs], "cpus": os.cpu_count()}, indent=2))
    return 0 if all(run.turns_failed == 0 for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
