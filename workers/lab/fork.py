"""Forks of runs: start one (`start_fork`), and rebuild its workspace as of the fork
point (`restore`) from the contents its parent's tool calls kept in the log, so that no
tool runs again for the inherited steps.

The workspace a fork starts in is the task's starter workspace with, in log order, what
every inherited `tool.returned` lists applied to it: files deleted, files written (their
content from the blob table, `workers/tools/contents.py`), symlinks made again. A fork of
a fork replays its grandparent's first.
"""

import os
import uuid
from pathlib import Path, PurePosixPath

from events import EventStore
from events.ids import utcnow
from events.payloads import Budget, CampaignStarted, ForkPoint, LlmConfig, RunStarted
from events.payloads.integrity import BudgetExceeded, BudgetName
from events.payloads.run import BudgetSource
from events.streams import lab_run_stream
from runstate import loader
from runstate.budget import exceeded, run_used
from runstate.fork import fold_standing
from runstate.trajectory import Step, steps
from workers.bus.base import Bus, publish
from workers.errors import WorkerError
from workers.lab.budget import BUDGET_NAMES
from workers.lab.campaign import campaign_started, run_started
from workers.lab.policies import uses_model


class ForkError(WorkerError):
    """A fork cannot be made or its workspace cannot be rebuilt; the message says why."""


def fork_point(store: EventStore, run: str, step: int) -> tuple[ForkPoint, RunStarted, Step]:
    """Where a fork of `run` after its step `step` (replay's numbering) begins, `run`'s
    start, and that step; `ForkError` when the run has no such step or its workspace
    cannot be rebuilt. A step `run` inherited (a fork's, up to its fork point) is cut
    from the run that took it, so the new fork's `ForkPoint.run` names that run."""
    events = store.read_stream(run)
    if not events or not isinstance(events[0].payload, RunStarted):
        raise ForkError(f"no run {run} in the log")
    taken: Step | None = None
    # Steps as `labrxiv replay` numbers them: a fork's inherited steps first. A step it
    # inherited is cut from the run whose events hold it (its parent, or further up).
    try:
        for item, _ in steps(events, loader(store)):
            if item.number == step:
                taken = item
                break
    except ValueError as exc:  # a fork whose parent's events the log does not hold
        raise ForkError(f"cannot replay run {run}: {exc}") from None
    if taken is None:
        raise ForkError(f"run {run} has no step {step} (`labrxiv replay {run}` lists them)")
    owned = events if taken.stream == run else store.read_stream(taken.stream)
    if any(e.type == "run.finished" for e in owned[: taken.last_version + 1]):
        raise ForkError(f"run {run} had finished by step {step}: fork it at an earlier step")
    point = ForkPoint(run=taken.stream, step=step, version=taken.last_version)
    missing = unrestorable(store, point)
    if missing:
        raise ForkError(f"cannot rebuild the workspace of {run} at step {step}: {missing}")
    return point, events[0].payload, taken


def used_up_at(store: EventStore, point: ForkPoint, budget: Budget) -> BudgetExceeded | None:
    """The first of `budget`'s limits that what a fork at `point` inherits has used up
    (such a fork would end at once, `budget`), by the rule the lab applies; None when
    every limit leaves room."""
    load = loader(store)
    state = fold_standing(load(point.run, point.version), load)
    used = run_used(state, state.last_at)
    for name in BUDGET_NAMES:
        spent = exceeded(name, getattr(budget, name), used[name])
        if spent is not None:
            return spent
    return None


def fork_budget(parent: RunStarted, given: Budget) -> tuple[Budget, dict[BudgetName, BudgetSource]]:
    """A fork's limits: each one `given` by the command, else its parent's, which keeps
    where it came from (the card or the command that started the parent)."""
    limits: dict[BudgetName, float] = {}
    source: dict[BudgetName, BudgetSource] = {}
    for name in BUDGET_NAMES:
        value, inherited = getattr(given, name), getattr(parent.budget, name)
        if value is not None:
            limits[name], source[name] = value, "command"
        elif inherited is not None:
            limits[name] = inherited
            if name in parent.budget_source:  # a run recorded before sources were
                source[name] = parent.budget_source[name]
    return Budget.model_validate(limits), source


def start_fork(
    bus: Bus,
    point: ForkPoint,
    parent: RunStarted,
    mode: str,
    policy: str | None = None,
    llm: LlmConfig | None = None,
    budget: tuple[Budget, dict[BudgetName, BudgetSource]] | None = None,
    seed: int | None = None,
    sandbox: str | None = None,
) -> tuple[str, str]:
    """Publish a campaign of one run, the fork; returns (campaign id, fork stream).

    Settings not given are the parent's; `budget`: the fork's limits and where each came
    from (`fork_budget`). The budget counts the inherited part too."""
    limits, source = budget or (parent.budget, parent.budget_source)
    campaign = uuid.uuid4().hex[:12]
    now = utcnow()
    chosen = policy or parent.policy
    started = campaign_started(
        campaign,
        CampaignStarted(
            task=parent.task, labs=1, mode="archive" if mode == "archive" else "isolated"
        ),
        now,
    )
    stream = lab_run_stream(campaign, 0)
    run = RunStarted(
        task=parent.task,
        lab=parent.lab,
        policy=chosen,
        seed=parent.seed if seed is None else seed,
        budget=limits,
        budget_source=source,
        reads_archive=parent.reads_archive,
        archive_reads=parent.archive_reads,
        papers=parent.papers,
        llm=(llm or parent.llm) if uses_model(chosen) else None,
        agent=parent.agent if chosen == "agent" else None,
        forked_from=point,
        sandbox=sandbox,
    )
    first = run_started(stream, run, started, now)
    publish(bus, [started, first])
    return campaign, stream


def unrestorable(store: EventStore, point: ForkPoint) -> str:
    """Why the workspace at `point` cannot be rebuilt ('' when it can)."""
    problems = []
    for payload in _inherited_returns(store, point):
        if payload.get("files_unlisted"):
            problems.append(f"a call changed {payload['files_unlisted']} files beyond the list")
        for item in payload.get("files_written", []):
            if item.get("kind", "file") == "file" and (
                item.get("sha256") is None or store.get_blob(item["sha256"]) is None
            ):
                problems.append(f"{item['path']} ({item.get('size')} bytes) was not kept")
    return "; ".join(dict.fromkeys(problems))


def restore(store: EventStore, root: Path, point: ForkPoint) -> None:
    """Apply to `root` (a copy of the starter workspace) what the inherited tool calls
    changed, in log order."""
    for payload in _inherited_returns(store, point):
        for path in payload.get("files_deleted", []):
            target = _inside(root, path)
            if target.is_symlink() or target.is_file():
                target.unlink()
        for item in payload.get("files_written", []):
            target = _inside(root, item["path"])
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.is_file():
                target.unlink()
            kind = item.get("kind", "file")
            if kind == "symlink" and item.get("link") is not None:
                os.symlink(item["link"], target)
            elif kind == "file":
                data = store.get_blob(item["sha256"]) if item.get("sha256") else None
                if data is None:
                    raise ForkError(f"cannot restore {item['path']}: its content was not kept")
                target.write_bytes(data)


def _inherited_returns(store: EventStore, point: ForkPoint) -> list[dict]:
    """The payloads of the events that changed the workspace the fork inherits
    (`tool.returned`, an agent's `workspace.changed`), its ancestors' first."""
    first = store.read_stream(point.run, limit=1)
    returns: list[dict] = []
    if first and isinstance(first[0].payload, RunStarted) and first[0].payload.forked_from:
        returns += _inherited_returns(store, first[0].payload.forked_from)
    for record in store.iter_records(
        stream=point.run, types=["tool.returned", "workspace.changed"]
    ):
        if record.version <= point.version:
            returns.append(record.payload)
    return returns


def _inside(root: Path, path: str) -> Path:
    """`root / path`, refusing a path that leaves the workspace (a log is input too)."""
    parts = PurePosixPath(path).parts
    if not parts or PurePosixPath(path).is_absolute() or ".." in parts:
        raise ForkError(f"cannot restore {path!r}: not a path inside the workspace")
    target = root.joinpath(*parts)
    for folder in list(target.parents)[: len(parts) - 1]:  # never write through a link
        if folder.is_symlink():
            raise ForkError(f"cannot restore {path!r}: {folder.name} is a symlink")
    return target
