"""What the offline tools read: a mitmproxy flow file, a HAR file or a fixture folder, as flows."""

from __future__ import annotations

from pathlib import Path

from mitmproxy import http, io
from mitmproxy.exceptions import FlowReadException

from .fixtures import fixture_to_flow, read_fixture_dir


class UnreadableInput(Exception):
    pass


def load_flows(path: Path) -> list[http.HTTPFlow]:
    """The HTTP flows of a flow file, a HAR file or a fixture directory, in order."""
    if path.is_dir():
        try:
            return [fixture_to_flow(fixture) for fixture in read_fixture_dir(path)]
        except (OSError, ValueError) as e:
            raise UnreadableInput(f"{path}: not a fixture directory ({e})") from e
    try:
        with path.open("rb") as handle:
            return _once_each([flow for flow in io.FlowReader(handle).stream() if isinstance(flow, http.HTTPFlow)])
    except (OSError, FlowReadException) as e:
        raise UnreadableInput(f"{path}: not a readable mitmproxy flow file or HAR file ({e})") from e


def _once_each(flows: list[http.HTTPFlow]) -> list[http.HTTPFlow]:
    """The flows without a repeat of the one before: mitmproxy's HAR export writes a flow that ended with both an
    answer and an error (a client that hung up after its answer) as two identical entries."""

    def exchange(flow: http.HTTPFlow) -> tuple[object, ...]:
        response = flow.response
        answer = (response.status_code, response.raw_content) if response is not None else None
        request = flow.request
        return (request.timestamp_start, request.method, request.url, request.raw_content, answer)

    kept: list[http.HTTPFlow] = []
    for flow in flows:
        if not kept or exchange(flow) != exchange(kept[-1]):
            kept.append(flow)
    return kept
