"""End to end: flow files written by a real `mitmdump -w` through the addon in front of the fake provider, made into
a report by `scripts/report`, and the report opened from disk in a real headless chromium with the network off."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from tests.support.browser import looks_blank, open_page, requires_browser
from tests.support.fake_provider import FakeProvider
from tests.support.proxy import ROOT, MitmdumpProcess, scripts_env
from tests.support.sample_session import ANSWER, record_session
from tests.support.sample_session import MODEL as GEMINI

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def api_key() -> str:
    """The credential of the capture, which every test of this module reads (recorded once)."""
    return f"sk-test-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def capture(fake: FakeProvider, confdir: Path, tmp_path_factory: pytest.TempPathFactory, api_key: str) -> Path:
    """Two conversations in one flow file: one repaired by the proxy, one refused with the proxy's repair off."""
    tmp_path = tmp_path_factory.mktemp("capture")
    repaired, refused = tmp_path / "repaired.mitm", tmp_path / "refused.mitm"
    before = set(fake.issued)  # the fake serves the whole session
    record_session(fake, confdir, repaired, api_key, repair=True)
    record_session(fake, confdir, refused, api_key + "-other", repair=False)
    both = tmp_path / "session.mitm"
    both.write_bytes(repaired.read_bytes() + refused.read_bytes())  # flow files are a sequence of flows
    opaque = [value["reasoning_opaque"] for call, value in fake.issued.items() if call not in before]
    assert len(opaque) == 2
    (tmp_path / "opaque.json").write_text(json.dumps(opaque))
    return both


def opaque_values(capture: Path) -> list[str]:
    """The opaque values the fake issued in the capture."""
    return json.loads((capture.parent / "opaque.json").read_text())


def make_report(source: Path, out: Path, *options: str) -> str:
    done = subprocess.run(
        [str(ROOT / "scripts" / "report"), str(source), "-o", str(out), *options],
        env=scripts_env() | {"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_the_report_is_one_file_with_nothing_secret_in_it(capture: Path, tmp_path: Path, api_key: str) -> None:
    out = tmp_path / "report.html"
    said = make_report(capture, out)
    assert said.startswith(f"wrote {out}: 4 exchange(s) in 2 conversation(s)")
    page = out.read_text()
    assert api_key not in page and "sk-test-" not in page  # the credential, in no header and no cURL command
    assert not any(value in page for value in opaque_values(capture))  # opaque values only by length and hash
    # nothing that loads from anywhere: no external script, style, font or image, and a policy that forbids it
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", page)
    assert "@import" not in page and "url(" not in page
    assert "default-src 'none'" in page


@pytest.mark.slow
def test_a_har_file_of_the_capture_makes_the_same_report(capture: Path, tmp_path: Path, confdir: Path) -> None:
    """mitmproxy's own HAR export of the flow file (what a browser's devtools save, too) reads the same."""
    har = tmp_path / "session.har"
    converted = MitmdumpProcess("-n", "-r", str(capture), "--set", f"hardump={har}", confdir=confdir, addon=False)
    converted.command = [c for c in converted.command if c not in ("--listen-host", "127.0.0.1", "--listen-port", "0")]
    subprocess.run(converted.command, cwd=ROOT, capture_output=True, timeout=120, check=True)
    said = make_report(har, tmp_path / "har.html")
    assert said.startswith(f"wrote {tmp_path / 'har.html'}: 4 exchange(s) in 2 conversation(s)")
    page = (tmp_path / "har.html").read_text()
    assert ANSWER in page and "copilot_invalid_request_body" in page


@pytest.mark.slow
def test_include_opaque_writes_the_values_in_full(capture: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    make_report(capture, out, "--include-opaque")
    page = out.read_text()
    assert all(value in page for value in opaque_values(capture))


@pytest.mark.slow
@requires_browser
def test_the_report_opens_offline_and_shows_repairs_answers_and_diagnoses(
    capture: Path, tmp_path: Path, api_key: str
) -> None:
    out = tmp_path / "report.html"
    make_report(capture, out)
    with open_page(out) as page:
        page.wait_for("body[data-ready]")
        text = page.text()
        assert "4 exchange(s) in 2 conversation(s) · 1 repaired · 1 the proxy would repair · 1 failed" in text
        assert "Conversation 1" in text and "Conversation 2" in text and GEMINI in text

        def open_turn(number: int) -> str:
            page.click(f"#turn-{number} > summary")
            return page.wait_for(f"#turn-{number} .body").text

        repaired = open_turn(2)
        # the proxy's repair: what it restored, marked against what the client sent
        assert "What the proxy sent (against what the client sent: 2 restored" in repaired
        assert "The proxy did:\ncontent [] -> null on messages[1]" in repaired, repaired
        assert "RESTORED reasoning_opaque of call_" in repaired  # the mark's label is upper case
        assert "the client dropped 2 value(s)" in repaired  # since turn 1, whose answer carried them
        assert ANSWER in repaired and "streamed" in repaired
        first = open_turn(1)  # turn 1's answer: the tool call and its reasoning, assembled from the stream
        assert "tool call list_directory" in first and "reasoning (reasoning_text)" in first
        assert "characters, sha256" in first  # the opaque value, by length and hash

        failed = open_turn(4)  # repair off: the provider's 400, diagnosed, the message it points at outlined
        assert "Error 400 and its diagnosis" in failed and "The proxy would have:" in failed
        # the live diagnosis's advice, in the diagnosis itself and not only in the comment
        assert "what to do\nrepair is off (llm_repair=false)" in failed and "turn repair on" in failed
        # the flow's comment, the diagnosis in one long line, wraps within the page
        comment = page.wait_for("#turn-4 pre.comment")
        assert page.driver.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", comment)
        assert page.driver.find_elements(By.CSS_SELECTOR, "#turn-4 .msg.culprit")

        # copy as cURL: the request as sent, the credential left to the shell
        page.click("#turn-2 .copy-curl")
        curl = page.wait_for("#turn-2 textarea.curl").get_attribute("value")
        assert curl.startswith("curl 'http://") and '"$API_KEY"' in curl and api_key not in curl
        assert '"reasoning_opaque":"[opaque: 128 characters, sha256 ' in curl  # stood in for, by default

        # filters and search
        page.click("#failed")
        page.wait_for_text("#shown", "1 of 4 turns")
        page.click("#failed")
        search = page.driver.find_element(By.ID, "search")
        search.send_keys("holds two files")
        page.wait_for_text("#shown", "1 of 4 turns")
        screenshot = page.screenshot(tmp_path / "report.png")
        assert not looks_blank(screenshot)
        assert page.outgoing_requests() == []
        assert page.console_errors() == []
