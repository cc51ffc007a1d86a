"""The finish tool: the lab declares its run done."""

from typing import Annotated

from pydantic import Field

from workers.tools.base import ToolResult, unwatched_tool
from workers.tools.env import ToolEnv


@unwatched_tool
def finish(
    env: ToolEnv,
    summary: Annotated[str, Field(description="What the run found, in a few sentences.")],
) -> ToolResult:
    """End the run. Nothing more can be done in it afterwards."""
    return ToolResult(output=f"run finished: {summary[:500]}", finish=True)
