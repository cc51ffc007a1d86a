"""What the looks remember across a redelivered step, so a call taken twice lists the same.

A step delivered twice (a worker died before its events were recorded) runs its tool
calls again in a workspace that already holds what the first try did. Looking only at
the second try would lose the first try's work that the second does not redo (a file
the first try deleted, an output a script skips because it exists) and call a re-made
file "modified" rather than "created". So, per call (keyed by its call id, tool and
arguments, which a redelivered step repeats exactly):
- the before-look of the call in flight is kept (`pending/<key>.json`): a second try of
  the same call starts from the first try's before-look instead of taking its own;
- the changes listed for the last `KEPT` calls are kept (`reports.json`): a second try
  lists the first try's changes merged with its own (`changes.merge`), which covers a
  step of several calls, whose pending before-look was replaced by a later call's.

The journal lives beside the workspace (`.<workspace name>.look/`), owned by the worker,
out of every jail: a lab cannot edit what will be said about its files. It is written
after each look, atomically (write, then rename), so a worker killed mid-write leaves
the previous version.
"""

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from workers.tools.changes import Changes
from workers.tools.look import Seen, Snapshot

KEPT = 32
"""Calls whose changes are remembered: more than one step's tool calls."""

PENDING_MAX_ENTRIES = 100_000
"""A before-look of more entries is not kept (about 10 MB of JSON, 0.1 s to write): a
second try of such a call looks for itself and relies on the first try's changes."""


def call_key(call_id: str, tool: str, args: dict[str, Any]) -> str:
    """What identifies a call across deliveries of its step."""
    raw = orjson.dumps([call_id, tool, args], option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(raw).hexdigest()[:32]


class Journal:
    """The look journal of the workspace at `root`."""

    def __init__(self, root: Path) -> None:
        self.folder = root.with_name(f".{root.name}.look")

    def before(self, key: str) -> Snapshot | None:
        """The before-look an earlier try of call `key` took, if this is a second try."""
        data = self._read(self.folder / "pending" / f"{key}.json")
        try:
            return None if data is None else {path: Seen(*row) for path, row in data.items()}
        except TypeError:
            return None  # not a journal this code wrote: the call is a first try

    def begin(self, key: str, before: Snapshot) -> None:
        """Keep `before` as the before-look of call `key`, replacing the last call's (if it
        is not too big to keep: `PENDING_MAX_ENTRIES`)."""
        pending = self.folder / "pending"
        pending.mkdir(parents=True, exist_ok=True, mode=0o700)
        kept = len(before) <= PENDING_MAX_ENTRIES
        if kept:
            _write(pending / f"{key}.json", {path: list(seen) for path, seen in before.items()})
        for old in pending.iterdir():
            if old.name != f"{key}.json" or not kept:
                old.unlink(missing_ok=True)

    def earlier(self, key: str) -> Changes | None:
        """The changes an earlier try of call `key` listed, if one finished its look."""
        reports = self._read(self.folder / "reports.json") or {}
        try:
            return None if key not in reports else Changes.from_json(reports[key])
        except (KeyError, TypeError, ValueError):
            return None  # not a journal this code wrote: the call is a first try

    def finish(self, key: str, changes: Changes) -> None:
        """Remember the changes listed for call `key` (the last `KEPT` calls' are kept)."""
        reports = self._read(self.folder / "reports.json") or {}
        reports.pop(key, None)
        reports[key] = changes.to_json()  # dicts keep insertion order: oldest first
        kept = dict(list(reports.items())[-KEPT:])
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write(self.folder / "reports.json", kept)

    @staticmethod
    def _read(path: Path) -> dict[str, Any] | None:
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None  # none yet, or unreadable: the call is looked at as a first try
        return data if isinstance(data, dict) else None


def _write(path: Path, data: dict[str, Any]) -> None:
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    partial.write_bytes(orjson.dumps(data))
    os.replace(partial, path)
