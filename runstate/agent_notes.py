"""What an agent lab's own events say, as one line each for a person reading its steps
(`labrxiv replay`, the HTML page, the inspector's `steps`): when its process started, how
it ended (exit code, why labrxiv stopped it, the end of its stderr), and which files it
changed where no call it reported carried them."""

from events.payloads import AgentExited, AgentStarted, WorkspaceChanged
from events.payloads.base import Payload

AGENT_TYPES = ("agent.started", "agent.exited", "workspace.changed")
"""The event types `note_of` describes: a step shows them as their notes, not by name."""
FILES_SHOWN = 8
"""Paths named per `workspace.changed`; the rest are counted."""
STDERR_LINES = 3
"""Lines of an exited agent's stderr tail shown."""
WHEN = {
    "lab_call": "before a lab call",
    "model_call": "at a model call",
    "end": "at the end",
}


def note_of(payload: Payload) -> str | None:
    """The line an agent event shows as; None for any other event."""
    if isinstance(payload, AgentStarted):
        again = f", workspace restored: {payload.detail}" if payload.restored else ""
        return f"agent started (session {payload.session}{again}): {' '.join(payload.command)}"
    if isinstance(payload, AgentExited):
        how = f"agent exited with {payload.exit_code} after {payload.duration_s:.1f} s"
        if payload.stopped:
            how += f"; stopped by labrxiv: {payload.stopped}"
        if payload.limit:
            how += f"; the sandbox's {payload.limit} limit"
        tail = [line for line in payload.stderr_tail.splitlines() if line.strip()]
        if tail:
            how += "\nstderr: " + "\n        ".join(tail[-STDERR_LINES:])
        return how
    if isinstance(payload, WorkspaceChanged):
        return f"workspace changed {WHEN[payload.at]}: {_files(payload)}"
    return None


def _files(change: WorkspaceChanged) -> str:
    parts = []
    if change.files_written:
        parts.append("wrote " + _listed([f.path for f in change.files_written]))
    if change.files_deleted:
        parts.append("deleted " + _listed(change.files_deleted))
    if change.files_unlisted:
        parts.append(f"{change.files_unlisted} more not listed")
    return "; ".join(parts) or "nothing listed"


def _listed(paths: list[str]) -> str:
    shown = ", ".join(paths[:FILES_SHOWN])
    more = len(paths) - FILES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")
