"""Watching a tool call's workspace: a look before, a look after, the changes between.

Idempotency rule: a call taken twice (its step redelivered) lists the same changes when
the tool does the same thing again; see `journal.py` for how, and for what a second try
that does something else lists (the changes of both tries, the second's taking
precedence).
"""

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from events.payloads import FileDigest
from workers.sandbox.base import Sandbox
from workers.tools.changes import Changes, diff, merge
from workers.tools.journal import Journal, call_key
from workers.tools.look import Snapshot


class WorkspaceWatch:
    """Started before a tool call runs; `finish` after it says what the call changed."""

    def __init__(self, sandbox: Sandbox, call_id: str, tool: str, args: dict[str, Any]):
        self.sandbox = sandbox
        self.root: Path = sandbox.root
        self.journal = Journal(self.root)
        self.key = call_key(call_id, tool, args)
        earlier = self.journal.before(self.key)
        if earlier is None:
            self.before: Snapshot = sandbox.look()
            self.journal.begin(self.key, self.before)
        else:
            self.before = earlier  # a second try: what the workspace was before the first

    def finish(self, reported: Iterable[FileDigest] = ()) -> Changes:
        """The changes since the before-look; `reported`: files the tool says it wrote."""
        after = self.sandbox.look()
        changes = diff(self.root, self.before, after, reported)
        first = self.journal.earlier(self.key)
        if first is not None:
            changes = merge(first, changes)
        self.journal.finish(self.key, changes)
        return changes
