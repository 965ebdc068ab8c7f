"""The POSIX record locks the kernel holds on a file, read from /proc/locks as another process would see them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

SHM_DMS_BYTE = 128  # SQLite's "is anyone else using this" lock in the -shm file (https://www.sqlite.org/walformat.html)


class RecordLock(NamedTuple):
    pid: int
    kind: str  # READ or WRITE
    start: int
    end: int


def record_locks(path: Path) -> list[RecordLock]:
    """Every POSIX lock on the file at `path`, whoever holds it (lines such as
    `1: POSIX  ADVISORY  READ 4767 fe:00:2146690 128 128`)."""
    inode = os.stat(path).st_ino
    locks = []
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "POSIX" and int(fields[5].rsplit(":", 1)[1]) == inode:
            end = fields[7]
            locks.append(RecordLock(int(fields[4]), fields[3], int(fields[6]), -1 if end == "EOF" else int(end)))
    return locks


def dms_holders(database: Path) -> set[int]:
    """The processes that hold SQLite's shared lock on byte 128 of the database's -shm file."""
    shm = database.with_name(database.name + "-shm")
    return {lock.pid for lock in record_locks(shm) if lock.kind == "READ" and lock.start <= SHM_DMS_BYTE <= lock.end}
