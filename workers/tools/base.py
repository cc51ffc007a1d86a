"""Declaring tools: the schema a model sees comes from the function's type hints and docstring.

An error the lab should see (a missing file, a bad argument) is a `ToolError`: it is
returned to the lab as the tool's output and the run goes on. Anything else a tool
raises is a bug in labrxiv.
"""

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from events.payloads import FileDigest, Payload
from workers.sandbox.base import LimitHit


class ToolError(Exception):
    """A failure the lab should be told about; the run continues."""


@dataclass
class ToolResult:
    """What a tool produced besides its exit status."""

    output: str
    exit_code: int = 0
    events: list[Payload] = field(default_factory=list)
    """Further events the tool caused (a score, a paper, a retrieval), in order."""
    files_written: list[FileDigest] = field(default_factory=list)
    """Files the tool itself wrote; the watch of the workspace lists them (and more) anyway,
    these only fill in what no look could see (`changes.diff`)."""
    finish: bool = False
    """The lab declared its run done."""
    limit: LimitHit | None = None
    """The sandbox limit that stopped the tool's process, if one did."""


@dataclass(frozen=True)
class ToolSpec:
    """A declared tool."""

    name: str
    description: str
    args: type[BaseModel]
    fn: Callable[..., ToolResult]
    changes_workspace: bool = True
    """Whether the tool may change the workspace: its calls are then watched (`watch.py`)."""

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling declaration of the tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.args.model_json_schema(),
            },
        }


TOOLS: dict[str, ToolSpec] = {}
"""Every declared tool by name."""


def tool(fn: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """Declare `fn(env, **args)` as a tool; its parameters after `env` are the arguments."""
    return _declare(fn, changes_workspace=True)


def unwatched_tool(fn: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """Declare a tool that cannot change the workspace: its calls are not watched."""
    return _declare(fn, changes_workspace=False)


def _declare(fn: Callable[..., ToolResult], changes_workspace: bool) -> Callable[..., ToolResult]:
    params = list(inspect.signature(fn).parameters.values())[1:]
    fields: dict[str, Any] = {
        p.name: (p.annotation, ... if p.default is inspect.Parameter.empty else p.default)
        for p in params
    }
    args = create_model(f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields)
    description = inspect.cleandoc(fn.__doc__ or fn.__name__)
    TOOLS[fn.__name__] = ToolSpec(fn.__name__, description, args, fn, changes_workspace)
    return fn
