"""One lab step: fold the run's stream, check budgets, ask the policy, run the tool, publish.

Idempotency rule: a step is addressed by (run stream, the version it follows). If the
stream has moved past that version, the step was already taken and this delivery does
nothing; if not, the events it publishes have ids derived from (stream, version), so
a step taken twice (redelivery after a worker died) leaves one copy in the log.
"""

import logging
from datetime import datetime, timedelta

from events import Event
from events.ids import derived_id, utcnow
from events.payloads import (
    BudgetExceeded,
    ModelFailed,
    ModelResponded,
    Payload,
    RunFinished,
    ToolInvoked,
    ToolReturned,
)
from workers.bus.base import publish
from workers.context import WorkerContext
from workers.lab.llm.step import LlmStep, llm_step
from workers.lab.state import RunState, fold
from workers.tools.invoke import invoke

log = logging.getLogger(__name__)

LAB_STEP_TASK = "labrxiv.lab_step"


def lab_step(ctx: WorkerContext, stream: str, after_version: int) -> None:
    """Take the step of run `stream` that follows `after_version`."""
    events = ctx.streams.read(stream)
    if not events or events[-1].version != after_version:
        return  # already taken (a redelivery) or not yet recorded (a stale trigger)
    state = fold(events)
    if state.finished is not None:
        return
    if ctx.labs is None:
        raise RuntimeError("this worker has no lab services configured")
    now = utcnow()
    blobs: dict[str, bytes] = {}
    over = over_budget(state, now)
    if over is not None:
        payloads: list[Payload] = [
            over,
            RunFinished(reason="budget", detail=f"{over.budget} limit"),
        ]
    else:
        payloads, blobs = _act(ctx, state, events, after_version)
    trigger = events[-1]
    stamps = _stamps(payloads, now, utcnow())
    out = [
        Event(
            id=derived_id(f"{stream}:{after_version + 1 + i}", trigger.occurred_at),
            stream=stream,
            version=after_version + 1 + i,
            occurred_at=at,
            causation_id=trigger.id,
            correlation_id=state.campaign,
            actor=_actor(payload, state),
            payload=payload,
        )
        for i, (payload, at) in enumerate(zip(payloads, stamps, strict=True))
    ]
    publish(ctx.bus, out, blobs)


def _stamps(payloads: list[Payload], began: datetime, ended: datetime) -> list[datetime]:
    """When each event of a step happened: a tool call when it began (after the answer
    that asked for it, after the tools before it), everything else when the step ended."""
    clock = began
    stamps = []
    for payload in payloads:
        if isinstance(payload, ModelResponded | ModelFailed):
            clock = min(ended, clock + timedelta(seconds=payload.latency_s))
            stamps.append(clock)
        elif isinstance(payload, ToolInvoked):
            stamps.append(clock)
        elif isinstance(payload, ToolReturned):
            clock = min(ended, clock + timedelta(seconds=payload.duration_s))
            stamps.append(ended)
        else:
            stamps.append(ended)
    return stamps


def _act(
    ctx: WorkerContext, state: RunState, events: list[Event], after_version: int
) -> tuple[list[Payload], dict[str, bytes]]:
    labs = ctx.labs
    assert labs is not None
    stream = state.stream
    try:
        bundle = labs.bundle(state.task)
        if state.started.policy not in bundle.card.policies:
            detail = f"task {state.task} does not support the {state.started.policy} policy"
            return [RunFinished(reason="error", detail=detail)], {}
        if state.started.policy == "llm":
            return llm_step(
                LlmStep(
                    state=state,
                    events=events,
                    bundle=bundle,
                    gateway=labs.gateway(state.started.llm),
                    store=ctx.store,
                    inflight=labs.inflight,
                    env=labs.env_for(state),
                    streams=ctx.streams,
                    spend=ctx.spend,
                    version=after_version,
                )
            )
        action = labs.policy(state.started.policy).decide(state, bundle, labs.archive)
        env = labs.env_for(state)
    except Exception as exc:  # a policy or bundle bug ends this run, not the worker
        log.exception("%s: cannot take a step", stream)
        return [RunFinished(reason="error", detail=f"{type(exc).__name__}: {exc}")], {}
    if action.tool == "evaluate" and _attempts_left(state) == 0:
        limit = state.started.budget.attempts or 0
        return [
            BudgetExceeded(budget="attempts", limit=limit, used=len(state.attempts)),
            RunFinished(reason="budget", detail="attempts limit"),
        ], {}
    outcome = invoke(env, action.tool, action.args, call_id=f"{stream}:{after_version + 1}")
    payloads = list(outcome.payloads)
    if outcome.finish:
        payloads.append(RunFinished(reason="done", detail=outcome.output[:500]))
    return payloads, outcome.blobs


def over_budget(state: RunState, now: datetime) -> BudgetExceeded | None:
    """The first budget the run has used up, checked before every step."""
    budget = state.started.budget
    elapsed = (now - state.started_at).total_seconds()
    if budget.wall_seconds is not None and elapsed >= budget.wall_seconds:
        return BudgetExceeded(budget="wall_seconds", limit=budget.wall_seconds, used=elapsed)
    if budget.steps is not None and state.steps >= budget.steps:
        return BudgetExceeded(budget="steps", limit=budget.steps, used=state.steps)
    return None


def _attempts_left(state: RunState) -> int | None:
    limit = state.started.budget.attempts
    return None if limit is None else max(0, limit - len(state.attempts))


def _actor(payload: Payload, state: RunState) -> str:
    """Scores are the grader's word, not the lab's."""
    return f"grader:{state.task}" if payload.type == "experiment.scored" else state.lab
