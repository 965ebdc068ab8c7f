"""The wire formats the proxy understands, each in a folder of its own: how a body is shaped, read, repaired,
checked and shown. What they share sits beside them (the WireFormat interface, the conversation model, the answer
assembly base, SSE and AWS event-stream framing, content-encodings)."""

from __future__ import annotations

import functools
from importlib import import_module
from typing import Any

from .assembly import Transcriber
from .base import CacheView, CallHit, RepairContext, ResponseReader, WireFormat


def _registered(*folders: str) -> tuple[Any, ...]:
    return tuple(import_module(f".{folder}", __name__) for folder in folders)


# One line per wire format, in the order a request is offered to them: a new format is its folder and its line.
_FOLDERS = _registered(
    "chat_completions",
    "responses",
    "anthropic",
    "gemini",
    "bedrock_converse",
)
FORMATS: tuple[WireFormat, ...] = tuple(folder.FORMAT for folder in _FOLDERS)
TRANSCRIBERS: dict[str, Transcriber] = {folder.FORMAT.name: folder.TRANSCRIBER for folder in _FOLDERS}
_BY_NAME = {f.name: f for f in FORMATS}


# A client calls the same few paths all session: the formats each routes to are remembered, for this many paths of
# up to this many characters (a path is the client's to choose, so it may not grow the memory without bound): under
# 1 MiB for both memos, the paths and their answers as Python holds them.
_REMEMBERED_PATHS = 256
_REMEMBERED_PATH_CHARS = 512


def routes(path: str) -> tuple[WireFormat, ...]:
    """The formats whose route `path` is."""
    return _remembered_routes(path) if len(path) <= _REMEMBERED_PATH_CHARS else _routes(path)


def routes_raw(path: bytes) -> tuple[WireFormat, ...]:
    """The formats whose route a request's path is, as it came on the wire (mitmproxy's `request.data.path`)."""
    return _remembered_raw_routes(path) if len(path) <= _REMEMBERED_PATH_CHARS else _raw_routes(path)


def _raw_routes(path: bytes) -> tuple[WireFormat, ...]:
    return _routes(path.decode("utf-8", "surrogateescape"))  # as mitmproxy's request.path reads it


def _routes(path: str) -> tuple[WireFormat, ...]:
    return tuple(wire_format for wire_format in FORMATS if wire_format.route(path))


_remembered_routes = functools.lru_cache(maxsize=_REMEMBERED_PATHS)(_routes)
_remembered_raw_routes = functools.lru_cache(maxsize=_REMEMBERED_PATHS)(_raw_routes)


def routed(method: str, path: str) -> bool:
    """Whether a request may be LLM traffic, judged from its method and path alone: nothing else is decoded."""
    return method == "POST" and bool(routes(path))


def claim(method: str, path: str, body: bytes) -> WireFormat | None:
    """The wire format that owns a request, or None for traffic to leave alone."""
    if method != "POST":
        return None
    return next((wire_format for wire_format in routes(path) if wire_format.claims(method, path, body)), None)


def by_name(name: str) -> WireFormat:
    return _BY_NAME[name]


__all__ = [
    "FORMATS",
    "TRANSCRIBERS",
    "CacheView",
    "CallHit",
    "RepairContext",
    "ResponseReader",
    "WireFormat",
    "by_name",
    "claim",
    "routed",
    "routes",
    "routes_raw",
]
