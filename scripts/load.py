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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--waves", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("load-results.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        report = run_load(args.conversations, args.turns, args.waves, Path(scratch))
    print(render(report))
    for line in report.proxy_errors:
        print("proxy:", line)
    summary = asdict(report) | {"every_turn_ok": report.every_turn_ok, "cpus": os.cpu_count()}
    args.out.write_text(json.dumps(summary, indent=2))
    return 0 if report.every_turn_ok and not report.failure_events and not report.proxy_errors else 1


if __name__ == "__main__":
    sys.exit(main())
