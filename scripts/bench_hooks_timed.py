"""The addon as `mitmdump -s` loads it, with each of its hooks timed as it runs: loaded by scripts/bench_hooks.py.

Times every call of the addon's request, response-headers and response hooks inside the running proxy and writes
their medians (µs) to the file named by $LLM_BENCH_HOOK_TIMES when mitmdump stops. A hook called for a request that
is not LLM traffic (the benchmark's settling request) is counted apart, as "<hook> (other)".
"""

from __future__ import annotations

import functools
import json
import os
import runpy
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HOOKS = ("request", "responseheaders", "response")
_times: dict[str, list[int]] = {}


def _timed(label: str, hook: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(hook)
    def timed(flow: Any) -> None:
        started = time.perf_counter_ns()
        try:
            hook(flow)
        finally:
            elapsed = time.perf_counter_ns() - started
            llm = "llm" in flow.metadata
            _times.setdefault(label if llm else f"{label} (other)", []).append(elapsed)

    return timed


class _WriteTimes:
    def done(self) -> None:
        medians = {label: round(statistics.median(ns) / 1000, 1) for label, ns in _times.items()}
        counts = {label: len(ns) for label, ns in _times.items()}
        Path(os.environ["LLM_BENCH_HOOK_TIMES"]).write_text(json.dumps({"median_us": medians, "calls": counts}))


addons = runpy.run_path(str(Path(__file__).resolve().parent.parent / "addon" / "main.py"))["addons"]
for _addon in addons:
    for _name in HOOKS:
        if _name in type(_addon).__dict__:
            setattr(_addon, _name, _timed(f"{type(_addon).__name__}.{_name}", getattr(_addon, _name)))
addons = [*addons, _WriteTimes()]
