"""What differs between the two lines of mitmproxy the addon runs on.

mitmproxy 11.0.2 is the newest release for Python 3.10 and 3.11; 11.1 and 12.x need Python 3.12 or
newer. Everything the addon does differently by line is here, so that the rest of the code calls one
function whatever mitmproxy is underneath.
"""

from __future__ import annotations

import gzip
import logging
import platform
import re
import zlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from mitmproxy import contentviews, ctx, http
from mitmproxy.version import VERSION as MITMPROXY_VERSION_TEXT

from .headers import has_header

# Plain logging: this module is imported before the addon's dependencies are known to be there (startup.py), and
# what it logs is masked where it is made (`_why`).
logger = logging.getLogger(__name__)


def version_tuple(text: str) -> tuple[int, ...]:
    """(12, 2, 3) from "12.2.3", (12, 0, 0) from "12.0.0.dev0": only the release numbers count."""
    numbers = re.match(r"\d+(?:\.\d+)*", text)
    parts = tuple(int(p) for p in numbers.group(0).split(".")) if numbers else ()
    return (parts + (0, 0, 0))[:3]


MITMPROXY_VERSION = version_tuple(MITMPROXY_VERSION_TEXT)


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
    if not has_header(message.headers, b"content-encoding"):
        _set_plain_content(message, content)
        return
    name = (message.headers.get("content-encoding") or "").lower()  # as mitmproxy reads it: " gzip" is no gzip
    encoder = None if _ENCODES_FAST or not name else _fast_encoders().get(name)
    if encoder is None:  # identity, several encodings, or what mitmproxy decides for a name it does not know
        message.set_content(content)
        return
    message.raw_content = encoder(content)
    if "transfer-encoding" not in message.headers:  # as set_content() does: a length only without chunking
        message.headers["content-length"] = str(len(message.raw_content))


def _set_plain_content(message: http.Message, content: bytes) -> None:
    """What `message.set_content(content)` does to a message that names no content-encoding (its body as it is, and
    the length of it unless the message is chunked), over the stored header fields: a repaired 1 MB turn went through
    mitmproxy's header layers three times for it."""
    message.data.content = content
    if has_header(message.headers, b"transfer-encoding"):
        return
    length = str(len(content)).encode()
    kept: list[tuple[bytes, bytes]] = []
    placed = False
    # As headers["content-length"] = … sets it: in the first one's place, the others gone.
    for name, value in message.headers.fields:
        if name.lower() != b"content-length":
            kept.append((name, value))
        elif not placed:
            kept.append((name, length))
            placed = True
    if not placed:
        kept.append((b"content-length", length))
    message.headers.fields = tuple(kept)


# --- content views -----------------------------------------------------------------------------------------
#
# mitmproxy 11 has `contentviews.View`: `__call__` gives (description, lines of (style, text) pieces), and the
# views live in a list that refuses a second view of a name ("Duplicate view"). mitmproxy 12 has
# `contentviews.Contentview`: `prettify` gives plain text, and the views live in `contentviews.registry`, which
# replaces a view of the same name and has no way to take one out (`contentviews.remove` does nothing).


class ViewText(Protocol):
    """What a content view shows: a title and lines, each a list of (style, text) pieces."""

    title: str
    lines: list[list[tuple[str, str]]]


# (data, flow, message) -> the view, or None when the message is not the view's to show. `data` is the body as
# mitmproxy decoded it, `message` the flow's request or response; neither is called outside HTTP (for a
# WebSocket or TCP message, say).
ViewRender = Callable[[bytes, http.HTTPFlow, http.Message], ViewText | None]
# (data, flow, message) -> whether `render` would show the message; called for every message mitmproxy shows,
# so it must be cheap.
ViewClaims = Callable[[bytes, http.HTTPFlow, http.Message], bool]

CLAIMED_PRIORITY = 2.0  # above mitmproxy's own views (JSON is 1, Raw 0.1): "auto" picks the view
FALLBACK_CHARS = 256 * 1024  # of the body, shown as text when the view cannot show the message
_NEW_CONTENTVIEWS = hasattr(contentviews, "Contentview")  # mitmproxy 12.0 and newer
_OWNER = "llm-reasoning-proxy"  # on the views add_contentview makes, whichever load of this module made them


def _http_parts(flow: object, message: object) -> tuple[http.HTTPFlow | None, http.Message | None]:
    flow = flow if isinstance(flow, http.HTTPFlow) else None
    message = message if flow is not None and isinstance(message, http.Message) else None
    return flow, message


class _Guarded:
    """A view's render and claims behind mitmproxy: whatever they raise, mitmproxy's display keeps working."""

    owner = _OWNER

    def __init__(self, name: str, render: ViewRender, claims: ViewClaims) -> None:
        self.name = name
        self._render = render
        self._claims = claims

    def claims(self, data: bytes, flow: object, message: object) -> bool:
        flow, message = _http_parts(flow, message)
        if flow is None or message is None or not data:
            return False
        try:
            return bool(self._claims(data, flow, message))
        except Exception as e:  # an error here would break "auto" for every flow on mitmproxy 11
            logger.warning("%s content view: deciding whether to show flow %s failed: %s", self.name, flow.id, _why(e))
            return False

    def show(self, data: bytes, flow: object, message: object) -> tuple[str, list[list[tuple[str, str]]]]:
        """(title, lines): the view, or a title that says why not over the body as text."""
        flow, message = _http_parts(flow, message)
        try:
            shown = self._render(data, flow, message) if flow is not None and message is not None else None
        except Exception as e:
            why = _why(e)
            flow_id = flow.id if flow is not None else "-"
            logger.warning("%s content view failed on flow %s: %s", self.name, flow_id, why)
            return _fallback(data, f"{self.name} view failed: {why}")
        if shown is None:
            return _fallback(data, f"not shown in the {self.name} view: not LLM traffic")
        return shown.title, shown.lines


def _why(error: Exception) -> str:
    from .redact import redact_text

    return redact_text(f"{type(error).__name__}: {error}")


def _fallback(data: bytes, reason: str) -> tuple[str, list[list[tuple[str, str]]]]:
    """The reason as the title, and the body as text."""
    text = data[: FALLBACK_CHARS * 4].decode("utf-8", "replace")[:FALLBACK_CHARS]
    return reason, [[("text", line)] for line in text.splitlines()]


if _NEW_CONTENTVIEWS:

    class _Contentview(contentviews.Contentview):
        def __init__(self, guarded: _Guarded) -> None:
            self.guarded = guarded

        @property
        def name(self) -> str:
            return self.guarded.name

        @property
        def syntax_highlight(self) -> Any:
            return "none"

        def prettify(self, data: bytes, metadata: Any) -> str:
            # mitmproxy 12 shows no description: the title is the first line.
            title, lines = self.guarded.show(data, metadata.flow, metadata.http_message)
            return "\n".join([title, *("".join(text for _, text in line) for line in lines)])

        def render_priority(self, data: bytes, metadata: Any) -> float:
            return CLAIMED_PRIORITY if self.guarded.claims(data, metadata.flow, metadata.http_message) else 0.0

    def add_contentview(name: str, render: ViewRender, claims: ViewClaims) -> object:
        """Registers a content view named `name` in mitmproxy (its console, mitmweb and mitmdump's output);
        the handle is for remove_contentview. A view of the same name is replaced."""
        view = _Contentview(_Guarded(name, render, claims))
        contentviews.add(view)
        return view

    def remove_contentview(handle: object) -> None:
        """Takes out a view add_contentview registered (in an addon's `done`: a reloaded addon adds it anew).

        mitmproxy 12 has no public way to: the registry's own mapping is changed, only while it still holds
        this very view, and the registry's change signal tells the console to draw again."""
        registry = contentviews.registry
        views = getattr(registry, "_by_name", None)
        if handle is None or not isinstance(views, dict):
            return
        key = str(getattr(handle, "name", "")).lower()
        if views.get(key) is handle:
            del views[key]
            registry.on_change.send(handle)

else:

    class _View(contentviews.View):
        name = ""  # each instance has its own

        def __init__(self, guarded: _Guarded) -> None:
            self.guarded = guarded
            self.name = guarded.name

        def __call__(
            self, data: bytes, *, flow: Any = None, http_message: Any = None, **unknown: Any
        ) -> tuple[str, Iterator[list[tuple[str, str]]]]:
            title, lines = self.guarded.show(data, flow, http_message)
            return title, iter(lines)

        def render_priority(self, data: bytes, *, flow: Any = None, http_message: Any = None, **unknown: Any) -> float:
            return CLAIMED_PRIORITY if self.guarded.claims(data, flow, http_message) else 0.0

    def add_contentview(name: str, render: ViewRender, claims: ViewClaims) -> object:
        """Registers a content view named `name` in mitmproxy (its console, mitmweb and mitmdump's output);
        the handle is for remove_contentview. A view of the same name that this function added before (and
        that was never removed) is replaced; one of another addon is left, and this one not added (None)."""
        stale = contentviews.get(name)
        if stale is not None and getattr(getattr(stale, "guarded", None), "owner", None) == _OWNER:
            contentviews.remove(stale)  # left by a load of the addon whose `done` did not run
        elif stale is not None:
            logger.warning("a content view named %s is there already: the %s view is not added", stale.name, name)
            return None
        view = _View(_Guarded(name, render, claims))
        contentviews.add(view)
        return view

    def remove_contentview(handle: object) -> None:
        """Takes out a view add_contentview registered (in an addon's `done`: else a reloaded addon's
        add_contentview finds it there)."""
        if handle is not None and handle in contentviews.views:
            contentviews.remove(handle)
