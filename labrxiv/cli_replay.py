"""`labrxiv replay RUN`: a run's trajectory step by step, and its state as of any step
or log position, rebuilt from the log alone through the fold the lab steps use
(`runstate.trajectory`)."""

from dataclasses import asdict
from typing import Any

import typer
from rich.console import Group
from rich.table import Table
from rich.text import Text

from events import Event
from labrxiv.cli_bounds import count_option
from labrxiv.cli_common import AsJson, emit_json, read_runner
from labrxiv.console import console
from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_run
from runstate import RunState
from runstate.agent_notes import AGENT_TYPES
from runstate.best import NORMALIZED, best_of
from runstate.budget import wall_used
from runstate.trajectory import Step, state_at


def replay(
    run: str = typer.Argument(..., help="The run: run-<campaign>-<lab> or a prefix of it."),
    step: int | None = count_option("--step", "Stop after this step.", least=0),
    position: int | None = count_option(
        "--position", "Stop at this log position (events at or before it)."
    ),
    as_json: AsJson = False,
) -> None:
    """A run's trajectory step by step (phase, tool and arguments, result, tokens, cost,
    best score so far, elapsed time) and its state after the last step shown."""
    if step is not None and position is not None:
        raise typer.BadParameter("give --step or --position, not both")
    runner = read_runner()
    with runner.store.engine.connect() as conn:
        stream = resolve_run(conn, run)
    events = runner.store.read_stream(stream)
    if not events:
        raise NotFound(f"run {stream} has no event in the log")

    def load(parent: str, version: int) -> list[Event]:  # a fork's parent, to the fork point
        return runner.store.read_stream(parent, limit=version + 1)

    try:
        taken, state = state_at(events, step=step, position=position, load=load)
    except ValueError:
        raise NotFound(f"run {stream} has no event at or before position {position}") from None
    if step is not None and taken[-1].number < step:
        raise NotFound(f"run {stream} has {taken[-1].number + 1} steps (0 to {taken[-1].number})")
    if as_json:
        emit_json({"run": stream, "steps": [asdict(s) for s in taken], "state": summary(state)})
        return
    console.print(Group(trajectory_table(stream, taken), state_table(state)))


def summary(state: RunState) -> dict[str, Any]:
    """What a person asks of a run's state: where it is, what it did, what it spent."""
    scored = [a.normalized for a in state.attempts if a.normalized is not None]
    return {
        "version": state.version,
        "task": state.task,
        "lab": state.lab,
        "policy": state.started.policy,
        "campaign": state.campaign,
        "phase": state.phase,
        "tool_calls": state.steps,
        "attempts": [asdict(a) for a in state.attempts],
        "best": best_of(NORMALIZED, scored),
        "papers": [p.paper_id for p in state.papers],
        "model_calls": len(state.calls),
        "model_outcomes": len(state.outcomes),
        "spend": asdict(state.spend),
        "elapsed_s": (state.last_at - state.started_at).total_seconds(),
        "wall_s": wall_used(state, state.last_at),
        "finished": None if state.finished is None else state.finished.model_dump(),
    }


def trajectory_table(stream: str, taken: list[Step]) -> Table:
    """The steps as a table; without the phase column when no step was in a phase (the
    offline and agent policies have none)."""
    inherited = [s for s in taken if s.stream != stream]
    title = f"{stream}: {len(taken)} steps"
    if inherited:  # a fork: its parent's steps first, dimmed
        title += f" (0–{inherited[-1].number} inherited from {inherited[-1].stream})"
    if any(a.reported for s in taken for a in s.actions):
        title += f"; {REPORTED} marks a call the agent's own tool ran (seen in its model traffic)"
    phased = any(s.phase for s in taken)
    table = Table(title=title, title_justify="left", expand=True)
    for name, justify in [
        ("step", "right"),
        ("t (s)", "right"),
        *([("phase", "left")] if phased else []),
        ("actions", "left"),
        ("tokens", "right"),
        ("$", "right"),
        ("best", "right"),
    ]:
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for item in taken:
        cells = _cells(item)
        if not phased:
            del cells[2]
        table.add_row(*cells, style="dim" if item.stream != stream else None)
    return table


REPORTED = "(agent)"
"""What marks a reported call in the table."""


def _cells(item: Step) -> list[str | Text]:
    return [
        str(item.number),
        f"{item.elapsed_s:.1f}",
        item.phase or "",
        _actions(item),
        str(item.spend.tokens) if item.spend.tokens else "",
        f"{item.spend.dollars:.4f}" if item.spend.dollars else "",
        "" if item.best is None else f"{item.best:.3f}",
    ]


def _actions(item: Step) -> Text:
    text = Text()
    for action in item.actions:
        if text:
            text.append("\n")
        if action.reported:
            text.append(f"{REPORTED} ", style="magenta")
        style = "red" if action.exit_code not in (0, None) else "bold"
        text.append(action.tool, style=style)
        if action.args:
            text.append(f" {action.args}", style="dim")
        if action.result:
            text.append(f"\n  → {action.result}")
    for note in item.notes:
        text.append(("\n" if text else "") + note, style="yellow")
    others = [t for t in item.types if not t.startswith("tool.") and t not in AGENT_TYPES]
    if others:
        text.append(("\n" if text else "") + " · ".join(others), style="cyan")
    return text


def state_table(state: RunState) -> Table:
    table = Table(title=f"state after version {state.version}", title_justify="left")
    table.add_column("")
    table.add_column("")
    shown = summary(state)
    shown["attempts"] = len(state.attempts)
    shown["spend"] = (
        f"{state.spend.tokens} tokens ({state.spend.reasoning_tokens} reasoning), "
        f"${state.spend.dollars:.4f}"
        + (f", {state.spend.unknown_cost} of unknown cost" if state.spend.unknown_cost else "")
    )
    if state.finished is not None:
        shown["finished"] = f"{state.finished.reason}: {state.finished.detail or ''}".strip()
    for key, value in shown.items():
        table.add_row(key, "" if value is None else str(value))
    return table
