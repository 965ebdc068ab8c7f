"""scripts/_venv.sh, which every script sources: which Python makes .venv, found as a newcomer's machine has them (pyenv
shims that run only the version pyenv selects, its own copies that run anywhere), and what it says when .venv stays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.proxy import ROOT

SHIM = '#!/bin/sh\necho "pyenv: $(basename "$0"): command not found" >&2\nexit 127\n'


def python_named(path: Path, version: str) -> Path:
    """A Python that says it is `version` when asked (-V) and is the Python running the tests otherwise."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\n[ "$1" = -V ] && {{ echo "Python {version}"; exit 0; }}\nexec {sys.executable} "$@"\n')
    path.chmod(0o755)
    return path


@pytest.fixture
def machine(tmp_path: Path) -> dict[str, str]:
    """pyenv with 3.11 selected and 3.12 and 3.13 installed: the shims of 3.12 and 3.13 refuse to run."""
    shims, pyenv_root = tmp_path / "shims", tmp_path / "pyenv"
    shims.mkdir()
    for name in ("python3.13", "python3.12", "python3.10"):
        (shims / name).write_text(SHIM)
        (shims / name).chmod(0o755)
    python_named(shims / "python3.11", "3.11.7")
    python_named(pyenv_root / "versions" / "3.12.1" / "bin" / "python3.12", "3.12.1")
    python_named(pyenv_root / "versions" / "3.13.0" / "bin" / "python3.13", "3.13.0")
    (shims / "pyenv").write_text(f'#!/bin/sh\n[ "$1" = root ] && echo {pyenv_root}\n')
    (shims / "pyenv").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHON", "LLM_PROXY_VENV")}
    return env | {"PATH": f"{shims}:/usr/bin:/bin", "LLM_PROXY_VENV": str(tmp_path / "venv")}


def sourced(function: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    script = f'source "{ROOT}/scripts/_venv.sh"; {function}'
    return subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30)


def test_the_newest_supported_python_is_found_through_pyenv(machine: dict[str, str], tmp_path: Path) -> None:
    found = sourced("find_python", machine)
    assert found.stdout.strip() == str(tmp_path / "pyenv" / "versions" / "3.13.0" / "bin" / "python3.13")


def test_python_names_a_version_pyenv_has_but_does_not_select(machine: dict[str, str], tmp_path: Path) -> None:
    found = sourced("find_python", machine | {"PYTHON": "python3.12"})
    assert found.stdout.strip() == str(tmp_path / "pyenv" / "versions" / "3.12.1" / "bin" / "python3.12")


def test_a_python_that_does_not_run_is_named_with_what_it_said(machine: dict[str, str]) -> None:
    found = sourced("find_python", machine | {"PYTHON": "python3.10"})
    assert found.returncode == 1 and found.stdout == ""
    assert "PYTHON=python3.10 is not a Python 3.10 or newer that runs (pyenv: python3.10: command not found)" in (
        found.stderr
    )
    assert "python3-venv" not in found.stderr  # nothing to install: the venv module was never the trouble


def test_an_existing_venv_is_kept_and_says_so_when_python_asks_for_another(
    machine: dict[str, str], tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    python_named(venv / "bin" / "python", "3.11.7")
    kept = sourced("make_venv", machine | {"PYTHON": "python3.13"})
    assert kept.returncode == 0, kept.stderr
    assert kept.stderr == (
        f"keeping {venv} (Python 3.11.7), not PYTHON=python3.13 (Python 3.13.0): remove {venv} to make it again"
        " with that, or set LLM_PROXY_VENV to another folder\n"
    )
    assert sourced("make_venv", machine | {"PYTHON": "python3.11"}).stderr == ""  # the one it has: nothing to say
    assert sourced("make_venv", machine).stderr == ""  # none asked for
