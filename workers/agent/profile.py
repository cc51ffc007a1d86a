"""Agent profiles: the settings an agent people use needs, by name
(`workers/agent/profiles/<name>.toml`), and a command given as it is.

A profile has `description`, `command` (the argv; `{model}`, `{task}` (the path of
TASK.md), `{install_dir}` (the folder `--agent-env` names), `{config}` (the path of its
`config` file as the agent sees it), `{version}` and `{step_limit}` (0: the run's budgets
are its limits) are filled in), `env` (further environment variables: never secrets,
they are recorded), `reports` (how its tool calls show in its model traffic:
`functions`, `bash_blocks`, `none`), `install` (how to make the folder `--agent-env`
names, in one line, with the same placeholders), `version`, and `config` (a file beside
the profile, written into the workspace's `.labrxiv/agent/` for the agent to read).
"""

import shlex
import tomllib
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from events.payloads.agent import AgentConfig, Reports
from workers.sandbox.jail import WORKSPACE_MOUNT

PROFILES = Path(__file__).with_name("profiles")
AGENT_FILES = ".labrxiv/agent"
"""Where a profile's files are written in the workspace."""
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
    version: str = ""
    """The version of the agent the profile was written for (`install` installs it)."""
    config: str | None = None
    """A file beside the profile the agent reads (`{config}`)."""


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
    fill = {"model": model, "task": f"{WORKSPACE_MOUNT}/TASK.md", "step_limit": "0"}
    if agent in profile_names():
        profile = load_profile(agent)
        fill |= {"install_dir": install or "", "version": profile.version}
        if profile.needs_env and install is None:
            how = profile.install.format_map(fill | {"install_dir": "DIR"})
            raise AgentError(
                f"--agent {agent} needs --agent-env DIR, the folder it is installed in ({how})"
            )
        files = {}
        if profile.config is not None:
            try:
                files[profile.config] = (PROFILES / profile.config).read_text()
            except OSError as exc:
                raise AgentError(
                    f"the agent profile {agent!r} lacks {profile.config}: {exc.strerror}"
                ) from None
            fill["config"] = f"{WORKSPACE_MOUNT}/{AGENT_FILES}/{profile.config}"
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
            files=files,
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
