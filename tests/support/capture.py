"""Feeding a captured response through the real stream tap, as mitmproxy would, for unit tests."""

from __future__ import annotations

import itertools
import re

from llm_reasoning_proxy.answer.tap import ResponseTap, TapResult
from llm_reasoning_proxy.shared.records import ReasoningRecord
from llm_reasoning_proxy.wire import WireFormat


def split(raw: bytes, cuts: list[int]) -> list[bytes]:
    """`raw` cut at each of `cuts` (positions; out of range or repeated ones are ignored)."""
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(raw)}), len(raw)]
    return [raw[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def pieces(raw: bytes, size: int | None | str | list[int]) -> list[bytes]:
    """`raw` cut into pieces of `size` bytes.

    None: whole; "events": one SSE event per piece, as a server writes them; a list: cut at those positions.
    """
    if size is None:
        return [raw]
    if isinstance(size, list):
        return split(raw, size)
    if size == "events":
        return [piece for piece in re.split(rb"(?<=\r\n\r\n)|(?<=\n\n)(?!\r)", raw) if piece]
    return [raw[i : i + size] for i in range(0, len(raw), size)]


def tap_records(
    wire_format: WireFormat,
    raw: bytes,
    *,
    sse: bool,
    size: int | None | str | list[int] = None,
    encoding: str | None = None,
    complete: bool = True,
    aws_frames: bool = False,
) -> list[ReasoningRecord]:
    """The records a format reads from `raw` fed in pieces; `complete=False` cuts the stream off at its end;
    `aws_frames`: `raw` is an AWS event stream (Amazon Bedrock)."""
    results: list[TapResult] = []
    tap = ResponseTap(
        wire_format.reader(),
        sse=sse or aws_frames,
        aws_frames=aws_frames,
        content_encoding=encoding,
        read=True,
        keep_body=False,
        on_finish=results.append,
    )
    for piece in pieces(raw, size):
        assert tap(piece) is piece  # the client gets every piece as it came
    if complete:
        assert tap(b"") == b""
    else:
        tap.finish(complete=False)
    assert [result.complete for result in results] == [complete] and tap.problem is None
    return list(results[0].records)
