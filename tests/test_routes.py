"""Which wire formats a request's path routes to: read off the path as it came on the wire, and remembered per path
only for paths of a usual length."""

from __future__ import annotations

import pytest
from llm_reasoning_proxy import wire as formats

PATHS = [
    "/v1/chat/completions",
    "/v1/chat/completions/?x=1",
    "/openai/deployments/gpt%2D5/chat/completions?api-version=2025-01-01",
    "/v1/responses",
    "/v1/messages",
    "/v1/threads/t_1/messages",  # OpenAI's Assistants API: not Anthropic's
    "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
    "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream",
    "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke",
    "/v1/telemetry",
    "/",
    "/v1/chat/completions\udcff",  # a byte that is not UTF-8, as mitmproxy reads it
    "/x" * 600 + "/v1/responses",  # longer than any path remembered
]


@pytest.mark.parametrize("path", PATHS)
def test_a_path_as_it_came_routes_where_its_text_does(path: str) -> None:
    raw = path.encode("utf-8", "surrogateescape")
    expected = tuple(wire_format for wire_format in formats.FORMATS if wire_format.route(path))
    assert formats.routes(path) == expected
    assert formats.routes_raw(raw) == expected
    assert formats.routes_raw(raw) == expected  # remembered, or read again: the same
    assert formats.routed("POST", path) == bool(expected)
    assert not formats.routed("GET", path)


def test_paths_are_remembered_only_up_to_a_bound_in_length_and_number() -> None:
    formats._remembered_raw_routes.cache_clear()
    formats.routes_raw(b"/x" * 600 + b"/v1/responses")
    assert formats._remembered_raw_routes.cache_info().currsize == 0
    for n in range(formats._REMEMBERED_PATHS + 10):
        formats.routes_raw(b"/v1/%d/chat/completions" % n)
    assert formats._remembered_raw_routes.cache_info().currsize == formats._REMEMBERED_PATHS
