"""Makes the README's screenshots again: `scripts/screenshots` (writes flows/screenshots/*.png).

A short session (tests/support/sample_session.py) is recorded through a real mitmdump with the addon in front of the
fake provider; its report (scripts/report) and its flows in mitmweb's LLM view are photographed in headless chromium.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.browser import open_page
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import MITMDUMP, ROOT, MitmdumpProcess
from tests.support.sample_session import record_session

OUT = ROOT / "flows" / "screenshots"
WINDOW = (1400, 900)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def report_shot(flows: Path, scratch: Path) -> None:
    page_path = scratch / "report.html"
    subprocess.run([sys.executable, "-m", "llm_reasoning_proxy.offline.cli", "report", str(flows), "-o", str(page_path),
                    "--title", "A client that drops reasoning, repaired and refused"], check=True)  # fmt: skip
    with open_page(page_path) as page:
        page.driver.set_window_size(*WINDOW)
        page.wait_for("body[data-ready]")
        page.click("#turn-2 > summary")
        page.wait_for("#turn-2 .body")
        page.driver.execute_script(
            "document.querySelector('#turn-2').scrollIntoView({block: 'start'}); scrollBy(0, -150)"
        )
        page.screenshot(OUT / "report.png")


def mitmweb_shot(flows: Path, confdir: Path) -> None:
    password = secrets.token_hex(8)
    port = free_port()
    from mitmproxy.tools.web import webaddons

    auth = ["--set", f"web_password={password}"] if hasattr(webaddons, "WebAuth") else []
    web = MitmdumpProcess("-r", str(flows), "--web-port", str(port), "--set", "web_open_browser=false", *auth,
                          confdir=confdir, mitmdump=MITMDUMP.with_name("mitmweb"))  # fmt: skip
    with web:
        web.wait_for_line(f"Web server listening at http://127.0.0.1:{port}/")
        base = f"http://127.0.0.1:{port}/" + (f"?token={password}" if auth else "")
        headers = {"Authorization": f"Bearer {password}"} if auth else {}
        listed: list[dict] = []
        for _ in range(600):  # mitmweb reads the file once it runs
            listed = httpx.get(f"http://127.0.0.1:{port}/flows", headers=headers, timeout=30).json()
            if len(listed) >= 2:
                break
            time.sleep(0.05)
        second = sorted(listed, key=lambda f: f["request"]["timestamp_start"])[1]
        with open_page(f"{base}#/flows/{second['id']}/request", offline=False) as page:
            page.driver.set_window_size(*WINDOW)
            page.wait_for_text("body", "[restored]", timeout=60)
            view = page.driver.find_element("xpath", "//*[contains(text(), 'LLM chat_completions')]")
            page.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", view)
            page.screenshot(OUT / "mitmweb.png")


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    fake = FakeProvider().start()
    try:
        with tempfile.TemporaryDirectory() as scratch_name:
            scratch = Path(scratch_name)
            flows = scratch / "session.mitm"
            repaired, refused = scratch / "repaired.mitm", scratch / "refused.mitm"
            record_session(fake, scratch / "conf", repaired, "sk-screenshot-one", repair=True)
            record_session(fake, scratch / "conf", refused, "sk-screenshot-two", repair=False)
            flows.write_bytes(repaired.read_bytes() + refused.read_bytes())
            report_shot(flows, scratch)
            mitmweb_shot(repaired, scratch / "conf")
    finally:
        fake.stop()
    print(f"wrote {OUT / 'report.png'} and {OUT / 'mitmweb.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
