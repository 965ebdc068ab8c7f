"""Records the sample conversation in flows/ anew: `python -m tests.support.sample_flows [OUT_DIR]`.

An OpenCode-style agent (tests/support/agent.py: read, then write, then a final
answer, dropping `reasoning_content` as OpenCode did with DeepSeek V4) talks to
the fake DeepSeek through a real `mitmdump -s addon/main.py -w`, and the flow
file is exported with `python -m llm_reasoning_proxy.offline.cli export`, as a user would.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from llm_reasoning_proxy.offline.fixtures import read_fixture_dir, write_fixture_dir

from tests.support.agent import run_session
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import ROOT, MitmdumpProcess

DEFAULT_OUT = ROOT / "flows" / "opencode-deepseek-multistep"
# The fake listens on a loopback port; the sample shows the endpoint the conversation stands for.
ENDPOINT = "https://api.deepseek.com/chat/completions"


def record(out_dir: Path) -> None:
    fake = FakeProvider().start()
    with tempfile.TemporaryDirectory() as scratch:
        capture = Path(scratch) / "opencode-deepseek.mitm"
        args = ("--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", "llm_log=", "-w", str(capture))
        with MitmdumpProcess(*args, confdir=Path(scratch) / "conf") as proxy:
            session = run_session(proxy.url, "sk-sample-not-a-real-key")
        fake.stop()
        if session.statuses != [200, 200, 200]:
            raise SystemExit(f"the sample conversation did not complete: {session.statuses}")
        subprocess.run(
            [sys.executable, "-m", "llm_reasoning_proxy.offline.cli", "export", str(capture), str(out_dir), "--force"],
            cwd=ROOT,
            check=True,
        )
    fixtures = read_fixture_dir(out_dir)
    for fixture in fixtures:
        fixture.request.url = ENDPOINT
    write_fixture_dir(fixtures, out_dir, source="opencode-deepseek.mitm", overwrite=True)


if __name__ == "__main__":
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT)
