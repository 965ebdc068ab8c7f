"""The headless browser the HTML report's tests use (tests/support/browser.py) sees what a page draws, the requests
it tries, and its errors; and each of those checks can fail."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import looks_blank, open_page, requires_browser

pytestmark = requires_browser


def write_page(directory: Path, body: str) -> Path:
    path = directory / "page.html"
    path.write_text(f"<!doctype html><html><head><meta charset=utf-8></head><body>{body}</body></html>")
    return path


@pytest.fixture
def loopback_server() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback: its URL, and the paths it was asked for."""
    asked: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()
    server.server_close()


@pytest.mark.slow
def test_a_page_that_draws_with_a_script_is_read_offline(tmp_path: Path) -> None:
    page_file = write_page(
        tmp_path,
        "<main id=report></main><script>"
        "const p = document.createElement('p'); p.id = 'done'; p.textContent = 'rendered by the script';"
        "document.getElementById('report').append(p);"
        "</script>",
    )
    with open_page(page_file) as page:
        page.wait_for("#done")
        assert "rendered by the script" in page.text()
        assert page.outgoing_requests() == []
        assert not looks_blank(page.screenshot(tmp_path / "page.png"))
        assert page.console_errors() == []
    assert (tmp_path / "page.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.slow
def test_requests_to_the_network_are_recorded(tmp_path: Path) -> None:
    page_file = write_page(
        tmp_path,
        '<img src="http://198.51.100.1/x.png">'
        "<script>fetch('https://example.invalid/').catch(() => document.body.append(Object.assign("
        "document.createElement('p'), {id: 'fetched'})));</script>",
    )
    with open_page(page_file) as page:
        page.wait_for("#fetched")
        assert sorted(page.outgoing_requests()) == ["http://198.51.100.1/x.png", "https://example.invalid/"]


@pytest.mark.slow
def test_the_network_is_off_even_to_loopback(tmp_path: Path, loopback_server: tuple[str, list[str]]) -> None:
    url, asked = loopback_server
    page_file = write_page(
        tmp_path,
        f"<script>fetch('{url}/asked').then(() => 'reached', () => 'refused').then(outcome => "
        "document.body.append(Object.assign(document.createElement('p'), {id: outcome})));</script>",
    )
    with open_page(page_file) as page:
        page.wait_for("#refused")
        assert page.outgoing_requests() == [f"{url}/asked"]
        assert page.driver.execute_script("return navigator.onLine") is False
    assert asked == []


@pytest.mark.slow
def test_a_blank_page_looks_blank_and_a_drawn_one_does_not(tmp_path: Path) -> None:
    with open_page(write_page(tmp_path, "")) as page:
        assert looks_blank(page.screenshot(tmp_path / "blank.png"))
    with open_page(write_page(tmp_path, "<p>a few words</p>")) as page:
        assert not looks_blank(page.screenshot(tmp_path / "drawn.png"))


@pytest.mark.slow
def test_a_script_error_is_reported(tmp_path: Path) -> None:
    page_file = write_page(tmp_path, "<script>document.title = 'ran'; notDefinedAnywhere();</script>")
    with open_page(page_file) as page:
        assert page.driver.title == "ran"
        errors = page.console_errors()
    assert len(errors) == 1 and "notDefinedAnywhere is not defined" in errors[0], errors
