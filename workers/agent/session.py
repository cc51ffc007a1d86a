"""An agent's session: its process run in the run's sandbox, everything it does recorded.

One lab step takes the whole session (`AgentPolicy.runs_alone`): it writes TASK.md and the
`lab` command into the workspace, serves the lab socket (`workers.agent.server`), starts
the agent through the launcher (`inside/launcher.py`) and sends the run's events as they
happen (`workers.lab.emitter`):
- a lab-API call is the built-in tool's call, through the same wrapper
  (`workers.tools.invoke`), after the workspace's changes since the last look;
- a model call is recorded and relayed (`workers.agent.relay`) once the run's budgets
  allow it; the reported tool results its request carries, with the workspace's changes,
  come first, and the tool calls its answer reports after it;
- the end: the changes left, `agent.exited`, and the run's end (`done` after `finish`
  or a paper, `budget` when a limit stopped it, `error` otherwise, with the end of its
  stderr).
Calls are taken one at a time, in the order they arrive. A fork's first session
answers the calls its parent made before the fork point from the log first
(`workers.agent.replay`).
"""

import logging
import os
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from events.blobs import blob_ref
from events.ids import utcnow
from events.payloads import (
    BudgetExceeded,
    Payload,
    RunFinished,
    ToolInvoked,
    ToolReturned,
)
from events.payloads.agent import AgentConfig, AgentExited, AgentStarted, WorkspaceChanged
from events.payloads.run import ForkPoint
from runstate import RunState
from runstate.budget import ended_by, run_used, wall_used
from runstate.words import counted
from workers.agent import inside, reported
from workers.agent.answers import Unreadable, read_answer
from workers.agent.relay import ModelRelay, error_body
from workers.agent.replay import LabAnswer, ModelAnswer, Replay
from workers.agent.server import LabSocket, Replier
from workers.agent.taskfile import TASK_FILE, task_text
from workers.bus.base import BusStopped
from workers.lab import budget
from workers.lab.emitter import Emitter
from workers.lab.fork import restore
from workers.lab.lease import LeaseLost
from workers.lab.policies.base import StepInput
from workers.sandbox.base import Limits
from workers.sandbox.jail import WORKSPACE_MOUNT, interpreter_folders
from workers.tools.base import TOOLS
from workers.tools.changes import Changes, diff
from workers.tools.contents import kept_contents
from workers.tools.invoke import invoke
from workers.tools.look import Snapshot

log = logging.getLogger(__name__)

LAB_DIR = ".labrxiv"
SOCKET = f"{LAB_DIR}/lab.sock"
DEFAULT_WALL = 3600.0
"""The agent's wall-time limit when the run has none."""
AGENT_LIMITS = Limits(
    memory_bytes=8 * 1024**3,
    processes=512,
    output_bytes=4 * 1024**2,
)
"""The agent's process tree: more memory and processes than a tool call (an agent and its
interpreter); its output is bounded by the launcher, well within `output_bytes`."""
TAIL_CHARS = 2000
FINISH_GRACE = 10.0
"""Seconds an agent has to exit by itself after `lab finish` before it is stopped."""
LAB_CALLS = {
    "evaluate": "evaluate",
    "archive_search": "search_archive",
    "archive_read": "read_paper",
    "submit": "submit_paper",
    "finish": "finish",
}
"""The lab API's calls, by the built-in tool each is."""


class Halted(Exception):
    """The session may send nothing more: its lease was lost or the bus stopped."""


@dataclass
class _Ended:
    """Why the session stopped the agent, and the events that say so."""

    reason: str
    events: list[Payload] = field(default_factory=list)


class AgentSession:
    """One start of the agent, for the run in `step`."""

    def __init__(
        self, step: StepInput, emitter: Emitter, reviews: str = "", replay: Replay | None = None
    ) -> None:
        self.step = step
        self.replay = replay
        self.emitter = emitter
        config = step.state.started.agent
        assert config is not None
        self.config: AgentConfig = config
        self.reviews = reviews
        self.sandbox = step.env.sandbox
        self.root = self.sandbox.root
        self._serial = threading.Lock()
        self._stop = threading.Event()
        self._ended: _Ended | None = None
        self._finished = False
        self._pending: list[reported.Pending] = []
        self._looked: Snapshot | None = None
        self._lab_calls = 0
        self._closed = False
        """The agent has ended: calls still queued are refused."""
        self._papers_before = len(step.state.papers)
        """Papers of the run before this session (a revision must add one)."""
        self._halted: Exception | None = None
        """Why the session may send nothing more (its lease lost, the bus stopped)."""
        gateway = step.gateway(step.state.started.llm)
        self.relay = ModelRelay(gateway.base_url, gateway.key, gateway.prices, self._emit)

    # The session's life.

    def run(
        self, session: int, restored: bool, detail: str = ""
    ) -> tuple[list[Payload], dict[str, bytes]]:
        """Run the agent to its end, sending everything it does and how it ended; nothing is
        left for the lab step to send."""
        self._prepare()
        self.emitter.on_lost(self._lease_lost)
        self._looked = self.sandbox.look()
        socket = LabSocket(
            self.root / SOCKET, self, frozenset({os.geteuid(), self.root.stat().st_uid})
        )
        started = time.monotonic()
        try:
            command = list(self.config.command)
            began = AgentStarted(session=session, command=command, restored=restored, detail=detail)
            try:
                self._emit([began])
            except Halted:
                return [], {}
            result = self.sandbox.exec(
                [
                    "python",
                    f"{WORKSPACE_MOUNT}/{LAB_DIR}/lib/launcher.py",
                    f"{WORKSPACE_MOUNT}/{SOCKET}",
                    "--",
                    *command,
                ],
                limits=self._limits(),
                env=self._env(),
            )
        finally:
            self._stop.set()
            socket.close()
            self.relay.close()
        if self._halted is not None:  # another take has the run, or the bus stopped
            return [], {}
        with self._serial:
            self._closed = True
            tail: list[Payload] = []
            blobs: dict[str, bytes] = {}
            for pending in self._pending:
                tail.append(
                    ToolReturned(
                        call_id=pending.call_id,
                        tool=pending.tool,
                        exit_code=1,
                        duration_s=0.0,
                        preview="(the agent reported no result before it ended)",
                        reported=True,
                    )
                )
            changed, kept = self._changes()
            if changed is not None:
                tail.append(self._changed("end", changed))
                blobs |= kept
            outputs = {}
            for name in ("stdout", "stderr"):
                data = getattr(result, name).encode()
                if data:
                    ref = blob_ref(data)
                    blobs[ref.sha256] = data
                    outputs[name] = ref
            stopped = self._ended.reason if self._ended else None
            tail.append(
                AgentExited(
                    session=session,
                    exit_code=result.exit_code,
                    duration_s=round(time.monotonic() - started, 3),
                    stopped=stopped,
                    limit=result.limit,
                    stdout=outputs.get("stdout"),
                    stderr=outputs.get("stderr"),
                    stderr_tail=result.stderr[-TAIL_CHARS:],
                )
            )
            ending = tail + self._end(result.exit_code, result.limit, result.stderr)
            try:  # through the emitter: sent only while the session holds the run
                self._emit(ending, blobs)
            except Halted:
                pass
            return [], {}

    def _end(self, code: int, limit: str | None, stderr: str) -> list[Payload]:
        state = self.emitter.state
        if self._ended is not None:
            return self._ended.events
        if limit == "time":
            wall = state.started.budget.wall_seconds
            if wall is not None:  # the sandbox stopped the agent at what was left of it
                over = budget.over_budget(state, utcnow())
                spent = BudgetExceeded(budget="wall_seconds", limit=wall, used=wall)
                return ended_by(over if over is not None else spent)
        wrote = len(state.papers) > self._papers_before
        if self._finished or wrote:
            if state.started.review_rounds and wrote and not self._finished:
                return []  # its paper's reviews come next (`AgentPolicy`)
            how = (
                "finished" if self._finished else f"{counted(len(state.papers), 'paper')} submitted"
            )
            return [RunFinished(reason="done", detail=f"{how}; the agent exited with {code}")]
        why = last_words(stderr)
        stopped = f" ({limit} limit)" if limit else ""
        detail = (
            f"the agent exited with {code}{stopped} before finishing or submitting a paper: {why}"
        )
        return [RunFinished(reason="error", detail=detail)]

    def _prepare(self) -> None:
        """TASK.md, the `lab` command, the launcher and the profile's files, in the workspace.

        No process of the run is alive now (a session's jail dies with it), but an earlier
        session's agent may have left `.labrxiv` a link, or links inside it, for the worker
        to write through: it is removed and made afresh, folders with `mkdir` that refuses
        what is there, files with `O_EXCL | O_NOFOLLOW`."""
        card = self.step.bundle.card
        self.sandbox.write(TASK_FILE, task_text(card, self.emitter.state, self.reviews).encode())
        lab = self.root / LAB_DIR
        if lab.is_symlink() or (lab.exists() and not lab.is_dir()):
            lab.unlink()
        elif lab.exists():
            shutil.rmtree(lab)
        python = getattr(self.sandbox, "python", "python3")
        files: dict[str, tuple[bytes, int]] = {
            f"lib/{name}": ((inside.FOLDER / name).read_bytes(), 0o644) for name in inside.FILES
        }
        for name, script in (("lab", "lab.py"), ("lab-mcp", "lab_mcp.py")):
            text = f'#!/bin/sh\nexec {python} {WORKSPACE_MOUNT}/{LAB_DIR}/lib/{script} "$@"\n'
            files[f"bin/{name}"] = (text.encode(), 0o755)
        for name, text in self.config.files.items():
            files[f"agent/{Path(name).name}"] = (text.encode(), 0o644)
        for sub in ("", "lib", "bin", *(["agent"] if self.config.files else [])):
            (lab / sub).mkdir(mode=0o755)
            (lab / sub).chmod(0o755)  # whatever the umask
        for relative, (data, mode) in files.items():
            fd = os.open(lab / relative, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(lab / relative, mode, follow_symlinks=False)
        if self.config.install:
            install = Path(self.config.install)
            self.sandbox.show(install)
            if (install / "pyvenv.cfg").is_file():  # its programs run the Python it points at
                for folder in interpreter_folders(str(install / "bin" / "python")):
                    if folder != install.resolve() and folder.is_dir():
                        self.sandbox.show(folder)
        self.sandbox.loopback = True

    def _env(self) -> dict[str, str]:
        python_dir = str(Path(getattr(self.sandbox, "python", "/usr/bin/python3")).parent)
        path = [
            f"{WORKSPACE_MOUNT}/{LAB_DIR}/bin",
            python_dir,
            "/usr/local/bin",
            "/usr/bin",
            "/bin",
        ]
        llm = self.emitter.state.started.llm
        return {
            **self.config.env,
            "PATH": ":".join(path),
            "HOME": WORKSPACE_MOUNT,
            "OPENAI_API_KEY": "labrxiv",
            "ANTHROPIC_API_KEY": "labrxiv",
            "OPENAI_MODEL": llm.model if llm else "",
            "LABRXIV_LAB_SOCKET": f"{WORKSPACE_MOUNT}/{SOCKET}",
            "LABRXIV_LAB_MCP": f"{WORKSPACE_MOUNT}/{LAB_DIR}/lib/lab_mcp.py",
            "LABRXIV_TASK": f"{WORKSPACE_MOUNT}/{TASK_FILE}",
        }

    def _limits(self) -> Limits:
        state = self.emitter.state
        wall = state.started.budget.wall_seconds
        if wall is None:
            seconds = DEFAULT_WALL
        else:
            seconds = max(1.0, wall - wall_used(state, utcnow()))
        return Limits(
            wall_seconds=seconds,
            cpu_seconds=int(seconds) * 4 + 60,
            memory_bytes=AGENT_LIMITS.memory_bytes,
            file_bytes=self.sandbox.limits.file_bytes,
            output_bytes=AGENT_LIMITS.output_bytes,
            processes=AGENT_LIMITS.processes,
            disk_bytes=self.sandbox.limits.disk_bytes,
        )

    # What the socket serves (`workers.agent.server.Session`).

    def models(self) -> list[str]:
        llm = self.emitter.state.started.llm
        return [llm.model] if llm else []

    def wait_stop(self) -> None:
        self._stop.wait()

    def model_call(
        self, api: str, body: bytes, reply: Replier, asked: Mapping[str, str] | None = None
    ) -> None:
        try:
            self._model_call(api, body, reply, asked)
        except Halted as exc:
            if not reply.started:
                reply.start(503, {"content-type": "application/json", "x-should-retry": "false"})
                reply.write(error_body(f"labrxiv: the lab stopped: {exc}", "api_error", api=api))

    def _model_call(
        self, api: str, body: bytes, reply: Replier, asked: Mapping[str, str] | None
    ) -> None:
        with self._serial:
            if self._closed:
                reply.start(503, {"content-type": "application/json", "x-should-retry": "false"})
                said = "labrxiv: the agent's session has ended"
                reply.write(error_body(said, "api_error", api=api))
                return
            other = self._other_model(body)
            if other is not None:
                if api == "messages":  # as Anthropic's API answers a model it does not know
                    reply.start(404, {"content-type": "application/json"})
                    reply.write(error_body(other, "not_found_error", api=api))
                else:
                    reply.start(400, {"content-type": "application/json"})
                    reply.write(error_body(other, "invalid_request_error", "model_not_found"))
                return
            if self.replay is not None and self._replayed_model(api, body, reply):
                return
            refused = self._model_refusal()
            if refused is not None:
                self._refuse(api, refused, reply)
                return
            state = self.emitter.state
            self._report_results(api, body)
            request_id = f"{state.stream}:agent:{len(state.calls) + 1}"
            llm = state.started.llm
            model = llm.model if llm else ""
            relayed = self.relay.relay(api, body, request_id, model, reply, asked)
            if relayed.answer is not None:
                events, pending = reported.invoked(self.config.reports, relayed.answer, request_id)
                self._emit(list(events))
                self._pending += pending

    @staticmethod
    def _refuse(api: str, refused: str, reply: Replier) -> None:
        """A model call refused for a spent budget, as the agent's API says credit ran
        out: OpenAI's 429 `insufficient_quota`; Anthropic's 400 `invalid_request_error`
        (what its API answers a spent credit balance), which its clients do not retry."""
        headers = {"content-type": "application/json", "x-should-retry": "false"}
        if api == "messages":
            reply.start(400, headers)
            reply.write(error_body(refused, "invalid_request_error", api=api))
        else:
            reply.start(429, headers)
            reply.write(error_body(refused, "insufficient_quota", "insufficient_quota"))

    def lab_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        try:
            return self._lab_call(name, args)
        except Halted as exc:
            return {"output": f"the lab stopped: {exc}", "exit_code": 3, "finished": True}

    def _other_model(self, body: bytes) -> str | None:
        """Why a request for a model that is not the run's is refused (None: it is the
        run's, or names none): the worker's key pays for it, and the budgets price the
        run's models."""
        llm = self.emitter.state.started.llm
        asked = orjson.loads(body).get("model")
        allowed = {llm.model, *llm.phase_models.values()} if llm else set()
        if asked is None or not allowed or asked in allowed:
            return None
        return f"labrxiv: this lab's model is {', '.join(sorted(allowed))}, not {asked!r}"

    def _lab_call(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if name != "budget" and name not in LAB_CALLS:
            known = ", ".join(sorted([*LAB_CALLS, "budget"]))
            return {"error": f"no lab call {name!r}; the calls are {known}"}
        with self._serial:
            if self._ended is not None or self._finished or self._closed:
                return {
                    "output": "the run has finished: nothing more can be done in it",
                    "exit_code": 3,
                    "finished": True,
                }
            if self.replay is not None:
                replayed = self._replayed_lab(name, args)
                if replayed is not None:
                    return replayed
            over = self._run_refusal(name)
            if over is not None:
                return {"output": over, "exit_code": 3, "finished": True}
            self._flush("lab_call")
            self._lab_calls += 1
            call_id = f"lab-{self._lab_calls}@{self.emitter.state.version + 1}"
            if name == "budget":
                text = self._budget_left()
                self._emit(
                    [
                        ToolInvoked(call_id=call_id, tool="budget", args={}),
                        ToolReturned(
                            call_id=call_id,
                            tool="budget",
                            exit_code=0,
                            duration_s=0.0,
                            preview=text,
                        ),
                    ]
                )
                return {"output": text, "exit_code": 0, "finished": False}
            tool = LAB_CALLS[name]
            env = self.step.env
            state = self.emitter.state
            env.run.attempts, env.run.papers = len(state.attempts), len(state.papers)
            outcome = invoke(env, tool, _tool_args(name, args), call_id=call_id)
            self._emit(outcome.payloads, outcome.blobs)
            self._looked = self.sandbox.look()
            code = next((p.exit_code for p in outcome.payloads if isinstance(p, ToolReturned)), 1)
            if outcome.finish:
                self._finish()
            return {"output": outcome.output, "exit_code": code, "finished": outcome.finish}

    def _finish(self) -> None:
        """The agent called `finish`: it has `FINISH_GRACE` seconds to exit by itself."""
        self._finished = True
        grace = threading.Timer(FINISH_GRACE, self._stop.set)
        grace.daemon = True
        grace.start()

    # A fork's replay (`workers.agent.replay`): its parent's calls answered from the log.

    def _replayed_model(self, api: str, body: bytes, reply: Replier) -> bool:
        """Answer the model request `body` from the parent's log when it is the request
        recorded next (True); record a divergence, or do nothing, when it goes live."""
        assert self.replay is not None
        taken = self.replay.model(body)
        if not isinstance(taken, ModelAnswer):
            if taken is not None:
                self._emit([taken])
            return False
        # What the request reports and what changed before it are inherited already.
        for result in reported.results(api, body, self._pending):
            self._pending.remove(result.pending)
        self._looked = self.sandbox.look()
        streamed = bool(orjson.loads(body).get("stream"))
        kind = "text/event-stream" if streamed else "application/json"
        reply.start(200, {"content-type": kind})
        try:
            reply.write(taken.response)
        except OSError:
            pass
        try:
            answer = read_answer(api, taken.response, streamed)
        except Unreadable:
            return True
        events, pending = reported.invoked(self.config.reports, answer, taken.request_id)
        # The fork point may fall between an answer and the calls it reported.
        self._emit([e for e in events if e.call_id not in self.replay.reported])
        self._pending += pending
        return True

    def _replayed_lab(self, name: str, args: dict[str, Any]) -> dict[str, Any] | None:
        """The parent's recorded answer to lab call `name` when it is the call recorded
        next; None (after recording a divergence, if it is one) when it goes live."""
        assert self.replay is not None
        tool = LAB_CALLS.get(name, name)
        taken = self.replay.lab(tool, {} if name == "budget" else _tool_args(name, args))
        if not isinstance(taken, LabAnswer):
            if taken is not None:
                self._emit([taken])
            return None
        self._lab_calls += 1
        self._looked = self.sandbox.look()
        finished = tool == "finish" and taken.exit_code == 0
        if finished:
            self._finish()
        return {"output": taken.output, "exit_code": taken.exit_code, "finished": finished}

    # Budgets.

    def _run_refusal(self, name: str) -> str | None:
        """Why the run cannot take the call `name` (its wall time, steps or attempts are
        spent: the run ends `budget` and the agent is stopped); None when it can."""
        spent = self._stop_if_over_budget()
        if spent is not None:
            return f"the run's {spent} budget is spent: the run has ended"
        if name == "evaluate":
            ended = budget.out_of_attempts(self.emitter.state)
            if ended is not None:
                self._stop_for("attempts", ended)
                return "the run's attempts budget is spent: the run has ended"
        return None

    def _model_refusal(self) -> str | None:
        """Why the next model call is refused (the run has ended, or a budget of the run or
        its campaign is spent: the run then ends); None when it may be made."""
        if self._ended is not None or self._finished:
            return "labrxiv: the run has ended; no more model calls are made for it"
        spent = self._stop_if_over_budget()
        if spent is not None:
            return f"labrxiv: the run's {spent} budget is spent"
        state = self.emitter.state
        campaign = (
            budget.campaign_budget(self.step.streams, self.step.spend, state.campaign, state.stream)
            if state.campaign
            else None
        )
        llm = state.started.llm
        model = llm.model if llm else ""
        unpriced = model if self.relay.prices.price_of(model) is None else None
        ended = budget.over_model_budget(state, self.step.state, campaign, unpriced)
        if ended is None:
            return None
        said = next((p for p in ended if isinstance(p, BudgetExceeded)), None)
        reason = said.budget if said else "model"
        self._stop_for(reason, ended)
        finished = next((p for p in ended if isinstance(p, RunFinished)), None)
        return f"labrxiv: {finished.detail if finished else reason}"

    def _stop_if_over_budget(self) -> str | None:
        """The run's wall-time or step limit that is used up, after ending the run on it
        and stopping the agent; None while both have some left."""
        over = budget.over_budget(self.emitter.state, utcnow())
        if over is None:
            return None
        self._stop_for(over.budget, ended_by(over))
        return over.budget

    def _stop_for(self, reason: str, events: list[Payload]) -> None:
        self._ended = _Ended(reason, events)
        self._stop.set()

    def _budget_left(self) -> str:
        state = self.emitter.state
        limits = state.started.budget
        used = run_used(state, utcnow())
        lines = []
        for name, value in used.items():
            limit = getattr(limits, name)
            shown = f"{value:.6g}"
            left = "no limit" if limit is None else f"{max(0, limit - value):.6g} left of {limit:g}"
            lines.append(f"{name}: used {shown}; {left}")
        if state.spend.unknown_cost:
            lines.append(f"model calls of unknown cost: {state.spend.unknown_cost}")
        return "\n".join(lines)

    # The workspace and the log.

    def _report_results(self, api: str, body: bytes) -> None:
        """Record the results of reported calls that `body` carries, the workspace's
        changes since the last look with the last of them (or on their own)."""
        found = reported.results(api, body, self._pending)
        changed, kept = self._changes()
        events: list[Payload] = []
        now = time.monotonic()
        for index, result in enumerate(found):
            self._pending.remove(result.pending)
            last = index == len(found) - 1
            events.append(
                ToolReturned(
                    call_id=result.pending.call_id,
                    tool=result.pending.tool,
                    exit_code=0,
                    duration_s=round(max(0.0, now - result.pending.asked_at), 3),
                    preview=result.output[:4000],
                    files_written=list(changed.written) if last and changed else [],
                    files_deleted=list(changed.deleted) if last and changed else [],
                    files_unlisted=changed.unlisted if last and changed else 0,
                    reported=True,
                )
            )
        if changed is not None and not found:
            events.append(self._changed("model_call", changed))
        self._emit(events, kept if changed is not None else {})

    def _flush(self, at: Literal["lab_call", "model_call", "end"]) -> None:
        changed, kept = self._changes()
        if changed is not None:
            self._emit([self._changed(at, changed)], kept)

    def _changes(self) -> tuple[Changes | None, dict[str, bytes]]:
        """What changed since the last look (None: nothing), with the contents kept."""
        after = self.sandbox.look()
        before = self._looked if self._looked is not None else after
        changes = diff(self.root, before, after)
        self._looked = after
        if not changes.written and not changes.deleted and not changes.unlisted:
            return None, {}
        return changes, kept_contents(self.root, changes.written)

    @staticmethod
    def _changed(
        at: Literal["lab_call", "model_call", "end"], changes: Changes
    ) -> WorkspaceChanged:
        return WorkspaceChanged(
            at=at,
            files_written=list(changes.written),
            files_deleted=list(changes.deleted),
            files_unlisted=changes.unlisted,
        )

    def _lease_lost(self) -> None:
        """Another take has the run (this worker stalled past its lease): stop the agent
        now, before the take rebuilds the workspace under it, and send nothing more."""
        if self._halted is None:
            state = self.emitter.state
            self._halted = LeaseLost(state.stream, state.version + 1)
            log.warning("%s: %s; stopping the agent", state.stream, self._halted)
        self._stop.set()

    def _emit(self, payloads: list[Payload], blobs: dict[str, bytes] | None = None) -> RunState:
        """Send events; once the session may send nothing more (`Halted`), stop the agent."""
        if self._halted is not None:
            raise Halted(str(self._halted))
        try:
            return self.emitter.emit(payloads, blobs)
        except (LeaseLost, BusStopped) as exc:
            self._halted = exc
            self._stop.set()
            log.warning("%s: %s; stopping the agent", self.emitter.state.stream, exc)
            raise Halted(str(exc)) from exc


def last_words(stderr: str) -> str:
    """The last line of `stderr` that says something (an exception's message), without
    the frame a traceback of an exception group draws around it."""
    lines = [line.strip().strip("|+-").strip() for line in stderr.splitlines()]
    said = [line for line in lines if any(c.isalnum() for c in line)]
    return said[-1][:300] if said else "no output on stderr"


def _tool_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The built-in tool's arguments for lab call `name` (unknown ones are the tool's to
    refuse, with its own words)."""
    if name == "submit":
        known = TOOLS["submit_paper"].args.model_fields
        return {k: v for k, v in args.items() if v is not None or k not in known}
    return args


def rebuild_workspace(step: StepInput, state: RunState, changes: bool = True) -> None:
    """The run's workspace as its log has it: the starter, then every change recorded
    (`changes`; without, the starter alone: a fork's agent redoes its own changes)."""
    root = step.env.sandbox.root
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(step.bundle.workspace_dir, root)
    if changes:
        restore(step.store, root, ForkPoint(run=state.stream, step=0, version=state.version))
    (root / ".labrxiv-ready").write_text(state.stream)
    step.env.sandbox.prepare()
