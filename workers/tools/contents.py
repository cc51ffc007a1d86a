"""The content of the files a tool call wrote, kept as blobs beside its `tool.returned`,
so a fork of the run can rebuild its workspace as of any step without running a tool
again (`workers/lab/fork.py`).

Blobs are content-addressed by the same sha256 the call's `files_written` lists: a file
written twice with the same bytes is stored once. Bounded, so a step's message stays
far below the bus's limit (`LABRXIV_MAX_MESSAGE_BYTES`, 16 MiB by default): a file
over `FILE_CAP` or past `CALL_CAP` for the call is listed with its digest but its
content is not kept, and a fork past that step says which file it cannot restore.
"""

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from events.blobs import digest
from events.payloads import FileDigest
from workers.sandbox.beneath import open_beneath

FILE_CAP = 1 << 20
"""Bytes of one file's content kept at most (1 MiB)."""
CALL_CAP = 4 << 20
"""Bytes of content kept for one call at most (4 MiB)."""


def kept_contents(root: Path, written: Iterable[FileDigest]) -> dict[str, bytes]:
    """The contents of the regular files in `written` (as the call left them in the
    workspace at `root`), by sha256, within the caps."""
    kept: dict[str, bytes] = {}
    total = 0
    for item in written:
        if item.kind != "file" or item.sha256 is None or item.size is None:
            continue
        if item.size > FILE_CAP or total + item.size > CALL_CAP or item.sha256 in kept:
            continue
        data = _read(root, item.path, item.size)
        if data is None:  # gone, unreadable or swapped since the look: nothing to keep
            continue
        if digest(data) == item.sha256:  # the bytes the event lists, not later ones
            kept[item.sha256] = data
            total += len(data)
    return kept


def _read(root: Path, path: str, size: int) -> bytes | None:
    """The regular file `path` under `root` (at most `size` bytes and one more), read
    without following a link on the way (`workers.sandbox.beneath`); None if it is not
    one any more."""
    try:
        fd = open_beneath(root, path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, size + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
