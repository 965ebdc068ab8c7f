"""AWS event-stream frames read the simplest way, for tests to compare the addon's parser with."""

from __future__ import annotations

import struct


def by_hand(raw: bytes) -> list[tuple[dict[str, str], bytes]]:
    """The frames of a body read the simplest way, straight from the layout AWS documents (string headers only,
    which is all Bedrock sends), checking nothing: what the parser must agree with."""
    found, at = [], 0
    while at < len(raw):
        total, headers_size = struct.unpack_from(">II", raw, at)
        headers, head, end = {}, at + 12, at + 12 + headers_size
        while head < end:
            name = raw[head + 1 : head + 1 + raw[head]].decode()
            head += 1 + raw[head]
            assert raw[head] == 7
            (size,) = struct.unpack_from(">H", raw, head + 1)
            headers[name] = raw[head + 3 : head + 3 + size].decode()
            head += 3 + size
        found.append((headers, raw[end : at + total - 4]))
        at += total
    return found
