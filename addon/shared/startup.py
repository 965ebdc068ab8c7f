"""How the addon stops when it cannot start: one line naming the cause, and exit status 1.

mitmproxy prints an error raised while a script loads as a traceback, and only after it has said that it
is listening; its own option errors are one line before anything starts. Ours look like its own. This
module needs nothing but mitmproxy, so that it can also say which of our dependencies is missing.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from mitmproxy import exceptions

from . import compat


class AddonNotLoaded(RuntimeError):
    """Why the addon cannot load, raised once mitmproxy runs: it logs this one and goes on (an OptionsError
    raised while a script loads would pass through mitmproxy and end the script's reload watcher)."""


def refuse(message: str, *, loading: bool = False) -> NoReturn:
    """At startup: `mitmdump: MESSAGE` on stderr and exit 1. Once running (an option changed in mitmweb or the
    console, a script reloaded) or under the console UI (which must restore the terminal first): an OptionsError,
    which mitmproxy reports and, for an option, undoes; or, from `load()`, an AddonNotLoaded."""
    if compat.mitmproxy_running() or compat.mitmproxy_console():
        raise AddonNotLoaded(message) if loading else exceptions.OptionsError(message)
    print(f"{os.path.basename(sys.argv[0]) or 'mitmproxy'}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def is_missing_dependency(error: ImportError) -> bool:
    """A package the addon needs is not installed (not a mistake in the addon's own imports)."""
    name = error.name or ""
    return (
        isinstance(error, ModuleNotFoundError)
        and bool(name)
        and name.split(".")[0] != (__package__ or "").split(".")[0]
    )


def missing_dependency_message(error: ImportError) -> str:
    missing = error.name or str(error)
    return (
        f"llm-reasoning-proxy cannot import {missing} in the Python that runs mitmproxy ({sys.executable}): "
        "install the project into mitmproxy's environment (pip install, pipx inject mitmproxy, or "
        "uv tool install mitmproxy --with); mitmproxy's standalone binaries cannot load extra packages"
    )


class MissingDependency:
    """Stands in for the addon when a package it needs is not installed where mitmproxy runs."""

    def __init__(self, error: ImportError) -> None:
        self.message = missing_dependency_message(error)

    def load(self, loader: object) -> None:
        # Not from the script's own code: mitmproxy 11.0.2 swallows an exit raised while a script is executed.
        refuse(self.message, loading=True)
