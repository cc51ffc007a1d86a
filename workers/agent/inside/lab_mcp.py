"""The lab's tools as an MCP server over stdio, for agents that speak MCP.

    python lab_mcp.py        # with LABRXIV_LAB_SOCKET set, as inside a lab

Each tool calls the lab through `labclient` and returns the tool's output as text; a
refusal or failure (a non-zero exit code, an unreachable lab) is a tool error whose
text says why. Needs the `mcp` package (pydantic and typing_extensions come with it).
"""

from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

# pydantic derives schemas from typing_extensions' TypedDict only, on Python < 3.12.
from typing_extensions import TypedDict

# Inside the sandbox this file is a script beside labclient.py; in labrxiv's own
# checks it is a module of the package that holds both.
if TYPE_CHECKING or __package__:
    from . import labclient
else:
    import labclient

server = MCPServer(
    "labrxiv-lab",
    log_level="WARNING",
    instructions=(
        "The tools of a labrxiv lab: evaluate your solution (each call is one attempt of "
        "the budget), search and read the archive's papers, submit a paper whose claims "
        "cite your scored attempts, check the budget, finish the run."
    ),
)


class Claim(TypedDict):
    """A number the paper reports, tied to the scored attempt that measured it."""

    subtask: Annotated[str, Field(description="The task's subtask the number is for.")]
    metric: Annotated[str, Field(description="What the number measures (accuracy, ndcg…).")]
    value: float
    attempt: NotRequired[
        Annotated[int | None, Field(description="The scored attempt (evaluate) it comes from.")]
    ]


def _call(name: str, args: dict[str, Any]) -> str:
    """The tool's output; a `ToolError` with its text when it refused or failed."""
    try:
        answer = labclient.call(name, args)
    except labclient.LabError as exc:
        raise ToolError(str(exc)) from None
    if answer["exit_code"] != 0:
        raise ToolError(answer["output"] or f"{name} failed (exit code {answer['exit_code']})")
    return answer["output"]


@server.tool(structured_output=False)
def evaluate() -> str:
    """Run the solution on the task's data and score it with the task's grader. Each call
    is one attempt of the run's budget; the scores are recorded by the grader."""
    return _call("evaluate", {})


@server.tool(structured_output=False)
def archive_search(
    query: Annotated[str, Field(description="What to look for.")],
    k: Annotated[int, Field(ge=1, le=20, description="How many papers.")] = 5,
) -> str:
    """Search the shared archive of papers on this task; best matches first."""
    return _call("archive_search", {"query": query, "k": k})


@server.tool(structured_output=False)
def archive_read(
    paper_id: Annotated[str, Field(description="The paper's archive id.")],
) -> str:
    """Read a paper of the archive in full."""
    return _call("archive_read", {"paper_id": paper_id})


@server.tool(structured_output=False)
def submit_paper(
    title: Annotated[str, Field(min_length=1, max_length=300)],
    abstract: Annotated[str, Field(max_length=5000)],
    body: Annotated[str, Field(description="Markdown: method, results table, discussion.")],
    claims: Annotated[
        list[Claim], Field(description="Numbers reported, each with the attempt measuring it.")
    ],
    method: Annotated[dict[str, Any] | None, Field(description="The configuration used.")] = None,
    experiments: Annotated[
        list[dict[str, Any]] | None,
        Field(description="Graded attempts reported: [{attempt, config, scores}]."),
    ] = None,
    cited: Annotated[list[str] | None, Field(description="Archive ids built on.")] = None,
    revises: Annotated[
        str | None, Field(description="Your earlier paper this is a new version of.")
    ] = None,
) -> str:
    """Publish a paper to the shared archive (or a new version of your own paper)."""
    args: dict[str, Any] = {"title": title, "abstract": abstract, "body": body, "claims": claims}
    optional = {"method": method, "experiments": experiments, "cited": cited, "revises": revises}
    args |= {key: value for key, value in optional.items() if value is not None}
    return _call("submit", args)


@server.tool(structured_output=False)
def budget() -> str:
    """What is left of the run's budget (attempts, tokens, time)."""
    return _call("budget", {})


@server.tool(structured_output=False)
def finish(summary: Annotated[str, Field(description="What the run found.")]) -> str:
    """End the run. Nothing more can be done in it afterwards."""
    return _call("finish", {"summary": summary})


if __name__ == "__main__":
    server.run()
