"""What differs between the two lines of mitmproxy the addon runs on.

mitmproxy 11.0.2 is the newest release for Python 3.10 and 3.11; 11.1 and 12.x need Python 3.12 or
newer. Everything the addon does differently by line is here, so that the rest of the code calls one
function whatever mitmproxy is underneath.
"""

from __future__ import annotations

import gzip
import platform
import re
import zlib
from collections.abc import Callable

from mitmproxy import ctx, http
from mitmproxy.version import VERSION as MITMPROXY_VERSION_TEXT


def _version_tuple(text: str) -> tuple[int, ...]:
    """(12, 2, 3) from "12.2.3", (12, 0, 0) from "12.0.0.dev0": only the release numbers count."""
    numbers = re.match(r"\d+(?:\.\d+)*", text)
    parts = tuple(int(p) for p in numbers.group(0).split(".")) if numbers else ()
    return (parts + (0, 0, 0))[:3]


MITMPROXY_VERSION = _version_tuple(MITMPROXY_VERSION_TEXT)


def runtime() -> str:
    """What the addon runs on, for the startup line and the event log."""
    return f"mitmproxy {MITMPROXY_VERSION_TEXT}, Python {platform.python_version()}"


def mitmproxy_running() -> bool:
    """Whether mitmproxy has finished starting up (a configure() now comes from a changed option).

    mitmproxy has no public flag for this; its script loader keeps one (11.0.2 and 12.x alike). When it
    cannot be read, the answer is "running", under which an option error is reported the ordinary way.
    """
    loader = ctx.master.addons.get("scriptloader") if getattr(ctx, "master", None) else None
    return bool(getattr(loader, "is_running", True))


def mitmproxy_console() -> bool:
    """Whether mitmproxy's console UI owns the terminal (it must restore it before the process ends)."""
    return ctx.master.addons.get("consoleaddon") is not None


def streamed_bodies_stored(options: object) -> bool:
    """Whether mitmproxy keeps streamed bodies itself: `store_streamed_bodies`, new in 12.0.

    It keeps the bytes that were forwarded, which is what `llm_keep_bodies` re-attaches on 11.x; doing
    both would hold every streamed answer twice, and mitmproxy's copy replaces ours at the end anyway.
    """
    return bool(getattr(options, "store_streamed_bodies", False))


def _fast_encoders() -> dict[str, Callable[[bytes], bytes]]:
    import brotli  # mitmproxy's own dependency, as it encodes with it
    import zstandard

    return {
        "gzip": lambda data: gzip.compress(data, compresslevel=1, mtime=0),
        "deflate": lambda data: zlib.compress(data, 1),
        "br": lambda data: brotli.compress(data, quality=0),
        "zstd": lambda data: zstandard.ZstdCompressor(level=1).compress(data),
    }


# 12.2.2 made mitmproxy encode at the fastest level of each algorithm; before it, a repaired 1 MB body
# sent on with `content-encoding: br` took seconds at brotli's default quality 11.
_ENCODES_FAST = MITMPROXY_VERSION >= (12, 2, 2)


def set_content(message: http.Message, content: bytes) -> None:
    """`message.set_content(content)`, encoded at the fastest level on every line of mitmproxy."""
    name = (message.headers.get("content-encoding") or "").lower()  # as mitmproxy reads it: " gzip" is no gzip
    encoder = None if _ENCODES_FAST or not name else _fast_encoders().get(name)
    if encoder is None:  # identity, several encodings, or what mitmproxy decides for a name it does not know
        message.set_content(content)
        return
    message.raw_content = encoder(content)
    if "transfer-encoding" not in message.headers:  # as set_content() does: a length only without chunking
        message.headers["content-length"] = str(len(message.raw_content))
