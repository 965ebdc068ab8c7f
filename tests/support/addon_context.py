"""mitmproxy's test context for addons, undone at its end on both lines of mitmproxy."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from mitmproxy.test import taddons


@contextlib.contextmanager
def addon_context(*addons: object) -> Iterator[taddons.context]:
    """`taddons.context(*addons)`, whose master's log handler leaves the root logger with it: mitmproxy 12 closes
    the event loop the context made, and the handler would send every later log record to that closed loop."""
    with taddons.context(*addons) as tctx:
        try:
            yield tctx
        finally:
            root = logging.getLogger()
            for handler in [h for h in root.handlers if getattr(h, "master", None) is tctx.master]:
                root.removeHandler(handler)
