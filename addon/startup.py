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


def refuse(message: str) -> NoReturn:
    """At startup: `mitmdump: MESSAGE` on stderr and exit 1. Once running (an option changed in mitmweb or the
    console) or under the console UI (which must restore the terminal first): an OptionsError, which mitmproxy
    reports and, for an option, undoes."""
    if compat.mitmproxy_running() or compat.mitmproxy_console():
        raise exceptions.OptionsError(message)
    print(f"{os.path.basename(sys.argv[0]) or 'mitmproxy'}: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


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
        refuse(self.message)
