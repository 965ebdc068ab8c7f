"""The README's install recipes, each in an environment of its own, as a mitmproxy 12 user would follow them.

Each ends in a repaired turn through that environment's own `mitmdump -s addon/main.py`. They need the package
registry and a few minutes, so they run with `--install-recipes` (as .ci/run does), on Python 3.12 or newer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.support.fake_provider import FakeProvider
from tests.support.proxy import ROOT, MitmdumpProcess
from tests.support.turns import client, first_turn, history_as_sent, second_turn

pytestmark = [pytest.mark.install, pytest.mark.e2e]
MODEL = "gemini-3-pro-preview"
ANSWER = "The directory holds two files."
MITMPROXY = "mitmproxy<13"  # the README's spelling: the newest 12.x this Python can install
INSTALL_SECONDS = 900


@pytest.fixture(scope="module", autouse=True)
def python_for_mitmproxy_12() -> None:
    if sys.version_info < (3, 12):
        pytest.fail(f"the install recipes need Python 3.12 or newer (mitmproxy 12), not {sys.version.split()[0]}")


def run(*command: str | Path, env: dict[str, str] | None = None) -> str:
    """What the command printed, stdout and stderr; the test fails with it when the command does."""
    result = subprocess.run(
        [str(c) for c in command],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=INSTALL_SECONDS,
    )
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} exited with {result.returncode}:\n{result.stdout}")
    return result.stdout


def mitmproxy_version(python: Path) -> str:
    return run(python, "-c", "from mitmproxy.version import VERSION; print(VERSION)").strip()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project as a user has it: installing from the real checkout would leave build files in it."""
    copy = tmp_path_factory.mktemp("clone") / "llm-reasoning-proxy"
    ignore = shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.egg-info", "build", ".*_cache", ".hypothesis")
    shutil.copytree(ROOT, copy, ignore=ignore)
    return copy


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pipx and uv, from the registry, in an environment of their own."""
    venv = tmp_path_factory.mktemp("tools") / "venv"
    run(sys.executable, "-m", "venv", venv)
    run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "pipx", "uv")
    return venv / "bin"


@pytest.fixture
def fake_upstream() -> Iterator[FakeProvider]:
    provider = FakeProvider().start()
    yield provider
    provider.stop()


def repairs_a_turn(mitmdump: Path, fake: FakeProvider, confdir: Path, checkout: Path, api_key: str) -> str:
    """A conversation whose client drops the reasoning: refused by the provider as sent, answered through this
    mitmdump with the addon. Returns mitmdump's output."""
    options = ["--mode", f"reverse:{fake.url}", "--set", "llm_cache=memory", "--set", "llm_log="]
    script = checkout / "addon" / "main.py"
    # Deprecation warnings shown (Python hides them by default): none may come from the addon's code.
    warnings = {"PYTHONWARNINGS": "default::DeprecationWarning,default::PendingDeprecationWarning"}
    # pipx writes `#!.../python -E` into its scripts, which ignores PYTHONUNBUFFERED: mitmdump's lines would wait
    # in a pipe buffer. So the environment's own Python runs its mitmdump script, unbuffered.
    python = mitmdump.read_text().splitlines()[0].removeprefix("#!").split()[0]
    with MitmdumpProcess(
        *options, confdir=confdir, mitmdump=mitmdump, script=script, env=warnings, python=Path(python)
    ) as proxy:
        turn = first_turn(client(proxy.url, api_key), MODEL, stream=True)
        messages = history_as_sent(turn, drop=("reasoning_opaque", "reasoning_text"), content=[])
        with pytest.raises(openai.BadRequestError):
            second_turn(client(fake.url, api_key), MODEL, messages, stream=True)
        assert second_turn(client(proxy.url, api_key), MODEL, messages, stream=True) == ANSWER
        proxy.wait_for_line("llm repaired")
    ours = [line for line in proxy.lines if "Warning" in line and str(checkout / "addon") in line]
    assert ours == [], proxy.output
    return proxy.output


def test_pip_install_into_a_mitmproxy_12_environment_keeps_its_mitmproxy(
    tmp_path: Path, checkout: Path, fake_upstream: FakeProvider, confdir: Path, api_key: str
) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv)
    python, mitmdump = venv / "bin" / "python", venv / "bin" / "mitmdump"
    run(python, "-m", "pip", "install", "--quiet", MITMPROXY)
    installed = mitmproxy_version(python)
    assert installed.startswith("12."), installed

    # Before the project is installed, mitmproxy cannot import what the addon needs (as with its standalone
    # binaries, which cannot import extra packages at all): one line says so.
    refused = MitmdumpProcess(confdir=confdir, mitmdump=mitmdump, script=checkout / "addon" / "main.py")
    with pytest.raises(RuntimeError, match="exited with 1") as failure:
        refused.start()
    assert "llm-reasoning-proxy cannot import" in str(failure.value)

    run(python, "-m", "pip", "install", "--quiet", checkout)
    assert mitmproxy_version(python) == installed  # never replaced by another mitmproxy
    run(python, "-m", "pip", "check")
    output = repairs_a_turn(mitmdump, fake_upstream, confdir, checkout, api_key)
    assert f"on mitmproxy {installed}, Python {sys.version.split()[0]}" in output
    # the report's page (style and script) is installed with the package, not only found in a checkout
    page = tmp_path / "report.html"
    run(python, "-m", "llm_reasoning_proxy.offline.cli", "report", checkout / "flows" / "opencode-deepseek-multistep",
        "-o", page)  # fmt: skip
    assert "Copy as cURL" in page.read_text() and "section.conv" in page.read_text()


def test_pipx_install_mitmproxy_then_inject_the_project(
    tmp_path: Path, tools: Path, checkout: Path, fake_upstream: FakeProvider, confdir: Path, api_key: str
) -> None:
    env = {"PIPX_HOME": str(tmp_path / "pipx"), "PIPX_BIN_DIR": str(tmp_path / "bin")}
    run(tools / "pipx", "install", MITMPROXY, env=env)
    run(tools / "pipx", "inject", "mitmproxy", checkout, env=env)
    output = repairs_a_turn(tmp_path / "bin" / "mitmdump", fake_upstream, confdir, checkout, api_key)
    assert "on mitmproxy 12." in output


def test_uv_tool_install_mitmproxy_with_the_project(
    tmp_path: Path, tools: Path, checkout: Path, fake_upstream: FakeProvider, confdir: Path, api_key: str
) -> None:
    env = {
        "UV_TOOL_DIR": str(tmp_path / "uv-tools"),
        "UV_TOOL_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON_DOWNLOADS": "never",  # the Python running these tests, not one uv would fetch
    }
    run(tools / "uv", "tool", "install", "--python", sys.executable, MITMPROXY, "--with", checkout, env=env)
    output = repairs_a_turn(tmp_path / "bin" / "mitmdump", fake_upstream, confdir, checkout, api_key)
    assert "on mitmproxy 12." in output


def test_scripts_make_a_half_made_venv_again_and_install_the_newest_mitmproxy(tmp_path: Path) -> None:
    """A first run that failed half way (Debian without python3-venv makes a venv without pip) is repaired by
    the scripts, not by hand; the Python they are given gets the newest mitmproxy it allows."""
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv)
    (venv / ".made-by-llm-reasoning-proxy").touch()  # as the scripts mark a venv they made
    output = run(ROOT / "scripts" / "run", "--version", env={"LLM_PROXY_VENV": str(venv), "PYTHON": sys.executable})
    assert "is incomplete: making it again" in output
    assert f"Python:    {sys.version.split()[0]}" in output and "Mitmproxy: 12." in output, output
    assert mitmproxy_version(venv / "bin" / "python").startswith("12.")
