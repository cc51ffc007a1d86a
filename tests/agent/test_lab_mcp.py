"""The lab's MCP server, started over stdio by the `mcp` package's own client, against a
fake worker end of the lab socket."""

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from tests.agent.fake_lab import FakeLab, reply
from workers.agent.inside import FOLDER

SERVER = FOLDER / "lab_mcp.py"
T = TypeVar("T")


def with_session(socket: Path, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    """What `use` returns, given a session with the server started on `socket`."""
    server = StdioServerParameters(
        command=sys.executable, args=[str(SERVER)], env={"LABRXIV_LAB_SOCKET": str(socket)}
    )

    async def session() -> T:
        with anyio.fail_after(60):
            async with stdio_client(server) as (read, write), ClientSession(read, write) as s:
                await s.initialize()
                return await use(s)

    return anyio.run(session)


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def test_the_server_lists_the_six_tools_with_their_parameters(tmp_path: Path) -> None:
    async def listed(session: ClientSession) -> dict[str, dict[str, Any]]:
        return {t.name: t.input_schema for t in (await session.list_tools()).tools}

    schemas = with_session(tmp_path / "lab.sock", listed)
    parameters = {name: set(schema["properties"]) for name, schema in schemas.items()}
    assert parameters == {
        "evaluate": set(),
        "archive_search": {"query", "k"},
        "archive_read": {"paper_id"},
        "submit_paper": {
            "title",
            "abstract",
            "body",
            "claims",
            "method",
            "experiments",
            "cited",
            "revises",
        },
        "budget": set(),
        "finish": {"summary"},
    }
    required = {name: schema.get("required", []) for name, schema in schemas.items()}
    assert required["archive_search"] == ["query"]
    assert required["archive_read"] == ["paper_id"]
    assert required["submit_paper"] == ["title", "abstract", "body", "claims"]
    assert required["finish"] == ["summary"]
    assert schemas["archive_search"]["properties"]["k"]["default"] == 5
    claim = schemas["submit_paper"]["$defs"]["Claim"]
    assert set(claim["properties"]) == {"subtask", "metric", "value", "attempt"}


def test_evaluate_reaches_the_lab_socket_and_returns_its_output(tmp_path: Path) -> None:
    answers = {"evaluate": reply("attempt 1: accuracy 0.91")}
    with FakeLab(tmp_path / "lab.sock", answers) as lab:
        result = with_session(lab.path, lambda s: s.call_tool("evaluate", {}))
    assert (result.is_error, text(result)) == (False, "attempt 1: accuracy 0.91")
    assert lab.received == [("evaluate", {})]


def test_submit_paper_sends_what_was_given(tmp_path: Path) -> None:
    claims = [{"subtask": "split-1", "metric": "accuracy", "value": 0.91, "attempt": 1}]
    paper = {"title": "T", "abstract": "A", "body": "# T\n", "claims": claims, "cited": ["p-1"]}
    with FakeLab(tmp_path / "lab.sock", {"submit": reply("submitted p-9")}) as lab:
        result = with_session(lab.path, lambda s: s.call_tool("submit_paper", paper))
    assert (result.is_error, text(result)) == (False, "submitted p-9")
    assert lab.received == [("submit", paper)]


def test_a_refusal_and_an_unreachable_lab_are_tool_errors(tmp_path: Path) -> None:
    answers = {"finish": reply("the run is already finished", exit_code=1)}

    async def both(session: ClientSession) -> tuple[CallToolResult, CallToolResult]:
        refused = await session.call_tool("finish", {"summary": "done"})
        lab.stop()
        (tmp_path / "lab.sock").unlink()
        return refused, await session.call_tool("budget", {})

    with FakeLab(tmp_path / "lab.sock", answers) as lab:
        refused, unreachable = with_session(lab.path, both)
    assert refused.is_error and "the run is already finished" in text(refused)
    assert unreachable.is_error and "no lab socket" in text(unreachable)
    assert lab.received == [("finish", {"summary": "done"})]
