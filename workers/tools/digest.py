"""Hashing a workspace file as root, safely: no link followed, no FIFO blocking the worker."""

import hashlib
import os
import stat

from workers.sandbox.beneath import open_beneath

HASH_MAX_BYTES = 64 * 1024**2
"""Files larger than this are listed with their size, not hashed: the same as the
default cap on any single file a sandboxed process may write (`Limits.file_bytes`)."""

_FLAGS = os.O_RDONLY | os.O_NONBLOCK
_CHUNK = 1024 * 1024


def file_sha256(
    path: bytes | str | os.PathLike[str], root: bytes | str | os.PathLike[str]
) -> str | None:
    """The hex sha256 of the regular file `path` under the workspace `root`; None if it is
    not one (any more), is larger than `HASH_MAX_BYTES`, or cannot be read. No link is
    followed on the way (`workers.sandbox.beneath`): the lab's processes may be running."""
    try:
        relative = os.path.relpath(os.fsencode(path), os.fsencode(root))
        fd = open_beneath(os.fsencode(root), relative, _FLAGS)
    except OSError:
        return None  # gone, or a symlink or FIFO swapped in since the look
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > HASH_MAX_BYTES:
            return None
        digest = hashlib.sha256()
        read = 0
        while chunk := os.read(fd, _CHUNK):
            read += len(chunk)
            if read > HASH_MAX_BYTES:
                return None  # grew past the cap while being read
            digest.update(chunk)
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)
