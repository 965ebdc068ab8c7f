"""End to end: a flow file written by a real `mitmdump -w` through the addon, opened in a real mitmweb with the
addon loaded, shows the "LLM" view through mitmweb's own HTTP API (what its browser UI asks)."""

from __future__ import annotations

import secrets
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MITMDUMP, WAIT_SECONDS, MitmdumpProcess, reverse_proxy
from tests.support.turns import client, second_turn
from tests.test_e2e_proxy_behaviour import GEMINI, socket_port, zed_turn_two

pytestmark = pytest.mark.e2e
MITMWEB = MITMDUMP.with_name("mitmweb")
ANSWER = "The directory holds two files."  # the fake provider's last answer, streamed word by word


def web_auth() -> tuple[list[str], dict[str, str]]:
    """mitmweb's options and request headers for its API: mitmproxy 11.1 and newer want a token (a random one,
    printed in the UI's address, unless `web_password` sets it), taken as `Authorization: Bearer`, `?token=` or
    the cookie these set; 11.0.2 has none."""
    from mitmproxy.tools.web import webaddons

    if not hasattr(webaddons, "WebAuth"):
        return [], {}
    password = secrets.token_hex(16)
    return ["--set", f"web_password={password}"], {"Authorization": f"Bearer {password}"}


def view_text(answer: dict[str, Any]) -> str:
    """The text of a content view as mitmweb's API gives it: lines of [style, text] pieces (11.0.2), or text (12)."""
    if "lines" in answer:
        return "\n".join("".join(text for _, text in line) for line in answer["lines"])
    return answer["text"]


@pytest.mark.slow
def test_mitmweb_shows_a_recorded_capture_in_the_llm_view(
    fake: FakeProvider, confdir: Path, tmp_path: Path, api_key: str
) -> None:
    flows = tmp_path / "flows.mitm"
    with reverse_proxy(fake.url, confdir, "-w", str(flows), llm_cache="memory") as proxy:
        messages = zed_turn_two(fake, proxy.url, api_key)
        assert second_turn(client(proxy.url, api_key), GEMINI, messages, stream=True)
        proxy.wait_for_line("llm repaired")

    options, headers = web_auth()
    with socket_port() as web_port:
        pass
    web = MitmdumpProcess(
        "-r", str(flows), "--web-port", str(web_port), "--set", "web_open_browser=false", *options,
        confdir=confdir, mitmdump=MITMWEB,
    )  # fmt: skip
    base_url = f"http://127.0.0.1:{web_port}"
    with web, httpx.Client(base_url=base_url, headers=headers, timeout=30) as api:
        web.wait_for_line(f"Web server listening at http://127.0.0.1:{web_port}/")
        recorded = wait_for_flows(api, 2)  # mitmweb reads the file once it runs
        if headers:
            assert httpx.get(f"{base_url}/flows", timeout=30).status_code == 403  # the token is needed
        first, second = sorted(recorded, key=lambda f: f["request"]["timestamp_start"])

        def view(flow: dict, message: str, name: str = "LLM") -> dict[str, Any]:
            answer = api.get(f"/flows/{flow['id']}/{message}/content/{name}.json")
            assert answer.status_code == 200, answer.text
            return answer.json()

        # the repaired request: the conversation by role, with what the proxy put back marked
        request = view_text(view(second, "request"))
        assert "[restored] reasoning_opaque of call_" in request and "assistant  messages[1]" in request
        # the streamed answer, assembled: its text, not the events it came in
        answer = view_text(view(second, "response"))
        assert ANSWER in answer and "data:" not in answer
        assert "data:" in view_text(view(second, "response", "Raw"))  # the body itself is the stream
        # turn 1's answer: a tool call, with the reasoning the proxy captured
        assert "tool call list_directory" in view_text(view(first, "response"))
        # "auto" (what the UI shows first) picks the view for LLM traffic
        auto = view(second, "response", "auto")
        assert auto.get("view_name", auto.get("description", "")).startswith("LLM") and ANSWER in view_text(auto)


def wait_for_flows(api: httpx.Client, count: int) -> list[dict]:
    """The flows mitmweb shows, once it shows `count`."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        answer = api.get("/flows")
        assert answer.status_code == 200, answer.text
        if len(answer.json()) >= count:
            return answer.json()
        assert time.monotonic() < deadline, f"mitmweb shows {len(answer.json())} flow(s), not {count}"
        time.sleep(0.05)
