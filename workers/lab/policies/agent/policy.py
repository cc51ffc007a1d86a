"""The `agent` policy as the lab step sees it: one step runs a whole session of the agent.

What the run's log says decides what the step does:
- no session yet: start the agent (a fork's on the starter workspace, its parent's
  calls up to the fork point answered from the log: `workers.agent.replay`);
- a session started and never ended (its worker died): rebuild the workspace from the
  log and start the agent again, saying so in `agent.started`;
- the last session ended with papers and review rounds left: wait for the reviews, then
  start the agent again with them in TASK.md (`workers.lab.reviews`); with nothing left
  to answer, the run is done.
"""

from events.payloads import Payload, ReviewAwaited, ReviewReceived, RunFinished
from runstate.words import counted
from workers.agent.replay import replay_of
from workers.agent.session import AgentSession, rebuild_workspace
from workers.lab.policies.base import StepInput, StepOutcome
from workers.lab.reviews import WAIT, Revise, review_round, reviews_note


class AgentPolicy:
    """Any agent that runs as a process and talks to an OpenAI-compatible model."""

    name = "agent"
    card_needs = ()
    model_settings = frozenset({"model", "phase_models", "base_url", "prices"})
    """The agent is given the model, may call the phases' models, through the endpoint;
    it chooses its own temperature, tools, context and calls."""
    runs_alone = True

    def step(self, step: StepInput) -> StepOutcome:
        """Start (or start again) the agent and run it to its end."""
        state = step.state
        if state.started.agent is None or state.started.llm is None:
            detail = "an agent run needs its agent and model settings (labrxiv campaign --agent)"
            return [RunFinished(reason="error", detail=detail)], {}
        emitter = step.emitter
        if emitter is None or not emitter.leased:
            detail = "an agent run needs a worker that holds step leases (labrxiv's own)"
            return [RunFinished(reason="error", detail=detail)], {}
        kinds = [
            r.type
            for r in step.store.iter_records(
                stream=state.stream, types=["agent.started", "agent.exited"]
            )
        ]
        started = kinds.count("agent.started")
        if started > kinds.count("agent.exited"):
            rebuild_workspace(step, state)
            detail = (
                f"session {started} ended with its worker; the workspace was rebuilt from "
                "the log and the agent started again (its own memory is not kept)"
            )
            return AgentSession(step, emitter).run(started + 1, restored=True, detail=detail)
        point = state.started.forked_from
        if started == 0 and point is not None:
            first = step.store.read_stream(state.stream, limit=1)
            replay = replay_of(step.store, first[0])
            rebuild_workspace(step, state, changes=False)
            detail = (
                f"a fork of {point.run} after its step {point.step}: the agent starts again "
                f"on the starter workspace; its first {replay.model_calls} model calls and "
                f"the lab calls among them are answered from the log"
            )
            return AgentSession(step, emitter, replay=replay).run(1, restored=False, detail=detail)
        if started == 0:
            return AgentSession(step, emitter).run(1, restored=False)
        after = review_round(state, step.archive)
        if after == WAIT:
            return [], {}
        if isinstance(after, ReviewAwaited | ReviewReceived):
            return [after], {}
        if isinstance(after, Revise):
            reviews = _reviews_text(after)
            detail = f"revising paper {after.paper.paper_id} after its reviews"
            return AgentSession(step, emitter, reviews).run(
                started + 1, restored=False, detail=detail
            )
        papers: list[Payload] = [
            RunFinished(
                reason="done",
                detail=f"{counted(len(state.papers), 'paper')} submitted; no review left to answer",
            )
        ]
        return papers, {}


def _reviews_text(revising: Revise) -> str:
    return (
        f"{reviews_note(revising)}\nSubmit the new version with `lab submit PAPER.md "
        f"--claims CLAIMS.json --revises {revising.paper.paper_id}`."
    )
