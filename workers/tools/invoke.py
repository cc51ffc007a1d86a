"""The one wrapper that runs a tool and turns what happened into events.

Implementations never emit events themselves: this wrapper records the call before
it runs (`tool.invoked`), the outcome after (`tool.returned`, with the full output in
a blob when it is longer than the preview, and what the call changed in the workspace,
`watch.py`), a refusal as `integrity.violation`, and whatever the tool caused (a score,
a paper, a retrieval) after that.
"""

import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from events.blobs import blob_ref
from events.payloads import IntegrityViolation, Payload, ToolInvoked, ToolReturned
from events.storable import storable
from workers.sandbox.base import SandboxViolation
from workers.tools import archive, evaluate, files, finish, shell  # noqa: F401 - declare tools
from workers.tools.base import TOOLS, ToolError, ToolResult
from workers.tools.changes import Changes
from workers.tools.contents import kept_contents
from workers.tools.env import ToolEnv
from workers.tools.watch import WorkspaceWatch

PREVIEW = 4000


@dataclass
class Invocation:
    """The events and blobs one tool call produced, and whether the run is done."""

    payloads: list[Payload]
    blobs: dict[str, bytes] = field(default_factory=dict)
    finish: bool = False
    output: str = ""


def invoke(env: ToolEnv, name: str, args: dict[str, Any], call_id: str) -> Invocation:
    """Run tool `name` with `args` for the run in `env`; never raises for the lab's mistakes."""
    invoked = ToolInvoked(call_id=call_id, tool=name, args=args)
    spec = TOOLS.get(name)
    # Before the tool runs; it ends after a refusal or a `ToolError` too, since a call that
    # failed may still have changed files (the solution ran, then its grading failed).
    watch = (
        WorkspaceWatch(env.sandbox, call_id, name, args)
        if spec and spec.changes_workspace
        else None
    )
    started = time.monotonic()
    extra: list[Payload] = []
    try:
        result = _call(env, name, args)
    except SandboxViolation as exc:
        extra.append(
            IntegrityViolation(
                kind=exc.kind, detail=exc.detail, tool=name, call_id=call_id, path=exc.path
            )
        )
        result = ToolResult(f"refused: {exc.detail}", exit_code=126)
    except ToolError as exc:
        result = ToolResult(f"error: {exc}", exit_code=1)
    for event in result.events:
        if isinstance(event, IntegrityViolation):
            event = event.model_copy(update={"tool": name, "call_id": call_id})
        extra.append(event)
    output = storable(result.output)  # binary output is shown escaped
    data = output.encode()
    long = len(output) > PREVIEW
    blobs = {blob_ref(data).sha256: data} if long else {}
    duration_s = round(time.monotonic() - started, 3)  # the tool's own time, not the looks'
    changes = watch.finish(result.files_written) if watch else Changes(tuple(result.files_written))
    if watch:  # what a fork needs to rebuild the workspace without running the tool again
        blobs |= kept_contents(env.sandbox.root, changes.written)
    returned = ToolReturned(
        call_id=call_id,
        tool=name,
        exit_code=result.exit_code,
        duration_s=duration_s,
        preview=output[:PREVIEW],
        output=blob_ref(data) if long else None,
        files_written=list(changes.written),
        files_deleted=list(changes.deleted),
        files_unlisted=changes.unlisted,
        limit=result.limit,
    )
    return Invocation([invoked, returned, *extra], blobs, result.finish, output)


def _call(env: ToolEnv, name: str, args: dict[str, Any]) -> ToolResult:
    spec = TOOLS.get(name)
    if spec is None:
        raise ToolError(f"unknown tool {name!r}; the tools are {', '.join(sorted(TOOLS))}")
    try:
        parsed = spec.args.model_validate(args)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()
        )
        raise ToolError(f"bad arguments for {name}: {problems}") from None
    return spec.fn(env, **dict(parsed))
