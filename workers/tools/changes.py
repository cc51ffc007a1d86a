"""What a tool call changed in its workspace, from a look before and a look after it.

A path is listed as written when its stat moved between the looks (or, for a file the
before-look found racy, when its content did), and as deleted when the after-look no
longer finds it. A rewrite with the same bytes counts as written: the evidence is who
wrote a file, e.g. that predictions came from running code and not from `write_file`.

Caps keep an event small and a look cheap, whatever the lab does:
- at most `MAX_LISTED` paths (written and deleted together, the first by path order);
  the rest are counted in `files_unlisted`;
- a file over `HASH_MAX_BYTES` is listed with its size and no digest;
- at most `HASH_BUDGET_BYTES` are hashed a call; files past the budget are listed with
  their size and no digest.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.payloads import FileDigest
from workers.tools.digest import HASH_MAX_BYTES, file_sha256
from workers.tools.look import Seen, Snapshot

MAX_LISTED = 200
"""Paths listed in one `tool.returned`; more are counted in `files_unlisted`."""

HASH_BUDGET_BYTES = 256 * 1024**2
"""Bytes hashed for one tool call at most (about 0.2 s of sha256 on one core)."""


@dataclass(frozen=True)
class Changes:
    """The changes listed for one tool call."""

    written: tuple[FileDigest, ...] = ()
    """Sorted by path."""
    deleted: tuple[str, ...] = ()
    """Sorted."""
    unlisted: int = 0
    """Changed paths past `MAX_LISTED`."""

    def to_json(self) -> dict[str, Any]:
        """A plain dict, for the journal (`journal.py`)."""
        return {
            "written": [d.model_dump() for d in self.written],
            "deleted": list(self.deleted),
            "unlisted": self.unlisted,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Changes":
        """The inverse of `to_json`."""
        written = tuple(FileDigest.model_validate(d) for d in data["written"])
        return cls(written, tuple(data["deleted"]), int(data["unlisted"]))


def diff(
    root: Path, before: Snapshot, after: Snapshot, reported: Iterable[FileDigest] = ()
) -> Changes:
    """The changes from `before` to `after`, the workspace at `root` being as `after` saw it.

    `reported`: files the tool itself says it wrote (`write_file`), listed as it says,
    even when the looks could not tell (the same bytes written within a clock tick of the
    first look).
    """
    budget = [HASH_BUDGET_BYTES]
    touched: dict[str, FileDigest | None] = {}
    for path, now in after.items():
        was = before.get(path)
        if was is None or not was.same_stat(now):
            touched[path] = None
        elif was.racy and was.sha256 is not None:
            digest = _hash(root, path, now, budget)
            if digest is not None and digest != was.sha256:
                touched[path] = _digest(path, now, digest)
    for own in reported:
        if own.path in after:  # the tool knows the bytes it wrote: no need to read them back
            touched[own.path] = own
    changed: dict[str, FileDigest | None] = {
        **touched,
        **{p: None for p in before.keys() - after.keys()},
    }
    listed = sorted(changed)[:MAX_LISTED]
    written = []
    deleted = []
    for path in listed:
        if path not in after:
            deleted.append(path)
            continue
        known = changed[path]
        written.append(known or _digest(path, after[path], _hash(root, path, after[path], budget)))
    return Changes(tuple(written), tuple(deleted), len(changed) - len(listed))


def merge(first: Changes, now: Changes) -> Changes:
    """The changes of a call taken twice (a redelivered step): what the first try listed,
    with what this try saw taking precedence for the paths both name.

    A path this try did not touch keeps the first try's entry: a file it did not rewrite
    because the first try had made it, a file the first try deleted, stay on the record.
    """
    entries: dict[str, FileDigest | None] = {d.path: d for d in first.written}
    entries.update({p: None for p in first.deleted})
    for path in now.deleted:
        entries[path] = None
    entries.update({d.path: d for d in now.written})
    listed = sorted(entries)[:MAX_LISTED]
    written = tuple(d for p in listed if (d := entries[p]) is not None)
    deleted = tuple(p for p in listed if entries[p] is None)
    unlisted = len(entries) - len(listed) + max(first.unlisted, now.unlisted)
    return Changes(written, deleted, unlisted)


def _hash(root: Path, path: str, seen: Seen, budget: list[int]) -> str | None:
    """The file's sha256, if it is a regular file within the caps and the call's budget."""
    if seen.kind != "file" or seen.size > HASH_MAX_BYTES or seen.size > budget[0]:
        return None
    budget[0] -= seen.size
    return file_sha256(root / path, root)


def _digest(path: str, seen: Seen, sha256: str | None) -> FileDigest:
    return FileDigest(path=path, sha256=sha256, size=seen.size, kind=seen.kind, link=seen.link)
