"""File tools: read, write, search and patch files in the workspace."""

import fnmatch
import hashlib
import os
import re
from typing import Annotated

from pydantic import Field

from events.payloads import FileDigest
from workers.tools.base import ToolError, ToolResult, tool, unwatched_tool
from workers.tools.env import ToolEnv

MAX_READ = 64 * 1024
SEARCH_MAX = 1024 * 1024
"""Files larger than this are not searched."""


@unwatched_tool
def read_file(
    env: ToolEnv,
    path: Annotated[str, Field(description="Path relative to the workspace.")],
) -> ToolResult:
    """Read a text file of the workspace (the first 64 KiB)."""
    try:
        data = env.sandbox.read(path, max_bytes=MAX_READ + 1)
    except OSError as exc:  # missing, a folder, a FIFO: the lab's to fix, not a crash
        raise ToolError(f"{path}: {exc.strerror}") from None
    text = data[:MAX_READ].decode("utf-8", errors="replace")
    return ToolResult(text + ("\n[… cut at 64 KiB]" if len(data) > MAX_READ else ""))


@tool
def write_file(
    env: ToolEnv,
    path: Annotated[str, Field(description="Path relative to the workspace.")],
    content: Annotated[str, Field(description="The whole new content of the file.")],
) -> ToolResult:
    """Create or replace a file in the workspace."""
    data = content.encode()
    try:
        env.sandbox.write(path, data)
    except OSError as exc:  # a folder or a FIFO in the way: the lab's to fix, not a crash
        raise ToolError(f"{path}: {exc.strerror}") from None
    return ToolResult(
        f"wrote {len(data)} bytes to {path}", files_written=[_written(env, path, data)]
    )


@tool
def apply_patch(
    env: ToolEnv,
    path: Annotated[str, Field(description="Path relative to the workspace.")],
    old: Annotated[str, Field(description="Exact text to replace; must occur exactly once.")],
    new: Annotated[str, Field(description="The replacement text.")],
) -> ToolResult:
    """Replace one exact occurrence of `old` with `new` in a workspace file."""
    try:
        text = env.sandbox.read(path).decode("utf-8")
    except FileNotFoundError:
        raise ToolError(f"{path}: no such file") from None
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ToolError(f"{path}: not UTF-8 text") from None
    count = text.count(old)
    if count != 1:
        raise ToolError(f"{path}: the old text occurs {count} times; it must occur exactly once")
    data = text.replace(old, new).encode()
    try:
        env.sandbox.write(path, data)
    except OSError as exc:
        raise ToolError(f"{path}: {exc.strerror}") from None
    return ToolResult(f"patched {path}", files_written=[_written(env, path, data)])


@unwatched_tool
def search_files(
    env: ToolEnv,
    pattern: Annotated[str, Field(description="A regular expression to look for.")],
    glob: Annotated[str, Field(description="Which files, e.g. '*.py'.")] = "*",
) -> ToolResult:
    """Find lines matching a regular expression in workspace files (at most 100 hits)."""
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"bad pattern: {exc}") from None
    hits: list[str] = []
    for relative in env.sandbox.files():
        if not fnmatch.fnmatch(os.path.basename(relative), glob):
            continue
        # Through the sandbox: a link out is refused (and recorded), and a FIFO or a
        # socket is skipped rather than read, which would block the worker for good.
        try:
            data = env.sandbox.read(relative, max_bytes=SEARCH_MAX + 1)
        except OSError:
            continue
        if len(data) > SEARCH_MAX:
            continue
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            if regex.search(line):
                hits.append(f"{relative}:{number}: {line[:200]}")
                if len(hits) >= 100:
                    return ToolResult("\n".join(hits + ["[… first 100 hits]"]))
    return ToolResult("\n".join(hits) or "no match")


def _written(env: ToolEnv, path: str, data: bytes) -> FileDigest:
    """The file just written, named as the workspace's looks name it: `./a` and `a` are one
    file, and a write through a link inside the workspace wrote the link's target."""
    relative = env.sandbox.resolve(path)
    return FileDigest(path=relative, sha256=hashlib.sha256(data).hexdigest(), size=len(data))
