"""Process tools: bash and python, run jailed in the workspace."""

from dataclasses import replace
from typing import Annotated

from pydantic import Field

from events.payloads import IntegrityViolation, Payload
from workers.sandbox.base import ExecResult, Limits, SandboxViolation
from workers.tools.base import ToolResult, tool
from workers.tools.env import ToolEnv

_UNREACHABLE = ("Network is unreachable", "[Errno 101]", "Temporary failure in name resolution")
Timeout = Annotated[float, Field(gt=0, le=3600, description="Wall-clock limit.")]
"""The time limit of a command or a program, in seconds."""


@tool
def bash(
    env: ToolEnv,
    command: Annotated[str, Field(description="A shell command, run in the workspace.")],
    timeout_s: Timeout = 120,
) -> ToolResult:
    """Run a shell command in the workspace (no network; time, memory and output limits)."""
    return _run(env, "bash", command, timeout_s)


@tool
def python(
    env: ToolEnv,
    code: Annotated[str, Field(description="Python source to run in the workspace.")],
    timeout_s: Timeout = 120,
) -> ToolResult:
    """Run Python code in the workspace with the project's interpreter (numpy, scikit-learn)."""
    return _run(env, "python", code, timeout_s)


def _run(env: ToolEnv, interpreter: str, source: str, timeout_s: float) -> ToolResult:
    """Run `source` as `interpreter -c source` in the workspace, within `timeout_s`, unless
    it names what is protected."""
    _refuse_protected(env, source)
    return _result(env, env.sandbox.exec([interpreter, "-c", source], _limits(env, timeout_s)))


def _limits(env: ToolEnv, timeout_s: float) -> Limits:
    """The sandbox's limits, with the call's wall and CPU time."""
    return replace(env.sandbox.limits, wall_seconds=timeout_s, cpu_seconds=max(1, int(timeout_s)))


def _refuse_protected(env: ToolEnv, text: str) -> None:
    """Refuse (and so record) a command that names the grader or hidden data outright.

    The jail hides those paths anyway; naming them is still an attempt worth a record.
    """
    guarded = env.sandbox.protected_named(text)
    if guarded is not None:
        raise SandboxViolation(
            "protected_path", f"the command names {guarded}, which is off limits", guarded
        )


def _result(env: ToolEnv, result: ExecResult) -> ToolResult:
    output = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr else "")
    if result.limit:
        output += f"\n[stopped: {result.limit} limit]"
    if result.truncated:
        output += "\n[output cut]"
    events: list[Payload] = []
    if any(marker in result.stderr for marker in _UNREACHABLE):
        events.append(
            IntegrityViolation(
                kind="network",
                detail="a process tried to open a network connection; experiments run offline",
            )
        )
    return ToolResult(output=output, exit_code=result.exit_code, events=events, limit=result.limit)
