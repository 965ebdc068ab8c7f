"""What the addon leaves on a flow: metadata for tools, a comment and marker for people."""

from __future__ import annotations

from typing import Any

from mitmproxy import http

# flow.metadata[META] is a plain dict (flow files must be able to serialise it).
META = "llm"
REPAIR_MARKER = ":wrench:"


def flow_meta(flow: http.HTTPFlow) -> dict[str, Any] | None:
    meta = flow.metadata.get(META)
    return meta if isinstance(meta, dict) else None


def add_comment(flow: http.HTTPFlow, line: str) -> None:
    flow.comment = f"{flow.comment}\n{line}" if flow.comment else line
