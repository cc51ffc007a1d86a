"""A function-calling agent on the lab's MCP tools: an OpenAI-compatible model calls them.

    python openai_mcp_agent.py [LAB_MCP [MODEL]]

LAB_MCP is the path of lab_mcp.py (default: env LABRXIV_LAB_MCP), MODEL the model's
name (default: env OPENAI_MODEL); OPENAI_API_KEY and OPENAI_BASE_URL set the endpoint.
The task is TASK.md in the working directory. The agent stops when the model answers
without a tool call, after `finish`, or after LABRXIV_AGENT_STEPS answers (default 50).
"""

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import cast

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import TextContent, Tool
from openai import AsyncOpenAI
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)


def declaration(tool: Tool) -> ChatCompletionFunctionToolParam:
    """The OpenAI function declaration of an MCP tool."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema,
        },
    }


async def call(session: ClientSession, name: str, arguments: str) -> str:
    """The text of the tool's result ("error: …" when it failed)."""
    try:
        args = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        return f"error: the arguments are not JSON ({exc})"
    result = await session.call_tool(name, args)
    text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
    return f"error: {text}" if result.is_error else text


async def run(lab_mcp: str, model: str, steps: int) -> None:
    """Work on TASK.md with the lab's tools until done."""
    labrxiv_env = {k: v for k, v in os.environ.items() if k.startswith("LABRXIV_")}
    server = StdioServerParameters(command=sys.executable, args=[lab_mcp], env=labrxiv_env)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [declaration(t) for t in (await session.list_tools()).tools]
        messages: list[ChatCompletionMessageParam] = [
            {"role": "user", "content": Path("TASK.md").read_text()}
        ]
        client = AsyncOpenAI()
        for _ in range(steps):
            answer = await client.chat.completions.create(
                model=model, messages=messages, tools=tools
            )
            message = answer.choices[0].message
            calls = [c for c in message.tool_calls or () if c.type == "function"]
            if not calls:
                print(message.content or "")
                return
            # The answer goes back as it came: its text and its tool calls, ids included.
            sent = message.model_dump(include={"role", "content", "tool_calls"}, exclude_none=True)
            messages.append(cast(ChatCompletionAssistantMessageParam, sent))
            for c in calls:
                output = await call(session, c.function.name, c.function.arguments)
                print(f"{c.function.name}: {output[:200]}", file=sys.stderr)
                messages.append({"role": "tool", "tool_call_id": c.id, "content": output})
            if any(c.function.name == "finish" for c in calls):
                return


if __name__ == "__main__":
    lab_mcp = sys.argv[1] if len(sys.argv) > 1 else os.environ["LABRXIV_LAB_MCP"]
    model = sys.argv[2] if len(sys.argv) > 2 else os.environ["OPENAI_MODEL"]
    asyncio.run(run(lab_mcp, model, int(os.environ.get("LABRXIV_AGENT_STEPS", "50"))))
