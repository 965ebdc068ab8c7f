"""Whether a WAL-mode SQLite database may have changed since the last look, read without calling into SQLite.

Every commit and every checkpoint reset rewrites the WAL-index header, the first 48 bytes of the `-shm` file that
all connections share through memory (https://www.sqlite.org/walformat.html, "The WAL-Index Header": its change
counter, last valid frame and checksums). Reading those bytes from a shared mapping costs a memory read; asking
SQLite for `PRAGMA data_version` costs a statement, and the first one a request makes, with SQLite's code and pages
cold in the processor's caches, costs tens of microseconds on the way to the provider.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

HEADER_BYTES = 48


class WalHeader:
    """A read-only view of a database's WAL-index header; `current()` is None where there is none to read (then
    every look must ask SQLite)."""

    def __init__(self, database: Path) -> None:
        self._map: mmap.mmap | None = None
        try:
            fd = os.open(database.with_name(database.name + "-shm"), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return
        try:
            # SQLite never shrinks the file while a connection is open (the store keeps one), and it is at least a
            # page long once a connection read the database in WAL mode.
            if os.fstat(fd).st_size >= HEADER_BYTES:
                self._map = mmap.mmap(fd, HEADER_BYTES, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            self._map = None
        finally:
            os.close(fd)  # the mapping stays valid without it

    def current(self) -> bytes | None:
        return self._map[:HEADER_BYTES] if self._map is not None else None

    def close(self) -> None:
        if self._map is not None:
            self._map.close()
            self._map = None
