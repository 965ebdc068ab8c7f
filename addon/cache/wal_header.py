"""Whether a WAL-mode SQLite database may have changed since the last look, read without calling into SQLite.

Every commit and every checkpoint reset rewrites the WAL-index header, the first 48 bytes of the `-shm` file that
all connections share (https://www.sqlite.org/walformat.html, "The WAL-Index Header": its change counter, last valid
frame and checksums). Reading those bytes costs one pread; asking SQLite for `PRAGMA data_version` costs a
statement, and the first one a request makes, with SQLite's code and pages cold in the processor's caches, costs
tens of microseconds on the way to the provider.

The bytes are read through SQLite's own descriptor of the `-shm` file, never one of ours. POSIX record locks belong
to a process and a file, not to a descriptor: closing any descriptor of the `-shm` would drop the shared lock SQLite
holds on it (its "dead man switch" at byte 128, https://www.sqlite.org/walformat.html#the_wal_index_file_format),
and the next process to open the database would think itself alone, rebuild the file under this one and crash it
(SIGBUS on SQLite's mapping). Nothing here is mapped or closed: SQLite keeps that descriptor open for as long as
any of this process's connections to the database is, and the store's connection outlives its `WalHeader`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

HEADER_BYTES = 48
_OWN_DESCRIPTORS = Path("/proc/self/fd")  # Linux; elsewhere there is no header to read, and SQLite is asked


def sqlite_descriptor(path: Path) -> int | None:
    """The descriptor through which this process already has `path` open (SQLite's), or None.

    It is the one whose file is the very file at `path` (same device and inode, not a link planted there)."""
    try:
        wanted = os.lstat(path)
        names = os.listdir(_OWN_DESCRIPTORS)
    except OSError:
        return None
    if not stat.S_ISREG(wanted.st_mode):
        return None
    for name in names:
        try:
            fd = int(name)
            held = os.fstat(fd)
        except (ValueError, OSError):  # the listing's own descriptor, closed since
            continue
        if (held.st_dev, held.st_ino) == (wanted.st_dev, wanted.st_ino):
            return fd
    return None


class WalHeader:
    """The WAL-index header of a database that a connection of this process has open in WAL mode and has read.

    `current()` is None where there is none to read (then every look must ask SQLite)."""

    def __init__(self, database: Path) -> None:
        self._fd = sqlite_descriptor(database.with_name(database.name + "-shm"))

    def current(self) -> bytes | None:
        if self._fd is None:
            return None
        try:
            header = os.pread(self._fd, HEADER_BYTES, 0)
        except OSError:
            return None
        return header if len(header) == HEADER_BYTES else None

    def close(self) -> None:
        """Stops reading; the descriptor stays SQLite's to close."""
        self._fd = None
