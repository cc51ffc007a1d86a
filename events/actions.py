"""The one rule of which tool calls are a run's actions, beside the tool payloads it reads.

A lab's actions are its tool calls (`tool.invoked`), as ResearchGym counts actions. An
`agent` lab's log holds two kinds: the calls labrxiv ran (its lab-API calls: evaluate,
the archive, submit, budget, finish) and the calls its own tools ran, seen in its model
traffic (`reported`: a bash command, a file edit). Both are what the agent did, so both
are actions, once each: a reported call named as a lab call (the agent's MCP tool
`evaluate`, say) is the same action as the lab call labrxiv ran for it, which is the
one counted (it has the lab's tool name and the tool's own time). A reported `bash`
command that runs `lab evaluate` is two actions: the command, and the lab call it made.

The behaviour figures (`analysis.tally`) and the failure-mode detectors
(`analysis.detectors.view`) count through this module, so they agree by construction.
Budgets count steps differently: a step is a call labrxiv ran (`runstate.fold`), never a
reported one.
"""

from collections.abc import Mapping
from typing import Any

from events.payloads.tool import ToolInvoked, ToolReturned

LAB_CALL_NAMES = frozenset(
    {
        "evaluate",
        "archive_search",
        "archive_read",
        "search_archive",
        "read_paper",
        "submit",
        "submit_paper",
        "budget",
        "finish",
    }
)
"""The names under which an agent reaches a lab call: the MCP server's tools
(`workers/agent/inside/lab_mcp.py`), the lab API's calls, and the built-in tools they
run."""


def is_action(tool: str, reported: bool) -> bool:
    """Whether a tool call is one of the run's actions: every call labrxiv ran, and every
    reported call but those named as a lab call (the lab call that labrxiv ran for it is
    the action)."""
    return not reported or tool not in LAB_CALL_NAMES


def payload_is_action(payload: ToolInvoked | ToolReturned | Mapping[str, Any]) -> bool:
    """`is_action` of a `tool.invoked` or `tool.returned`, typed or as stored (a dict)."""
    if isinstance(payload, ToolInvoked | ToolReturned):
        return is_action(payload.tool, payload.reported)
    return is_action(str(payload.get("tool")), bool(payload.get("reported")))
