"""Files the proxy owns: owner-only (0600) whatever was there before, and never written through a link.

The cache, its WAL files, the event log and exported fixtures hold what clients and providers said. A file
left 0644 by an earlier run or another tool would stay readable by everyone, and a symbolic link planted at
one of these paths would make the proxy write into whatever it points at; both are refused or corrected here.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

PRIVATE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


class PrivateFileError(OSError):
    """A path the proxy must own cannot be made private (it is a link, or not a regular file)."""


def _refuse_link(path: Path) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise PrivateFileError(errno.ELOOP, "is a symbolic link; the proxy never writes through a link", str(path))
    if not stat.S_ISREG(info.st_mode):
        raise PrivateFileError(errno.EINVAL, "is not a regular file", str(path))


def make_private_dir(path: Path) -> None:
    """Creates a folder (and its parents) owner-only; a folder that exists is left as it is."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)


def open_private(path: Path, flags: int) -> int:
    """Opens (creating it if need be) a file for writing, refusing links, and makes it 0600; returns the fd."""
    _refuse_link(path)
    try:
        fd = os.open(path, flags | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_MODE)
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link planted between the check and the open
            raise PrivateFileError(errno.ELOOP, "is a symbolic link; the proxy never writes through a link", str(path))
        raise
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != PRIVATE_MODE:  # O_CREAT keeps the mode of a file that was there
            os.fchmod(fd, PRIVATE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd


def make_private(path: Path) -> None:
    """Makes a file that exists 0600 (refusing a link); a file that does not exist is left to be created."""
    _refuse_link(path)
    if path.exists() and stat.S_IMODE(path.stat().st_mode) != PRIVATE_MODE:
        os.chmod(path, PRIVATE_MODE)


def write_private(path: Path, data: bytes) -> None:
    """Writes a whole file owner-only, replacing what was in it."""
    fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
