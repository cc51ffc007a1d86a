"""Agent profiles: the settings an agent people use needs, by name
(`workers/agent/profiles/<name>.toml`), and a command given as it is.

A profile has `description`, `command` (the argv; `{model}` and `{task}` are filled in),
`env` (further environment variables: never secrets, they are recorded), `reports`
(how its tool calls show in its model traffic: `functions`, `bash_blocks`, `none`),
and `install` (how to make the folder `--agent-env` names, in one line).
"""

import shlex
import tomllib
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.payloads.agent import AgentConfig, Reports
from workers.sandbox.jail import WORKSPACE_MOUNT

PROFILES = Path(__file__).with_name("profiles")
COMMAND = "command"
"""The name an agent given as a command is recorded under."""


class Profile(BaseModel):
    """A profile file, checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    description: str
    command: list[str] = Field(min_length=1)
    env: dict[str, str] = {}
    reports: Reports = "functions"
    install: str = ""
    needs_env: bool = True
    """Whether the agent runs from a folder of its own (`--agent-env`, required)."""
    finish_marker: str | None = None
    """What the agent prints when it ends its own work (documentation)."""


class AgentError(ValueError):
    """A wrong `--agent` setting, in one line."""


def profile_names() -> list[str]:
    """Every profile shipped, sorted."""
    return sorted(path.stem for path in PROFILES.glob("*.toml"))


def load_profile(name: str) -> Profile:
    """The profile called `name`; `AgentError` naming what is wrong."""
    path = PROFILES / f"{name}.toml"
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
        return Profile.model_validate(data)
    except OSError as exc:
        raise AgentError(f"no agent profile {name!r} ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise AgentError(f"the agent profile {path} is broken: {exc}") from None


def agent_config(agent: str, model: str, env: Path | None, reports: str | None) -> AgentConfig:
    """What `--agent AGENT` (a profile's name or a command) with `--agent-env ENV` and
    `--agent-reports` makes of an agent lab; `AgentError` naming what is wrong."""
    if reports is not None and reports not in get_args(Reports):
        choices = ", ".join(get_args(Reports))
        raise AgentError(f"--agent-reports must be one of {choices}, not {reports!r}")
    install = None
    if env is not None:
        folder = env.expanduser().resolve()
        if not folder.is_dir():
            raise AgentError(f"--agent-env {env}: not a folder")
        install = str(folder)
    fill = {"model": model, "task": f"{WORKSPACE_MOUNT}/TASK.md"}
    if agent in profile_names():
        profile = load_profile(agent)
        if profile.needs_env and install is None:
            raise AgentError(
                f"--agent {agent} needs --agent-env DIR, the folder it is installed in "
                f"({profile.install})"
            )
        try:
            command = [part.format(**fill) for part in profile.command]
        except (KeyError, IndexError) as exc:
            raise AgentError(
                f"the agent profile {agent!r} names an unknown placeholder {exc}"
            ) from None
        return AgentConfig(
            name=agent,
            command=command,
            env=profile.env,
            install=install,
            reports=reports or profile.reports,
        )
    try:
        command = shlex.split(agent)
    except ValueError as exc:
        raise AgentError(f"--agent {agent!r} is not a command line: {exc}") from None
    if not command:
        raise AgentError("--agent is empty: a profile name or a command")
    if len(command) == 1 and "/" not in command[0] and install is None:
        known = ", ".join(profile_names()) or "none"
        raise AgentError(
            f"--agent {agent!r} is no profile (profiles: {known}); a command must be a path "
            "or take arguments"
        )
    return AgentConfig(
        name=COMMAND,
        command=command,
        install=install,
        reports=reports or "functions",
    )
