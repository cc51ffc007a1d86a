"""One step of an `llm` lab: the last event of the run says what comes next.

- a `model.called` with no outcome: send it (the call was written ahead by the
  previous step). If this step was delivered before and died during the call (its
  marker exists), the call's outcome is unknown: it stays so in the ledger and the
  request is tried again as a new attempt, never resent under the same call id. When
  the model answers, the same step runs the tools it asked for (malformed or unknown
  calls are told to the model as the call's result; `next_phase` moves the research
  cycle on) and writes the next call ahead: one step and one batch per model call;
- a `model.failed`: write the next attempt ahead once the gateway's wait after the
  failure is over (its retry-after, capped, or its backoff), or end the run when the
  gateway gave up. The step does not sleep in its worker: it asks the bus to run it
  again when the wait is over (`RetryLater`), unless the bus cannot (`final`);
- anything else: check budgets, build the conversation from the log, write the next
  call ahead (`model.called`) for the following step to send.
"""

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from events import EventStore
from events.ids import utcnow
from events.payloads import (
    ModelCalled,
    ModelFailed,
    ModelResponded,
    PaperSubmitted,
    Payload,
    PhaseEntered,
    ReviewAwaited,
    ReviewReceived,
    RunFinished,
    ToolInvoked,
    ToolReturned,
)
from runstate import RunState, ahead
from runstate.budget import ended_by
from runstate.words import counted
from workers.lab import budget
from workers.lab.policies.base import StepInput
from workers.lab.policies.llm import phases
from workers.lab.policies.llm.context import build
from workers.lab.policies.llm.history import ParsedResponses, reply_of
from workers.lab.policies.llm.truncation import ExchangeSizes
from workers.lab.reviews import WAIT, Revise, review_round, reviews_note
from workers.llm import Gateway, ModelRequest, Reply, driver
from workers.llm.reply import ToolCall
from workers.tools.invoke import invoke

log = logging.getLogger(__name__)

Out = tuple[list[Payload], dict[str, bytes]]


@dataclass(frozen=True)
class LlmStep:
    """What an `llm` step works with: the policy's input, with the run's model gateway
    and the worker's measured conversation groups."""

    given: StepInput
    """The lab step's input, as the policy got it."""
    model: Gateway
    """The gateway of the run's endpoint (`StepInput.gateway` for its settings)."""
    sizes: ExchangeSizes
    """The worker's measured conversation groups of runs, for the truncation rule."""
    parsed: ParsedResponses
    """The worker's parsed model responses, by hash."""


def llm_step(step: LlmStep) -> Out:
    """The events of the run's next step."""
    config = step.given.state.started.llm
    if config is None:
        return [RunFinished(reason="error", detail="an llm run needs llm settings")], {}
    last = step.given.state.last
    if isinstance(last, ModelCalled):
        sent, blobs = _send(step, last)
        if not isinstance(sent[-1], ModelResponded):
            return sent, blobs  # a failure, or the next attempt of an interrupted call
        # Act on the answer and write the next call ahead in this same step: one step
        # and one recorded batch per model call. The next call is sent by the step that
        # its recording triggers, so it is in the log before it is sent.
        following, more = _answered(step, _ahead(step.given.state, sent), blobs)
        return sent + following, blobs | more
    if isinstance(last, ModelFailed):
        return _after_failure(step, last)
    if isinstance(last, ModelResponded):
        return _answered(step, step.given.state, {})
    if isinstance(last, ReviewAwaited | ReviewReceived):
        return _reviews(step)
    return _new_call(step, step.given.state, {})


def _reviews(step: LlmStep) -> Out:
    """After its papers, a lab in a campaign with review rounds waits for the reviews of
    its last paper (`workers.lab.reviews`), reads them, and revises in the `revise` phase
    with the reviews in its context; it finishes when there is nothing to answer."""
    after = review_round(step.given.state, step.given.archive)
    if after == WAIT:
        return [], {}  # idle until the paper's decision wakes the run
    if isinstance(after, ReviewAwaited | ReviewReceived):
        return [after], {}
    if isinstance(after, Revise):
        entered = PhaseEntered(phase="revise", note=_reviews_note(after))
        following, blobs = _new_call(step, _ahead(step.given.state, [entered]), {})
        return [entered, *following], blobs
    detail = f"{counted(len(step.given.state.papers), 'paper')} submitted; no review left to answer"
    return [RunFinished(reason="done", detail=detail)], {}


def _reviews_note(revising: Revise) -> str:
    """What the `revise` phase tells the lab: the paper, the decision, the weaknesses."""
    return (
        f"{reviews_note(revising)}\n"
        f"Submit the new version with revises={revising.paper.paper_id!r}."
    )


IDLE_ANSWERS = 20
"""Answers in a row that ran no tool and end a run in error. A model that never calls
one (a tool protocol it does not follow, an endpoint that only talks), or only calls
tools that cannot run (unknown ones, arguments that are not JSON), was called without
end by a run with no step, token, dollar or time budget."""


def _idle_answers(state: RunState) -> int:
    """The run's latest answers, back to the last whose calls ran a tool (phase
    instructions between them do not count; nor do a fork's parent's, made for another
    model perhaps)."""
    own = f"{state.stream}:"  # this run's requests (`_new_call`)
    idle = 0
    for exchange in reversed(state.exchanges):
        if exchange.answer is None:
            continue
        if not exchange.answer.call_id.startswith(own):
            break
        if any(result.ran for result in exchange.results):
            break
        idle += 1
    return idle


def _progressed(state: RunState) -> bool:
    """Whether the run evaluated an attempt or submitted a paper in its current research
    cycle (since it last entered its first phase, or a revision). A cycle without either
    would be followed by the same again: a model that keeps running tools that change
    nothing (reading files, a paper its tool refuses) cycled through its phases without
    end in a run with no step, token, dollar or time budget."""
    first = phases.first_phase(state.started.reads_archive)
    for exchange in reversed(state.exchanges):
        if exchange.answer is None and exchange.entered in (first, "revise"):
            return False
        for result in exchange.results:
            if result.ran and result.tool == "evaluate":
                return True
            if result.tool == "submit_paper" and result.exit_code == 0:
                return True
    return False


ANSWER_CHARS = 300
"""Characters of the last answer's text, and of what its calls were told, in the ending."""


def _last_answer(state: RunState) -> str:
    """What the latest answer was, for a person to see why no tool ran: its text, what
    its tool calls were told, or that it was empty (an answer with no choice in it)."""
    exchange = next((e for e in reversed(state.exchanges) if e.answer is not None), None)
    if exchange is None or exchange.answer is None:
        return "none"
    told = "; ".join(f"{r.tool}: {r.preview}" for r in exchange.results)[:ANSWER_CHARS]
    said = exchange.answer.preview[:ANSWER_CHARS]
    if not told and not said:
        return f"empty (no text, no tool call; finish reason {exchange.answer.finish_reason})"
    return f"{said!r}" + (f"; its tool calls were told: {told}" if told else "")


def _ahead(state: RunState, payloads: list[Payload]) -> RunState:
    return ahead(state, payloads, utcnow())


def _answered(step: LlmStep, seen: RunState, pending: dict[str, bytes]) -> Out:
    """Run the tools the last answer asked for, then write the next call ahead.

    `seen`: the run with this step's events so far; `pending`: blobs published with
    them and not yet recorded."""
    config = seen.started.llm
    assert config is not None
    last = seen.last
    assert isinstance(last, ModelResponded)
    phase = seen.phase_at_call.get(last.call_id)
    reply = reply_of(
        last, phase, config.tool_protocol, _blob(step.given.store, pending), step.parsed
    )
    if not reply.tool_calls:
        return _new_call(step, seen, pending)
    ran, blobs = _run_tools(step, seen, reply, phase)
    if any(p.type in ("run.finished", "review.awaited") for p in ran):
        return ran, blobs  # the run ended, or waits for its paper's reviews
    following, more = _new_call(step, _ahead(seen, ran), pending | blobs)
    return ran + following, blobs | more


def _send(step: LlmStep, called: ModelCalled) -> Out:
    return driver.send(
        step.model,
        step.given.store,
        step.given.inflight,
        called,
        step.given.state.stream,
        step.given.prepared,
    )


def _after_failure(step: LlmStep, failed: ModelFailed) -> Out:
    called = step.given.state.calls[failed.call_id]
    if not failed.will_retry:
        detail = f"the model failed {called.attempt} times; last: {failed.error} {failed.detail}"
        return [RunFinished(reason="error", detail=detail[:500])], {}
    return driver.after_failure(
        step.model, called, failed, step.given.state.last_made_at, step.given.final
    )


def _run_tools(step: LlmStep, state: RunState, reply: Reply, phase: str | None) -> Out:
    payloads: list[Payload] = []
    blobs: dict[str, bytes] = {}
    papers = len(state.papers)
    attempts = len(state.attempts)
    for index, call in enumerate(reply.tool_calls):
        later = reply.tool_calls[index + 1 :]
        if call.problem is not None:
            payloads += _told(
                call.id, call.name, {"raw": call.raw_arguments}, f"error: {call.problem}"
            )
            continue
        arguments = call.arguments or {}
        if call.name == phases.NEXT_PHASE:
            following = phases.after(phase or "plan", state.started.reads_archive)  # type: ignore[arg-type]
            moved = f"entering phase {following}"
            payloads += _told(call.id, call.name, arguments, moved, done=True)
            payloads += _not_run(later, f"the run entered phase {following} before it")
            payloads.append(PhaseEntered(phase=following))
            break
        if call.name == "evaluate":
            ended = budget.out_of_attempts(state, attempts)
            if ended is not None:
                return payloads + ended, blobs
        step.given.env.run.attempts, step.given.env.run.papers = attempts, papers
        outcome = invoke(step.given.env, call.name, arguments, call_id=call.id)
        payloads += outcome.payloads
        blobs.update(outcome.blobs)
        attempts += sum(1 for p in outcome.payloads if p.type == "experiment.scored")
        if call.name == "evaluate" and not any(
            p.type == "experiment.scored" for p in outcome.payloads
        ):
            attempts += 1  # a failed evaluation is an attempt too
        submitted = [p for p in outcome.payloads if isinstance(p, PaperSubmitted)]
        if submitted:
            papers += 1
            if papers >= state.started.papers:
                revised = sum(p.revises is not None for p in [*state.papers, *submitted])
                if revised < state.started.review_rounds:  # its reviews may be answered
                    payloads += _not_run(later, "the paper before it was submitted for review")
                    payloads.append(ReviewAwaited(paper_id=submitted[-1].paper_id))
                    return payloads, blobs
                payloads.append(
                    RunFinished(reason="done", detail=f"{counted(papers, 'paper')} submitted")
                )
                return payloads, blobs
            following = phases.after("writeup", state.started.reads_archive)
            payloads += _not_run(later, f"the paper was submitted and the run entered {following}")
            payloads.append(PhaseEntered(phase=following))
            break
        if outcome.finish:
            payloads.append(RunFinished(reason="done", detail=outcome.output[:500]))
            return payloads, blobs
    return payloads, blobs


def _not_run(calls: Sequence[ToolCall], why: str) -> list[Payload]:
    """Results for the calls an answer made after one that ended its turn. Every call of
    an answer must be answered in the conversation: OpenAI's API refuses one that is not
    ("tool_call_ids did not have response messages")."""
    return [
        payload
        for call in calls
        for payload in _told(
            call.id, call.name, call.arguments or {"raw": call.raw_arguments}, f"not run: {why}"
        )
    ]


def _told(
    call_id: str, tool: str, args: dict[str, object], message: str, done: bool = False
) -> list[Payload]:
    """A tool call the step answers itself, recorded with what the model is told: a
    control tool that did what was asked (`done`: a success, like any tool's), or a call
    that ran no tool (refused, or not run)."""
    return [
        ToolInvoked(call_id=call_id, tool=tool[:80] or "?", args=args),
        ToolReturned(
            call_id=call_id,
            tool=tool[:80] or "?",
            exit_code=0 if done else 2,
            duration_s=0,
            preview=message[:4000],
            ran=done,
        ),
    ]


def _new_call(step: LlmStep, seen: RunState, pending: dict[str, bytes]) -> Out:
    """Check the budgets, then write the next call ahead.

    `seen`: the run with this step's events so far (its spend counts them). The wall
    time and steps limits are checked here too, not only before the next step: a call
    written ahead and then never sent, the run ended first, would stand in the ledger as
    a call of unknown outcome that the provider may have billed."""
    config = seen.started.llm
    assert config is not None
    idle = _idle_answers(seen)
    if idle >= IDLE_ANSWERS:
        detail = (
            f"the model answered {idle} times in a row without running a tool "
            f"(tool protocol {config.tool_protocol}: does the model follow it?); "
            f"the last answer: {_last_answer(seen)}"
        )
        return [RunFinished(reason="error", detail=detail)], {}
    spent = budget.over_budget(seen, utcnow())
    if spent is not None:
        return ended_by(spent), {}
    over = _over_model_budget(step, seen)
    if over is not None:
        return over, {}
    prefix: list[Payload] = []
    if seen.phase is None:
        prefix.append(PhaseEntered(phase=phases.first_phase(seen.started.reads_archive)))
    elif seen.calls_in_phase >= config.phase_calls:
        following = phases.after(seen.phase, seen.started.reads_archive)
        if following == phases.first_phase(seen.started.reads_archive) and not _progressed(seen):
            detail = (
                "the model went through a whole research cycle without an evaluation or a "
                f"paper, its write-up out of calls; the last answer: {_last_answer(seen)}"
            )
            return [RunFinished(reason="error", detail=detail[:1000])], {}
        prefix.append(PhaseEntered(phase=following))
    seen = _ahead(seen, prefix)
    phase = seen.phase or "plan"
    final = max(0, len(step.given.state.exchanges) - 1)
    read_blob = _blob(step.given.store, pending)
    conversation = build(
        seen, step.given.bundle.card, config, read_blob, step.sizes, final, step.parsed
    )
    if conversation.truncated is not None:
        prefix.append(conversation.truncated)
    request = ModelRequest(
        request_id=f"{seen.stream}:{step.given.version}",
        model=config.phase_models.get(phase, config.model),
        messages=conversation.messages,
        tools=conversation.tools,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        seed=seen.started.seed,
        phase=phase,
    )
    prepared = driver.write_ahead(step.model, request, step.given.prepared)
    return [*prefix, prepared.called], prepared.blobs


def _over_model_budget(step: LlmStep, seen: RunState) -> list[Payload] | None:
    """Token and dollar limits of the run and of its campaign, checked before each call."""
    config = seen.started.llm
    assert config is not None
    campaign = (
        budget.campaign_budget(step.given.streams, step.given.spend, seen.campaign, seen.stream)
        if seen.campaign
        else None
    )
    model = config.phase_models.get(seen.phase or "plan", config.model)
    unpriced = model if step.model.prices.price_of(model) is None else None
    return budget.over_model_budget(seen, step.given.state, campaign, unpriced)


def _blob(store: EventStore, pending: dict[str, bytes]) -> Callable[[str], bytes | None]:
    """A blob reader that sees the blobs this step is about to publish."""

    def read(sha256: str) -> bytes | None:
        return pending[sha256] if sha256 in pending else store.get_blob(sha256)

    return read
