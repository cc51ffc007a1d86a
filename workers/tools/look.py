"""A look at a workspace: every entry's `lstat`, taken without following links.

Two looks, before and after a tool call, say what the call changed (`changes.py`).
Comparing stats costs one `lstat` an entry, so content is hashed only where the stat
moved. The stat compared is (kind, size, mtime, ctime, inode, link target): ctime
cannot be set back by a process (`touch -d` sets mtime only), so content that changed
behind a restored mtime still shows.

One blind spot remains, and is closed here: a file's timestamps come from a coarse
clock, so a file written just before the look and again just after it, to the same
size, can keep the same stat ("racily clean", as git calls it). Files whose ctime is
within `RACY_NS` of the look are hashed by the look itself, so the comparison can fall
back on their content.
"""

import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from workers.tools.digest import HASH_MAX_BYTES, file_sha256

Kind = Literal["file", "symlink", "other"]

RACY_NS = 100_000_000
"""A file changed this recently before a look (100 ms) is hashed by the look: well over
the coarse clock's tick (1-10 ms) that file timestamps are taken from."""

SKIPPED_TOP = (".tmp", ".labrxiv")
"""Top-level names (and prefixes) never looked at: the jail's scratch TMPDIR, rebuilt for
every process, and labrxiv's own markers such as `.labrxiv-ready`."""

_SKIPPED = tuple(map(os.fsencode, SKIPPED_TOP))


class Seen(NamedTuple):
    """One workspace entry as a look saw it (folders are walked, not kept); a tuple, as
    a look makes one per entry of workspaces of tens of thousands of files."""

    kind: Kind
    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    link: str | None = None
    """A symlink's target text; it is never followed."""
    sha256: str | None = None
    """Set only for a racy file (changed within `RACY_NS` of the look)."""
    racy: bool = False

    def same_stat(self, other: "Seen") -> bool:
        """Whether two looks saw the same stat (racy files aside, the same content)."""
        return self[:6] == other[:6]


Snapshot = dict[str, Seen]
"""Every entry of a workspace but its folders, by POSIX path relative to the root."""


def look(root: Path, hidden: Sequence[Path] = ()) -> Snapshot:
    """Every file, symlink and other non-folder entry under `root`, never following a link.

    `hidden` paths (the task's grader and hidden data) are never entered or listed, should
    one lie inside the workspace. Entries that vanish while the look walks are left out.
    """
    began = time.time_ns()
    covered = {os.fsencode(path) for path in hidden}
    seen: Snapshot = {}
    stack = [os.fsencode(root)]
    top = stack[0]
    cut = len(os.path.join(top, b""))  # paths below `top` start with these bytes
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue  # removed while walking, or not a folder any more
        for entry in entries:
            if (folder == top and entry.name.startswith(_SKIPPED)) or entry.path in covered:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                stack.append(entry.path)
                continue
            seen[_display(entry.path[cut:])] = _seen(entry.path, top, info, began)
    return seen


def _seen(path: bytes, top: bytes, info: os.stat_result, began_ns: int) -> Seen:
    if stat.S_ISLNK(info.st_mode):
        try:
            target = _display(os.readlink(path))
        except OSError:
            target = ""
        return Seen(
            "symlink", info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, target
        )
    kind: Kind = "file" if stat.S_ISREG(info.st_mode) else "other"
    racy = kind == "file" and info.st_ctime_ns >= began_ns - RACY_NS
    digest = file_sha256(path, top) if racy and info.st_size <= HASH_MAX_BYTES else None
    return Seen(
        kind, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, None, digest, racy
    )


def _display(raw: bytes) -> str:
    """A path as text that any database stores: bytes that are not UTF-8 are shown escaped
    (`\\xff`), since a lone surrogate would get the whole event dead-lettered."""
    return raw.decode("utf-8", errors="backslashreplace")
