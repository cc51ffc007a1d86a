"""One lab step: fold what is new in the run's stream, check budgets, ask the policy,
run the tool, publish.

Idempotency rule: a step is addressed by (run stream, the version it follows). If the
stream has moved past that version, the step was already taken and this delivery does
nothing; if not, the events it publishes have ids derived from (stream, version), so
a step taken twice (redelivery after a worker died, the reaper) leaves one copy in the
log: the first take recorded. Two takes never do a step's work at once where the worker
holds step leases (`workers.lab.lease`: every worker labrxiv starts): a second delivery waits for
the first take's lease. Taken one after the other (the first take's events not yet
recorded when its lease ran out: a recorder down longer than the lease), a second take
may come out differently (a grader that timed out once, a budget's clock, the archive
read later); one that is longer shares only its first events' ids with the first, and
the store leaves it out whole (`events.store.Diverged`) rather than splice its tail
after the first take's.

Faults: a transient fault (the database or the broker away, `workers.retry`) raised
while taking the step is left to the task wrapper, which runs the whole step again
with backoff, from the log; only the lab's own errors (a policy, tool or bundle bug)
end the run with `error` (a PostgreSQL blip must not end a run for good). So does a
broken grader (`GraderBroken`: it crashed, timed out or printed no valid scores), with
the grader's words as the detail: no lab can fix it, and going on would only burn the
budget and publish papers with no numbers, ending `done`.
"""

import logging
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from uuid import UUID

from events import Event
from events.ids import utcnow
from events.payloads import (
    ModelFailed,
    ModelResponded,
    Payload,
    RunFinished,
    RunResumed,
    ToolInvoked,
    ToolReturned,
)
from events.streams import event_id_at
from runstate import RunState
from runstate.budget import ended_by
from workers.bus.base import BusStopped, publish
from workers.context import WorkerContext
from workers.errors import RetryLater
from workers.gym.grading import GraderBroken
from workers.lab.budget import over_budget
from workers.lab.emitter import Emitter, actor_of, resumed
from workers.lab.lease import Held, Taken
from workers.lab.policies import StepInput
from workers.metrics import observe_step
from workers.retry import is_transient

log = logging.getLogger(__name__)

LAB_STEP_TASK = "labrxiv.lab_step"
DETAIL_CHARS = 2500
"""Characters of a broken grader's message kept in `run.finished` (its stderr's tail)."""
HELD_MARGIN = 0.5
"""Seconds past the end of another take's lease before this take looks again."""
HELD_LOOK = 1.0
"""Seconds between the looks of a take waiting in place for another's lease: the run
may move on (the other take's events recorded) well before the lease runs out."""
HELD_RETRY = 5.0
"""At most this many seconds before a take that found the lease held runs again (the
bus's retry): a holder that sends nothing frees the step long before its lease runs out
(the wake-up of a run waiting for its paper's decision, racing the waiting step)."""


def lab_step(ctx: WorkerContext, stream: str, after_version: int, final: bool = True) -> None:
    """Take the step of run `stream` that follows `after_version`.

    `final`: False when the bus runs the step again later if it raises `RetryLater`
    (a wait, e.g. before a model's next attempt); True (a bus that does not, or the
    last try) when the step must wait in place instead."""
    started = time.perf_counter()
    seen: list[RunState] = []  # the state read, for the policy label (none if it raised first)
    outcome = "raised"
    try:
        outcome = _step_alone(ctx, stream, after_version, final, seen)
    except RetryLater:
        outcome = "later"
        raise
    finally:
        observe_step(seen[0].started.policy if seen else None, outcome, started)


def _step_alone(
    ctx: WorkerContext, stream: str, after_version: int, final: bool, seen: list[RunState]
) -> str:
    """Take the step unless another take holds its lease (`workers.lab.lease`): then run
    it again once the lease would have run out or after `HELD_RETRY`, whichever is first
    (`RetryLater`), or, where the bus cannot (`final`), wait here, looking again every
    `HELD_LOOK`. Either way the step's work is done by one take at a time, and a look
    after the holder's events were sent does nothing."""
    while True:
        if ctx.bus.stopped:  # the embedded bus at Ctrl-C: take nothing
            raise BusStopped(f"the step of {stream} was not taken: the bus was stopped")
        try:
            return _step(ctx, stream, after_version, final, seen)
        except Taken:
            return "skipped"  # its events are on their way to the log
        except Held as held:
            if not final:  # not counted among the step's own waits: it is another's
                wait = min(held.left + HELD_MARGIN, HELD_RETRY)
                raise RetryLater(str(held), delay_s=wait, counted=False) from None
            log.info("%s; waiting for it", held)
            _wait(min(held.left + HELD_MARGIN, HELD_LOOK))


_wait = time.sleep
"""How a final take waits for another's lease (a test's hook)."""


def _step(
    ctx: WorkerContext, stream: str, after_version: int, final: bool, seen: list[RunState]
) -> str:
    """Take the step; returns its outcome (`workers.metrics.STEP_OUTCOMES`)."""
    state = ctx.streams.run_state(stream)
    if state is None or state.version != after_version:
        return "skipped"  # already taken (a redelivery) or not yet recorded (a stale trigger)
    seen.append(state)
    if state.finished is not None:
        return "skipped"
    if ctx.labs is None:
        raise RuntimeError("this worker has no lab services configured")
    now = utcnow()
    over = over_budget(state, now)
    if over is not None:  # no tool runs: the lease is not needed (a second take ends alike)
        return _send(ctx, state, ended_by(over), {}, now)
    if ctx.leases is None:
        emitter = Emitter(ctx.bus, state, None, ctx.store.stream_head, _holds(ctx))
        payloads, blobs = _act(ctx, state, after_version, final, emitter)
        return _send(ctx, emitter.state, payloads, blobs, now)
    # Held while the step runs and its events are sent: the reaper leaves the run alone,
    # and a second delivery of this step waits (`Held`) instead of running the same tools
    # in the same workspace at once. A take that raises (sending its events included)
    # gives the lease back, so its retry takes the step at once; one that sends nothing
    # (the run moved on meanwhile, or it waits for its paper's decision, whose wake-up
    # is this step again) leaves the step free to its next take.
    session = bool(getattr(ctx.labs.policies.get(state.started.policy), "runs_alone", False))
    with ctx.leases.holding(stream, after_version, session=session) as take:
        again = ctx.streams.run_state(stream)
        if again is None or again.version != after_version:
            take.sent_nothing()
            return "skipped"  # the run moved on between the look above and the lease
        emitter = Emitter(ctx.bus, state, take, ctx.store.stream_head, _holds(ctx))
        payloads, blobs = _act(ctx, state, after_version, final, emitter)
        # A session's events are in the log before it returns: nothing is in flight for
        # the lease to cover, and the run's next step (a review round) is free at once.
        if (not payloads and not emitter.sent) or (session and not payloads):
            take.sent_nothing()
        return _send(ctx, emitter.state, payloads, blobs, now)


def _send(
    ctx: WorkerContext,
    state: RunState,
    payloads: list[Payload],
    blobs: dict[str, bytes],
    began: datetime,
) -> str:
    """Send the step's events (versions after `state`'s, ids derived from the run and
    version, so a second take of the step repeats them), led by `run.resumed` on a stopped
    run (`workers.lab.emitter.resumed`); returns the step's outcome."""
    payloads = resumed(state, payloads)
    stamps = _stamps(payloads, began, utcnow())
    stream, after_version = state.stream, state.version
    out = [
        Event(
            id=event_id_at(stream, after_version + 1 + i, state.last_at),
            stream=stream,
            version=after_version + 1 + i,
            occurred_at=at,
            causation_id=state.last_id,
            correlation_id=state.campaign,
            actor=actor_of(payload, state),
            payload=payload,
        )
        for i, (payload, at) in enumerate(zip(payloads, stamps, strict=True))
    ]
    publish(ctx.bus, out, blobs)
    ended = [p.reason for p in payloads if isinstance(p, RunFinished)]
    return ended[-1] if ended else "acted"


def _stamps(payloads: list[Payload], began: datetime, ended: datetime) -> list[datetime]:
    """When each event of a step happened: a tool call when it began (after the answer
    that asked for it, after the tools before it), a `run.resumed` when the step began,
    everything else when the step ended."""
    clock = began
    stamps = []
    for payload in payloads:
        if isinstance(payload, ModelResponded | ModelFailed):
            clock = min(ended, clock + timedelta(seconds=payload.latency_s))
            stamps.append(clock)
        elif isinstance(payload, ToolInvoked | RunResumed):
            stamps.append(clock)
        elif isinstance(payload, ToolReturned):
            clock = min(ended, clock + timedelta(seconds=payload.duration_s))
            stamps.append(ended)
        else:
            stamps.append(ended)
    return stamps


def _act(
    ctx: WorkerContext, state: RunState, after_version: int, final: bool, emitter: Emitter
) -> tuple[list[Payload], dict[str, bytes]]:
    labs = ctx.labs
    assert labs is not None
    try:
        bundle = labs.bundle(state.task)
        if state.started.policy not in bundle.card.policies:
            detail = f"task {state.task} does not support the {state.started.policy} policy"
            return [RunFinished(reason="error", detail=detail)], {}
        policy = labs.policy(state.started.policy)
        step = StepInput(
            state=state,
            version=after_version,
            bundle=bundle,
            env=labs.env_for(state, ctx.store),
            archive=labs.archive,
            store=ctx.store,
            streams=ctx.streams,
            spend=ctx.spend,
            prepared=ctx.prepared,
            inflight=labs.inflight,
            gateway=labs.gateway,
            final=final,
            emitter=emitter,
        )
        return policy.step(step)
    except RetryLater:
        raise  # not yet: the task runs this step again later
    except GraderBroken as exc:  # the bundle's bug, named in the run's end; no traceback
        said = str(exc).strip().splitlines()
        log.error("%s: the task's grader is broken: %s", state.stream, said[-1] if said else "")
        return [RunFinished(reason="error", detail=str(exc)[:DETAIL_CHARS])], {}
    except Exception as exc:  # a policy or bundle bug ends this run, not the worker
        if is_transient(exc):
            raise  # the task is retried with backoff; the step is taken again from the log
        log.exception("%s: cannot take a step", state.stream)
        return [RunFinished(reason="error", detail=f"{type(exc).__name__}: {exc}")], {}


def _holds(ctx: WorkerContext) -> Callable[[UUID], bool]:
    """Whether the log holds an event, by id (what an emitter checks its batches by)."""
    return lambda event_id: ctx.store.get(event_id) is not None
