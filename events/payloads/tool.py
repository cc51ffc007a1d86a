"""Tool events: an action of a lab in its sandboxed workspace."""

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from events.blobs import BlobRef
from events.payloads.base import Payload

ToolName = str
LimitHit = Literal["time", "cpu", "memory", "output", "file_size", "disk"]
"""A sandbox limit a tool call ran into (`workers.sandbox` enforces them)."""


class FileDigest(BaseModel):
    """A file a tool touched, with the hash of its content at that moment.

    Events written before `size`, `kind` and `link` existed carry only `path` and
    `sha256`; the defaults read them as what they were, regular files that were hashed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """Path relative to the run's workspace."""
    sha256: str | None = Field(pattern=r"^[0-9a-f]{64}$")
    """Hex digest of the content; null when it was not hashed (a symlink, a FIFO or
    socket, a file over the hashing cap, or past a look's hashing budget)."""
    size: int | None = Field(default=None, ge=0)
    """Bytes of the file (of the link's target text for a symlink); null in older events."""
    kind: Literal["file", "symlink", "other"] = "file"
    """A regular file, a symlink (listed, never followed), or another kind (FIFO, socket)."""
    link: str | None = None
    """For a symlink, the path it points at, as written; it is never followed."""


class ToolInvoked(Payload):
    """A lab asked for a tool to run; written before the tool runs."""

    type: Literal["tool.invoked"] = "tool.invoked"
    call_id: str
    """Pairs this event with its `tool.returned`. An `llm` lab's is the model server's id
    and the model call that asked for it, `call_1@12/1`, unique in the run (servers reuse
    their ids from one answer to the next; runs recorded before labrxiv logged it so
    have the server's id alone)."""
    tool: ToolName
    """The tool's name (bash, python, read_file, evaluate…)."""
    args: dict[str, JsonValue] = {}
    """The arguments as the policy gave them."""
    reported: bool = False
    """True when an `agent` lab's own tool ran it and labrxiv only saw it in the agent's
    model traffic (a tool call in an answer); false for the tools labrxiv ran."""


def _phase_change_succeeded(data: dict[str, Any]) -> dict[str, Any]:
    """v1 → v2: an `llm` lab's `next_phase` that moved it on was written as a call that
    failed (exit code 2, not run) though it did what was asked; v2 writes it as a success.
    Its refusals ("error: …") and calls not run ("not run: …") stay failures."""
    moved = str(data.get("preview", "")).startswith("entering phase ")
    if data.get("tool") == "next_phase" and data.get("exit_code") == 2 and moved:
        return {**data, "exit_code": 0, "ran": True}
    return data


class ToolReturned(Payload):
    """A tool finished (or was stopped by a limit)."""

    SCHEMA_VERSION: ClassVar[int] = 2
    UPGRADES: ClassVar[dict[int, Any]] = {1: _phase_change_succeeded}

    type: Literal["tool.returned"] = "tool.returned"
    call_id: str
    """The `call_id` of the matching `tool.invoked`."""
    tool: ToolName
    """The tool's name."""
    exit_code: int
    """0 for success; non-zero for failure or a limit."""
    duration_s: float = Field(ge=0)
    """Wall-clock seconds the tool took."""
    preview: str = Field(default="", max_length=4000)
    """The first part of the output, bounded so the log stays small."""
    output: BlobRef | None = None
    """The full output, in the blob table, when it is longer than the preview."""
    files_read: list[FileDigest] = []
    """Files the tool read."""
    files_written: list[FileDigest] = []
    """Files the tool created or wrote (a rewrite with the same bytes included), with their
    content after the call, sorted by path; see `files_unlisted` for the cap."""
    files_deleted: list[str] = []
    """Workspace paths that were there before the call and are gone after it, sorted."""
    files_unlisted: int = Field(default=0, ge=0)
    """Changed paths beyond the cap of listed ones (200 a call), counted, not listed."""
    ran: bool = True
    """False when no tool ran: the call was refused before it started (a tool the phase
    does not offer, an unknown tool, arguments that are not JSON). Such an `evaluate`
    is no attempt."""
    limit: LimitHit | None = None
    """The sandbox limit that stopped the tool's process, if one did."""
    reported: bool = False
    """True when an `agent` lab's own tool ran it and labrxiv only saw its result in the
    agent's next model request; the exit code is then 0 (the agent's tools report
    none) and `duration_s` the time between the answer and that request."""
