"""How long `scripts/report` takes on a long capture, how big the page is, and how fast a browser opens it.

    scripts/bench-report [--conversations 10] [--turns 100] [--history 400] [--no-browser]

Writes a flow file of `conversations x turns` chat-completions exchanges (DeepSeek style: every assistant tool call
with its reasoning_content in the answer, dropped by the client in the next request, so every turn is repaired),
each request carrying a history of at least `history` messages, then times the report and, in headless chromium,
the page until it is ready and until the last turn is open.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from llm_reasoning_proxy.offline.report import write_report
from mitmproxy import http, io
from mitmproxy.test import tflow

URL = "https://api.deepseek.com/chat/completions"
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench-not-a-real-key-0123456789"}


def _tool_result(n: int) -> str:
    return f"file {n}: " + ("lorem ipsum dolor sit amet " * 30)


def _answer(conversation: int, turn: int) -> tuple[bytes, str]:
    call_id = f"call_{conversation:03d}_{turn:05d}"
    events = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": f"Turn {turn}: I should "}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "read the next file."}}]},
        {
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": "read", "arguments": json.dumps({"path": f"src/{turn}.py"})},
                            }
                        ]
                    },
                }
            ]
        },
        {
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 90000 + turn, "completion_tokens": 40, "total_tokens": 90040 + turn},
        },
    ]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return body.encode(), call_id


def _history_turn(conversation: int, turn: int, call_id: str) -> list[dict]:
    """What the client sends back of one earlier turn: the call without its reasoning, and the call's result."""
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read", "arguments": json.dumps({"path": f"src/{turn}.py"})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": _tool_result(turn)},
    ]


def write_capture(path: Path, conversations: int, turns: int, history: int) -> int:
    started = 1_700_000_000.0
    count = 0
    with path.open("wb") as handle:
        writer = io.FlowWriter(handle)
        for conversation in range(conversations):
            messages = [
                {"role": "system", "content": "You are a coding agent. " * 20},
                {"role": "user", "content": f"Session {conversation}: refactor the project."},
            ]
            # The session was resumed: its first request already holds `history` messages, as in an agent session
            # that has been going for hours (earlier turns' calls with ids the capture never saw answered).
            for earlier in range((history - 2) // 2):
                messages += _history_turn(conversation, -1 - earlier, f"call_old_{conversation:03d}_{earlier:05d}")
            for turn in range(turns):
                body = json.dumps(
                    {"model": "deepseek-reasoner", "stream": True, "messages": messages, "tools": []}
                ).encode()
                request = http.Request.make("POST", URL, body, HEADERS)
                request.timestamp_start = request.timestamp_end = started + count
                answer, call_id = _answer(conversation, turn)
                response = http.Response.make(200, answer, {"content-type": "text/event-stream"})
                response.timestamp_start = started + count + 0.3
                response.timestamp_end = started + count + 1.1
                writer.add(tflow.tflow(req=request, resp=response))
                count += 1
                messages = messages + _history_turn(conversation, turn, call_id)
    return count


def browse(page_path: Path) -> dict[str, float]:
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.support.browser import open_page

    with open_page(page_path.as_uri()) as page:
        # the page says when it was ready: milliseconds since navigation began (parsing its data included)
        ready_ms = int(page.wait_for("body[data-ready]", timeout=600).get_attribute("data-ready"))
        turns = page.driver.find_elements("css selector", "details.turn")
        started = time.perf_counter()
        page.click(f"#{turns[-1].get_attribute('id')} > summary")  # the last rendered turn: the longest history
        page.wait_for("details.turn[open] .body", timeout=600)
        opened = time.perf_counter() - started
        shown = page.driver.find_element("id", "shown")
        before = shown.text
        started = time.perf_counter()
        page.driver.find_element("id", "search").send_keys("src/57.py")  # in one turn's answer and every later one
        WebDriverWait(page.driver, 600).until(lambda _: shown.text != before)
        searched = time.perf_counter() - started  # includes the page's 200 ms wait for typing to stop
    return {"page_ready_s": round(ready_ms / 1000, 2), "turn_open_s": round(opened, 2), "search_s": round(searched, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--history", type=int, default=400)
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--keep", type=Path, help="write the capture and the page into this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        capture, page = folder / "capture.mitm", folder / "report.html"
        exchanges = write_capture(capture, args.conversations, args.turns, args.history)
        written = write_report(capture, page)
        result = {
            "exchanges": exchanges,
            "capture_mb": round(capture.stat().st_size / 1e6, 1),
            "report_s": round(written.seconds, 2),
            "report_mb": round(written.size / 1e6, 2),
            "distinct_messages": written.messages,
            "conversations": written.conversations,
        }
        if not args.no_browser:
            result |= browse(page)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
