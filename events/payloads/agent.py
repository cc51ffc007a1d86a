"""Agent events: a third-party agent process run as a lab (`--policy agent`).

The agent's model calls are `model.*` events and its lab-API calls `tool.*` events, as
for the built-in labs; these say when its process started and ended, and what changed in
its workspace between the calls labrxiv saw.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from events.blobs import BlobRef
from events.payloads.base import Payload
from events.payloads.tool import FileDigest, LimitHit

Reports = Literal["functions", "bash_blocks", "none"]
"""How the agent's actions show in its model traffic: OpenAI tool calls in the answers
and their results in the next request (`functions`), one ```bash block per answer whose
output comes back as the next user message (`bash_blocks`, mini-swe-agent), or not at
all (`none`)."""


class AgentConfig(BaseModel):
    """What an `agent` lab runs: a profile's or a user's command, in the run's sandbox."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    """The profile (`workers/agent/profiles/<name>.toml`), or `command` for a command
    given as it is."""
    command: list[str] = Field(min_length=1)
    """The argv started in the workspace, placeholders filled in."""
    env: dict[str, str] = {}
    """Further environment variables of the process (never a secret: they are in the
    log); labrxiv adds the model endpoint, the lab socket, PATH and HOME."""
    install: str | None = None
    """A folder of this machine shown read-only in the sandbox (the agent's virtualenv
    or install folder); None when the command needs only the system and labrxiv's
    interpreter."""
    reports: Reports = "functions"
    """How its actions show in its model traffic (recorded as reported tool calls)."""
    files: dict[str, str] = {}
    """Files written into the workspace's `.labrxiv/agent/` before it starts (a profile's
    configuration), by name: what the agent read is in the log."""


class AgentStarted(Payload):
    """The agent's process was started in the run's workspace."""

    type: Literal["agent.started"] = "agent.started"
    session: int = Field(ge=1)
    """1 for the first start; more when the run was taken over after its worker died."""
    command: list[str]
    """The argv started."""
    restored: bool = False
    """The workspace was rebuilt from the log before this start (a run taken over)."""
    detail: str = ""
    """Why it started again, for a later session; for a fork's first session, where it
    forks and how many of its parent's model calls are answered from the log."""


class AgentExited(Payload):
    """The agent's process ended (or was stopped)."""

    type: Literal["agent.exited"] = "agent.exited"
    session: int = Field(ge=1)
    exit_code: int
    """Its exit status; negative for a signal."""
    duration_s: float = Field(ge=0)
    stopped: str | None = None
    """Why labrxiv stopped it, if it did (a budget reached, the run's wall time)."""
    limit: LimitHit | None = None
    """The sandbox limit that stopped it, if one did."""
    stdout: BlobRef | None = None
    """Everything it printed (as kept: the start and the end of a long output)."""
    stderr: BlobRef | None = None
    stderr_tail: str = Field(default="", max_length=2500)
    """The end of its stderr, for a person to see why it failed."""


class WorkspaceChanged(Payload):
    """What the agent changed in its workspace since labrxiv last looked, where no call
    it reported is there to carry it (its reported tool results and lab-API calls carry
    their own)."""

    type: Literal["workspace.changed"] = "workspace.changed"
    at: Literal["lab_call", "model_call", "end"]
    """When the change was seen: before a lab-API call, at a model call, at the end."""
    files_written: list[FileDigest] = []
    files_deleted: list[str] = []
    files_unlisted: int = Field(default=0, ge=0)


class AgentDiverged(Payload):
    """A fork's agent, redoing its parent's trajectory from the log, made a call other
    than the one recorded next: from this call on, every call is live (made and recorded)."""

    type: Literal["agent.diverged"] = "agent.diverged"
    call: int = Field(ge=1)
    """The agent's call that differed: its number among the calls of the session (model
    requests and lab-API calls together, in order)."""
    kind: Literal["model", "lab"]
    """What the call was: a model request or a lab-API call."""
    model_calls: int = Field(ge=0)
    """Model calls answered from the parent's log before it."""
    lab_calls: int = Field(ge=0)
    """Lab-API calls answered from the parent's log before it."""
    detail: str = Field(max_length=500)
    """What differed from the parent's call."""
