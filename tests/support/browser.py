"""A real headless browser for the tests: Debian's chromium, driven by selenium through chromium-driver (scripts/test
installs both). A page opens from a local file with the network off, and every request it tries is recorded."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image, ImageChops
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the tests run as root in containers, where chromium's sandbox cannot start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # a container's /dev/shm is often 64 MB, too small for a renderer
    "--window-size=1400,1000",  # in headless=new the page itself gets 1400x857 of it
)
# Schemes that never reach the network; chrome: covers the browser's own start page, which loads before ours.
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome:")
WAIT_SECONDS = 30

# Selenium Manager would download a driver or a browser when it had to find one; the paths given below keep it
# from running at all, and this keeps it offline should it ever run.
os.environ.setdefault("SE_OFFLINE", "true")


def browser_available() -> bool:
    return os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)


BROWSER_MISSING = (
    f"needs Debian's chromium and chromium-driver ({CHROMIUM}, {CHROMEDRIVER}): scripts/test installs them, "
    "or run: apt-get install --no-install-recommends chromium chromium-driver"
)
requires_browser = pytest.mark.skipif(not browser_available(), reason=BROWSER_MISSING)


class Page:
    """One page open in headless chromium; `driver` is the selenium WebDriver for anything not wrapped here."""

    def __init__(self, driver: webdriver.Chrome) -> None:
        self.driver = driver
        self._requests: list[str] = []
        self._console: list[dict] = []

    def _drain_logs(self) -> None:
        # Reading a log empties it in chromedriver, so every read is kept here.
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"] == "Network.requestWillBeSent":
                self._requests.append(message["params"]["request"]["url"])
        self._console.extend(self.driver.get_log("browser"))

    def _forget_logs(self) -> None:
        self._drain_logs()
        self._requests.clear()
        self._console.clear()

    def outgoing_requests(self) -> list[str]:
        """The URLs the page asked for so far that would have left the machine (each once, in order)."""
        self._drain_logs()
        return list(dict.fromkeys(url for url in self._requests if not url.startswith(LOCAL_SCHEMES)))

    def console_errors(self) -> list[str]:
        """The browser log's errors so far: uncaught exceptions, console.error calls, failed loads."""
        self._drain_logs()
        return [entry["message"] for entry in self._console if entry["level"] == "SEVERE"]

    def wait_for(self, css_selector: str, timeout: float = WAIT_SECONDS) -> WebElement:
        """The first element matching css_selector, once the page has one."""
        return WebDriverWait(self.driver, timeout).until(
            expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css_selector)),
            f"no element matches {css_selector!r} after {timeout} s",
        )

    def click(self, css_selector: str) -> None:
        """Clicks the element as a person would, once it is in the middle of the window (not under a sticky
        header)."""
        element = self.wait_for(css_selector)
        self.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", element)
        element.click()

    def wait_for_text(self, css_selector: str, text: str, timeout: float = WAIT_SECONDS) -> None:
        """Waits until the element matching css_selector shows `text` (a page that re-renders on input)."""
        WebDriverWait(self.driver, timeout).until(
            expected_conditions.text_to_be_present_in_element((By.CSS_SELECTOR, css_selector), text),
            f"{css_selector!r} does not show {text!r} after {timeout} s",
        )

    def text(self) -> str:
        """The body's visible text."""
        return self.driver.find_element(By.TAG_NAME, "body").text

    def screenshot(self, path: str | Path) -> bytes:
        """Saves the visible part of the page as a PNG at path; returns its bytes."""
        png = self.driver.get_screenshot_as_png()
        Path(path).write_bytes(png)
        return png


def _url(path_or_url: str | Path) -> str:
    if isinstance(path_or_url, str) and re.match(r"[a-z][a-z0-9+.-]*:", path_or_url):
        return path_or_url
    return Path(path_or_url).resolve().as_uri()


@contextmanager
def open_page(path_or_url: str | Path, *, offline: bool = True) -> Iterator[Page]:
    """Opens a local file (a path or a file: URL) in a new headless chromium with its network off; `offline=False`
    for a page served on loopback (mitmweb)."""
    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    try:
        driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
        try:
            page = Page(driver)
            page._forget_logs()
            # Offline in the page, not only unroutable: a request fails at once, even to loopback.
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd(
                "Network.emulateNetworkConditions",
                {"offline": offline, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1},
            )
            driver.get(_url(path_or_url))
            yield page
        finally:
            driver.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def looks_blank(png: bytes) -> bool:
    """True when every pixel of the PNG is within a few levels of its most common colour: nothing was drawn."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    _, background = max(image.getcolors(maxcolors=image.width * image.height))
    difference = ImageChops.difference(image, Image.new("RGB", image.size, background))
    return difference.point(lambda level: 255 if level > 8 else 0).getbbox() is None
