"""Opening a workspace file as root while the lab's processes may still run in it.

A path checked and then opened can change in between: a folder on the way swapped for a
link (to `/proc/self`, whose `environ` holds the worker's secrets, or to hidden data),
a file swapped for a FIFO. `open_beneath` opens each folder of the path in turn from the
workspace's own descriptor, never following a link at any step, so what it opens is
inside the workspace whatever the lab does meanwhile.
"""

import errno
import os
from pathlib import Path

FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_beneath(root: Path | str | bytes, relative: str | bytes, flags: int) -> int:
    """A descriptor of `relative` under the folder `root` (trusted: the worker chose it),
    opened with `flags` plus `O_NOFOLLOW`; `OSError` when any part of the path is a link
    (`ELOOP`, `ENOTDIR`), is gone, or climbs out (`..`)."""
    parts = [part for part in os.fsencode(relative).split(b"/") if part and part != b"."]
    if not parts or b".." in parts:
        raise OSError(errno.EACCES, "not a path inside the workspace", os.fsdecode(relative))
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, FOLDER_FLAGS, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    finally:
        os.close(folder)
