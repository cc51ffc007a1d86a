"""A `BehaviourTally` as plain JSON values and back, so a read model can keep a running
run's tally in its row and go on adding the run's next events a page later.

Everything the tally holds goes in, in its own order (dicts keep the order events made
them), so a tally saved and loaded after any event and then given the rest of the run
gives the same figures as one that saw the run in one go, to the last bit of every float:
sums go on from the stored value in the same order, and JSON carries a float exactly
(orjson writes the shortest text that reads back to the same double).
"""

from array import array
from collections import defaultdict
from datetime import datetime
from typing import Any
from uuid import UUID

from analysis.tally import BehaviourTally
from events.spend import Spend


def state_of(tally: BehaviourTally) -> dict[str, Any]:
    """The tally's state as JSON values (a dict `tally_from` reads back). It shares the
    tally's lists and dicts, so it is to be serialized before more events are added."""
    return {
        "started": tally.started,
        "campaign": tally.campaign,
        "started_at": _time(tally.started_at),
        "last_at": _time(tally.last_at),
        "stopped_s": tally.stopped_s,
        "stopped_at": _time(tally.stopped_at),
        "finished": tally.finished,
        "events": tally.events,
        "papers": tally.papers,
        "step": tally.step,
        "cause": None if tally.cause is None else str(tally.cause),
        "phase": tally.phase,
        "entered_phase": tally.entered_phase,
        "action_s": tally.action_s.tolist(),
        "action_tool": tally.action_tool,
        "action_phase": tally.action_phase,
        "tool_s": dict(tally.tool_s),
        "inside": tally.inside,
        "model_s": tally.model_s,
        "calls": tally.calls,
        "answered": tally.answered,
        "failed": tally.failed,
        "phase_of_call": tally.phase_of_call,
        "spend": vars(tally.spend),
        "by_phase": {k: vars(v) for k, v in tally.by_phase.items()},
        "by_model": {k: vars(v) for k, v in tally.by_model.items()},
        "scored": tally.scored,
        "best": tally.best,
        "best_raw": tally.best_raw,
        "best_attempt": tally.best_attempt,
        "best_at_s": tally.best_at_s,
        "best_step": tally.best_step,
    }


def tally_from(run: str, state: dict[str, Any]) -> BehaviourTally:
    """The tally of `run` whose state `state_of` gave."""
    tally = BehaviourTally(run)
    tally.take_start(state["started"])
    tally.campaign = state["campaign"]
    tally.started_at = _parse(state["started_at"])
    tally.last_at = _parse(state["last_at"])
    tally.stopped_s = state.get("stopped_s", 0.0)
    tally.stopped_at = _parse(state.get("stopped_at"))
    tally.finished = state["finished"]
    tally.events = state["events"]
    tally.papers = state["papers"]
    tally.step = state["step"]
    tally.cause = None if state["cause"] is None else UUID(state["cause"])
    tally.phase = state["phase"]
    tally.entered_phase = state["entered_phase"]
    tally.action_s = array("d", state["action_s"])
    tally.action_tool = list(state["action_tool"])
    tally.action_phase = list(state["action_phase"])
    tally.tool_s = defaultdict(float, state["tool_s"])
    tally.inside = dict(state.get("inside", {}))
    tally.model_s = state["model_s"]
    tally.calls = state["calls"]
    tally.answered = state["answered"]
    tally.failed = state["failed"]
    tally.phase_of_call = dict(state["phase_of_call"])
    tally.spend = Spend(**state["spend"])
    tally.by_phase = {k: Spend(**v) for k, v in state["by_phase"].items()}
    tally.by_model = {k: Spend(**v) for k, v in state["by_model"].items()}
    tally.scored = state["scored"]
    tally.best = state["best"]
    tally.best_raw = state["best_raw"]
    tally.best_attempt = state["best_attempt"]
    tally.best_at_s = state["best_at_s"]
    tally.best_step = state["best_step"]
    return tally


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _parse(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)
