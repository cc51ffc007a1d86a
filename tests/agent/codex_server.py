"""A scripted model for Codex CLI: streamed Responses API answers, as OpenAI sends them.

Codex (0.171) asks `POST {base_url}/responses` with `stream: true` and reads server-sent
events: `response.created`, per output item `response.output_item.added`, its deltas
(`response.output_text.delta`, `response.function_call_arguments.delta`) and
`response.output_item.done`, then `response.completed` with the whole response and its
`usage`; a stream without `response.completed` is an error to it. It runs shell commands
through its function tool `exec_command` (`{"cmd": ...}`, output after `yield_time_ms`,
or a session id to poll with `write_stdin` when the command still runs) and answers each
call with a `function_call_output` item of the same `call_id` in its next request, which
replays the whole conversation (`store: false`).

`CodexResearcher` is the lab the tests play, deciding each answer from what the request
shows: `cat TASK.md`, `lab evaluate` (its output asked for after 250 ms, the least
Codex waits, then polled with `write_stdin` while it runs), a paper and claims file
claiming the score exactly as `lab evaluate` printed it (written by `apply_patch`, which
Codex applies itself), `lab submit`, the `budget`
tool of the lab's MCP server when the request lists it (`mcp__lab`), `lab finish`
(unless told not to), then a final message. It keeps the usage it billed.

    with FakeServer(default=CodexResearcher()) as server:
        ...  # codex exec with a provider whose base_url is server.url
"""

import itertools
import json
import re
import threading
from collections.abc import Sequence
from typing import Any

from tests.llm.fake_server import Received, Scripted

SCORE = re.compile(r"attempt (\d+): final_accuracy=([0-9.eE+-]+)")
RUNNING = re.compile(r"session ID (\d+)")
MCP_BUDGET = "mcp__lab.budget"
"""The lab MCP server's `budget` tool, as Codex lists it (a namespace tool)."""
FINAL = "Measured the starter, published the paper and finished."


def responses_usage(prompt: int, output: int) -> dict[str, Any]:
    """A Responses API `usage` object."""
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


def message_item(item_id: str, text: str) -> dict[str, Any]:
    """An assistant message output item."""
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": content,
    }


def call_item(item_id: str, call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A function call output item; `name` as `namespace.tool` calls a tool of a namespace
    tool (Codex lists each MCP server as one, `mcp__<server>`)."""
    namespace, _, tool = name.rpartition(".")
    item = {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": tool,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    return item | ({"namespace": namespace} if namespace else {})


def stream(
    response_id: str, model: str, items: Sequence[dict[str, Any]], usage: dict[str, Any]
) -> Scripted:
    """The server-sent events of one streamed response holding `items`."""
    base = {"id": response_id, "object": "response", "created_at": 1767225600, "model": model}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": base | {"status": "in_progress", "output": []}}
    ]
    for index, item in enumerate(items):
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": _started(item),
            }
        )
        events.extend(_deltas(index, item))
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    done = base | {"status": "completed", "output": list(items), "usage": usage}
    events.append({"type": "response.completed", "response": done})
    text = "".join(
        f"event: {event['type']}\ndata: {json.dumps(event | {'sequence_number': number})}\n\n"
        for number, event in enumerate(events)
    )
    return Scripted(body=text, headers={"content-type": "text/event-stream"})


def _started(item: dict[str, Any]) -> dict[str, Any]:
    if item["type"] == "message":
        return item | {"status": "in_progress", "content": []}
    return item | {"status": "in_progress", "arguments": ""}


def _deltas(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        text = item["content"][0]["text"]
        return [{"type": "response.output_text.delta", **where, "content_index": 0, "delta": text}]
    return [{"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]}]


def paper_patch(attempt: str, value: str) -> str:
    """An `apply_patch` command (Codex applies it itself) adding PAPER.md and claims.json,
    claiming `value` of `attempt`."""
    paper = [
        "# Starter accuracy on continual digits",
        "",
        f"We measure the starter solution: attempt {attempt} scored {value}.",
        "",
        "## Results",
        "",
        f"final_accuracy {value} (attempt {attempt}).",
    ]
    claims = (
        f'[{{"subtask": "final_accuracy", "metric": "accuracy", "value": {value}, '
        f'"attempt": {attempt}}}]'
    )
    lines = [
        "*** Begin Patch",
        "*** Add File: PAPER.md",
        *(f"+{line}" for line in paper),
        "*** Add File: claims.json",
        f"+{claims}",
        "*** End Patch",
    ]
    return "apply_patch <<'EOF'\n" + "\n".join(lines) + "\nEOF"


SUBMIT = "lab submit PAPER.md --claims claims.json"


class CodexResearcher:
    """The scripted lab: each answer chosen from the request's conversation so far."""

    def __init__(self, finish: bool = True) -> None:
        self.finish = finish
        """Whether it runs `lab finish` after submitting."""
        self.billed: list[dict[str, Any]] = []
        """The usage of every answer served, in order."""
        self.commands: list[str] = []
        """The commands it asked `exec_command` to run, in order."""
        self.tools: list[str] = []
        """The tools it called, in order (`namespace.tool` for a namespace's)."""
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def __call__(self, received: Received) -> Scripted:
        body = received.body if isinstance(received.body, dict) else {}
        items = [i for i in body.get("input") or [] if isinstance(i, dict)]
        asked = [_command(i) for i in items if i.get("type") == "function_call"]
        outputs = [_output(i) for i in items if i.get("type") == "function_call_output"]
        scores = [found for text in outputs for found in SCORE.findall(text)]
        tools = {str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
        with self._lock:
            number = next(self._ids)
            name, arguments = self._next(asked, outputs, scores, "mcp__lab" in tools)
            if name:
                item = call_item(f"fc_{number}", f"call_{number}", name, arguments)
                self.tools.append(name)
                if name == "exec_command":
                    self.commands.append(arguments["cmd"])
            else:
                item = message_item(f"msg_{number}", arguments["text"])
            usage = responses_usage(1000 + 150 * number, 40 + number)
            self.billed.append(usage)
        return stream(f"resp_{number}", str(body.get("model")), [item], usage)

    def _next(
        self, asked: list[str], outputs: list[str], scores: list[tuple[str, str]], mcp: bool
    ) -> tuple[str, dict[str, Any]]:
        """The next tool call (name, arguments), or ('', {"text": ...}) to end; `asked`:
        the commands and namespaced tools called so far, `mcp`: whether the lab's MCP
        server's tools are listed."""
        running = RUNNING.search(outputs[-1]) if outputs else None
        if "cat TASK.md" not in asked:
            return "exec_command", {"cmd": "cat TASK.md"}
        if not scores and running:
            return "write_stdin", {"session_id": int(running.group(1)), "yield_time_ms": 300000}
        if not scores and "lab evaluate" not in asked:
            return "exec_command", {"cmd": "lab evaluate", "yield_time_ms": 250}
        if not scores:
            return "", {
                "text": "lab evaluate printed no score: " + (outputs[-1] if outputs else "")
            }
        if not any(cmd.startswith("apply_patch") for cmd in asked):
            return "exec_command", {"cmd": paper_patch(*scores[-1])}
        if SUBMIT not in asked:
            return "exec_command", {"cmd": SUBMIT, "yield_time_ms": 30000}
        if mcp and MCP_BUDGET not in asked:
            return MCP_BUDGET, {}
        if self.finish and not any(cmd.startswith("lab finish") for cmd in asked):
            return "exec_command", {"cmd": "lab finish 'measured and published'"}
        return "", {"text": FINAL}


def _command(item: dict[str, Any]) -> str:
    """A function call item as `asked` lists it: the command, or `namespace.tool`."""
    if item.get("namespace"):
        return f"{item['namespace']}.{item.get('name')}"
    try:
        arguments = json.loads(item.get("arguments") or "{}")
    except ValueError:
        return ""
    return str(arguments.get("cmd", "")) if isinstance(arguments, dict) else ""


def _output(item: dict[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, list):
        return "".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
    return str(output or "")
