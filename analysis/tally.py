"""The behaviour of one run, accumulated one event at a time.

`BehaviourTally.add` takes a run's events in version order as the read side stores
them (`events.recorded.Recorded`: payloads as plain dicts), so one streaming pass over
the log gives every run's figures, and a projector that replays records can keep a tally
per running run. Each figure reads only what its events say: tokens and dollars through
the one counting rule (`events.spend.spend_of`), the phase from `phase.entered`, scores
from `experiment.scored`, actions through `events.actions` (an agent's reported calls
included, none counted twice), and lab steps cut exactly as `runstate.trajectory` cuts them
(tests/analysis/test_behaviour.py checks all of it against the fold on real runs).
Typed events are not needed: validating them costs ~30 µs an event, more than all of
this (docs/benchmarks.md, "Analysis of a campaign").

What a tally holds grows with the run's tool calls (their times and tools, to cut the
run into thirds and bins once its end is known), never with the log.
"""

from array import array
from collections import Counter, defaultdict
from dataclasses import fields
from datetime import datetime
from typing import Any, TypeAlias
from uuid import UUID

from analysis.figures import (
    NO_PHASE,
    THIRDS,
    Behaviour,
    Cost,
    Density,
    Gaps,
    Money,
    MoneyUse,
    TimeUse,
    Tokens,
    ToolMix,
    UsefulWindow,
)
from analysis.stats import density_bins, per_hour, quantile, share, third
from events.actions import payload_is_action
from events.recorded import EventLike
from events.spend import NOTHING, Spend, spend_of
from runstate.best import outranks
from runstate.budget import stood_stopped, wall_seconds
from runstate.trajectory import begins_step

BINS = 10
"""Equal time slices of a run in the density figure."""
OFFLINE_NOTE = "no phase.entered: this run's policy has no research phases (offline and agent runs)"


Record: TypeAlias = EventLike[dict[str, Any]]
"""What the tally reads of a stored event (`Recorded` is one): its payload as stored."""


class BehaviourTally:
    """One run's behaviour so far; `add` its events in version order, then `result()`."""

    def __init__(self, run: str) -> None:
        self.run = run
        self.started: dict[str, Any] = {}
        self.first_step = 0
        """The number of the run's first step: 0, or a fork's after those it inherited."""
        self.campaign: str | None = None
        self.started_at: datetime | None = None
        self.last_at: datetime | None = None
        self.stopped_s = 0.0
        """Seconds the run stood stopped so far (`runstate.budget.stood_stopped`)."""
        self.stopped_at: datetime | None = None
        """When the run was stopped, while it stands stopped."""
        self.finished: str | None = None
        self.events = 0
        self.papers = 0
        # Steps as runstate.trajectory cuts them: step 0 is run.started; then a new step
        # begins wherever the causation id changes, but at a stop (`run.interrupted`).
        self.step = -1
        self.cause: UUID | None = None
        self.phase: str | None = None
        self.entered_phase = False
        # One entry per tool call: elapsed seconds, tool, phase at the call.
        self.action_s = array("d")
        self.action_tool: list[str] = []
        self.action_phase: list[str | None] = []
        self.tool_s: defaultdict[str, float] = defaultdict(float)
        self.inside: dict[str, float] = {}
        """An agent's reported calls not yet answered, with the seconds of the lab calls
        labrxiv ran meanwhile (a command that ran `lab evaluate`): their time is the
        lab call's, not counted again in the command's."""
        self.model_s = 0.0
        self.calls = 0
        self.answered = 0
        self.failed = 0
        self.phase_of_call: dict[str, str | None] = {}
        """Calls written ahead and not yet answered: the phase each was made in."""
        self.spend = NOTHING
        self.by_phase: dict[str, Spend] = {}
        self.by_model: dict[str, Spend] = {}
        self.scored = 0
        self.best: float | None = None
        self.best_raw: float | None = None
        """The best attempt's raw primary score: what tells it from a later one whose
        normalized score ties (`runstate.best.outranks`)."""
        self.best_attempt: int | None = None
        self.best_at_s: float | None = None
        self.best_step: int | None = None

    def add(self, event: Record) -> None:
        """Count one event of the run (the one after the last added)."""
        at = event.occurred_at
        if self.step < 0:
            if event.type != "run.started":
                raise ValueError(f"{self.run} does not begin with run.started")
            self.take_start(event.payload)
            self.started_at, self.campaign = at, event.correlation_id
            self.step = self.first_step
        elif self.step == self.first_step or begins_step(
            self.cause, event.causation_id, event.type
        ):
            self.step += 1
        self.cause = event.causation_id
        self.last_at = at
        if self.stopped_at is not None or event.type == "run.interrupted":
            self.stopped_s, self.stopped_at = stood_stopped(
                self.stopped_s, self.stopped_at, event.type, at
            )
        self.events += 1
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event.payload, self._elapsed(at))
        spent = spend_of(event.type, event.payload)
        if spent is not None:
            self._spent(spent, event.type, event.payload)

    def take_start(self, started: dict[str, Any]) -> None:
        """Take the run's `run.started` payload: its settings, and the number `labrxiv
        replay` gives its start: 0; a fork's, after the steps it inherited (its figures
        are of its own events, its steps numbered on)."""
        self.started = started
        point = started.get("forked_from")
        self.first_step = 0 if not point else int(point["step"]) + 1

    def _elapsed(self, at: datetime) -> float:
        """The wall time the run had used at `at` (`runstate.budget.wall_seconds`): the
        time it stood stopped is neither its duration nor any gap between its actions."""
        assert self.started_at is not None
        return wall_seconds(self.started_at, self.stopped_s, self.stopped_at, at)

    # -- per event type ------------------------------------------------------------

    def _invoked(self, payload: dict[str, Any], elapsed: float) -> None:
        if not payload_is_action(payload):
            return
        if payload.get("reported"):
            self.inside[str(payload.get("call_id"))] = 0.0
        self.action_s.append(elapsed)
        self.action_tool.append(str(payload.get("tool")))
        self.action_phase.append(self.phase)

    def _returned(self, payload: dict[str, Any], _elapsed: float) -> None:
        if not payload_is_action(payload):
            return
        seconds = float(payload.get("duration_s") or 0.0)
        if payload.get("reported"):
            seconds = max(0.0, seconds - self.inside.pop(str(payload.get("call_id")), 0.0))
        else:
            for call_id in self.inside:
                self.inside[call_id] += seconds
        self.tool_s[str(payload.get("tool"))] += seconds

    def _phase(self, payload: dict[str, Any], _elapsed: float) -> None:
        self.phase, self.entered_phase = payload.get("phase"), True

    def _called(self, payload: dict[str, Any], _elapsed: float) -> None:
        # The phase the lab was in when it wrote the call ahead, as runstate's
        # phase_at_call keeps it: the answer's money is counted there.
        self.calls += 1
        self.phase_of_call[payload["call_id"]] = self.phase

    def _responded(self, payload: dict[str, Any], _elapsed: float) -> None:
        self.answered += 1
        self.model_s += float(payload.get("latency_s") or 0.0)

    def _failed(self, payload: dict[str, Any], _elapsed: float) -> None:
        self.failed += 1
        self.model_s += float(payload.get("latency_s") or 0.0)
        self.phase_of_call.pop(str(payload.get("call_id")), None)

    def _scored(self, payload: dict[str, Any], elapsed: float) -> None:
        self.scored += 1
        score = payload.get("normalized_score")  # a figure that compares runs: normalized only
        held = None if self.best is None or self.best_raw is None else (self.best, self.best_raw)
        if score is not None and outranks(payload, held):
            self.best, self.best_raw = float(score), float(payload["score"])
            self.best_attempt = payload.get("attempt")
            self.best_at_s, self.best_step = elapsed, self.step

    def _paper(self, _payload: dict[str, Any], _elapsed: float) -> None:
        self.papers += 1

    def _finished(self, payload: dict[str, Any], _elapsed: float) -> None:
        self.finished = payload.get("reason")

    def _spent(self, spent: Spend, event_type: str, payload: dict[str, Any]) -> None:
        self.spend = self.spend + spent
        if event_type == "model.responded":
            phase = self.phase_of_call.pop(str(payload.get("call_id")), self.phase)
            model = str(payload.get("model"))
        else:  # a grading that called a model
            phase, model = self.phase, str(payload.get("grader_model") or "grader (model unnamed)")
        key = phase or NO_PHASE
        self.by_phase[key] = self.by_phase.get(key, NOTHING) + spent
        self.by_model[model] = self.by_model.get(model, NOTHING) + spent

    # -- the figures ---------------------------------------------------------------

    def duration_s(self) -> float:
        """The wall time the run had used at its last event added (`_elapsed`)."""
        if self.started_at is None or self.last_at is None:
            raise ValueError(f"{self.run}: no event added")
        return self._elapsed(self.last_at)

    def result(self) -> Behaviour:
        """The figures of the run as far as it was added."""
        duration = self.duration_s()
        return Behaviour(
            run=self.run,
            task=self.started.get("task"),
            lab=self.started.get("lab"),
            policy=self.started.get("policy"),
            campaign=self.campaign,
            finished=self.finished,
            events=self.events,
            steps=self.step + 1 - self.first_step,
            papers=self.papers,
            duration_s=duration,
            density=Density(
                actions=len(self.action_s),
                per_hour=per_hour(len(self.action_s), duration),
                bins=density_bins(self.action_s, duration, BINS),
            ),
            tool_mix=self._tool_mix(duration),
            gaps=self._gaps(),
            tokens=self._tokens(),
            time=self._time(duration),
            money=MoneyUse(
                **_money(self.spend),
                by_phase={k: _cost(v) for k, v in sorted(self.by_phase.items())},
                by_model={k: _cost(v) for k, v in sorted(self.by_model.items())},
            ),
            useful=self._useful(duration),
        )

    def _tool_mix(self, duration: float) -> ToolMix:
        by_third: dict[str, Counter[str]] = {name: Counter() for name in THIRDS}
        by_phase: dict[str, Counter[str]] = {}
        for elapsed, tool, phase in zip(
            self.action_s, self.action_tool, self.action_phase, strict=True
        ):
            by_third[THIRDS[third(elapsed, duration)]][tool] += 1
            if self.entered_phase:
                by_phase.setdefault(phase or NO_PHASE, Counter())[tool] += 1
        return ToolMix(
            by_tool=_sorted(Counter(self.action_tool)),
            by_phase={k: _sorted(v) for k, v in by_phase.items()},
            phases_note=None if self.entered_phase else OFFLINE_NOTE,
            by_third={k: _sorted(v) for k, v in by_third.items()},
        )

    def _gaps(self) -> Gaps:
        times = self.action_s
        gaps = [times[i + 1] - times[i] for i in range(len(times) - 1)]
        return Gaps(
            count=len(gaps),
            median_s=quantile(gaps, 0.5),
            p90_s=quantile(gaps, 0.9),
            max_s=max(gaps) if gaps else None,
        )

    def _tokens(self) -> Tokens:
        spend = self.spend
        outcomes = self.answered + self.failed
        return Tokens(
            total=spend.tokens,
            reasoning=spend.reasoning_tokens,
            rest=spend.tokens - spend.reasoning_tokens,
            reasoning_share=share(spend.reasoning_tokens, spend.tokens),
            input=spend.input_tokens,
            cached_input=spend.cached_input_tokens,
            output=spend.output_tokens,
            model_calls=self.calls,
            answered=self.answered,
            failed=self.failed,
            unknown_outcome=max(0, self.calls - outcomes),
        )

    def _time(self, duration: float) -> TimeUse:
        tools = sum(self.tool_s.values())
        return TimeUse(
            duration_s=duration,
            tools_s=tools,
            by_tool_s=dict(sorted(self.tool_s.items(), key=lambda kv: -kv[1])),
            model_s=self.model_s,
            idle_s=max(0.0, duration - tools - self.model_s),
        )

    def _useful(self, duration: float) -> UsefulWindow:
        after = None if self.best_at_s is None else max(0.0, duration - self.best_at_s)
        return UsefulWindow(
            scored=self.scored,
            best=self.best,
            best_attempt=self.best_attempt,
            best_at_s=self.best_at_s,
            best_step=self.best_step,
            after_s=after,
            after_share=None if after is None or duration <= 0 else after / duration,
        )


_HANDLERS = {
    "tool.invoked": BehaviourTally._invoked,
    "tool.returned": BehaviourTally._returned,
    "phase.entered": BehaviourTally._phase,
    "model.called": BehaviourTally._called,
    "model.responded": BehaviourTally._responded,
    "model.failed": BehaviourTally._failed,
    "experiment.scored": BehaviourTally._scored,
    "paper.submitted": BehaviourTally._paper,
    "run.finished": BehaviourTally._finished,
}


_MONEY = tuple(f.name for f in fields(Money))


def _money(spend: Spend) -> dict[str, Any]:
    """The `Money` figures of `spend`: `Spend` holds each under the same name."""
    return {name: getattr(spend, name) for name in _MONEY}


def _cost(spend: Spend) -> Cost:
    return Cost(**_money(spend), tokens=spend.tokens)


def _sorted(counts: Counter[str]) -> dict[str, int]:
    """Most called first; ties by name, so the same run always prints the same."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
