"""What the commands that run labs share (`campaign`, `demo`, `fork`, `resume`, `worker`,
`tasks trial`): the checks made before anything is written, and the report of a watched
campaign. Each command's module imports these from here, never from another command's."""

import dataclasses
from collections.abc import Sequence

import typer
from rich.markup import escape

from labrxiv.campaigns import CampaignOutcome
from labrxiv.cli_errors import say_error
from labrxiv.console import console
from labrxiv.exit_codes import EVERY_RUN_ERRORED, NOT_FINISHED
from labrxiv.interrupt import Left, press_ctrl_c, say_stopped
from labrxiv.report import count_endings, every_run_errored, interrupted, print_endings
from labrxiv.settings import Settings
from labrxiv.wiring import Embedded, gym_dirs, open_working
from workers.bus.processes import ChildDied, Fleet
from workers.errors import BundleError
from workers.gym.card import TaskCard
from workers.gym.registry import find_bundle
from workers.lab.policies import policy_needs
from workers.sandbox.backends import choose, describe
from workers.sandbox.base import SandboxUnavailable


def check_task(settings: Settings, task: str, policy: str, hint: str = "") -> TaskCard:
    """The task's card; stop with exit code 2 and one line (the bundle's problems, as
    `tasks validate` names them, if it is broken) when `task` is unknown or broken, or
    does not support `policy`, before anything is written."""
    needs = policy_needs()
    try:
        card = find_bundle(task, gym_dirs(settings), needs).card
    except BundleError as exc:
        console.print(f"[red]{escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(2) from None
    known = sorted(needs)
    if policy not in known:
        console.print(
            f"[red]no policy {escape(repr(policy))} (known: {', '.join(known)})[/]", soft_wrap=True
        )
        raise typer.Exit(2)
    if policy not in card.policies:
        supported = " and ".join(card.policies)
        kind = "policy" if len(card.policies) == 1 else "policies"
        console.print(
            f"[red]task {task} is for the {supported} {kind}, not {policy}{escape(hint)}[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    return card


def require_sandbox(settings: Settings, say: bool = True) -> str:
    """The sandbox backend lab code runs in here (`LABRXIV_SANDBOX`), said in one line
    (`say_sandbox`) unless `say` is False; exit code 2 and the reason when none can run on
    this machine, before any run starts: every run would end in `error`."""
    try:
        backend = choose(settings.sandbox)
    except SandboxUnavailable as exc:
        console.print(f"[red]labs cannot run here: {escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(2) from None
    if say:
        say_sandbox(settings)
    return backend.backend


def say_sandbox(settings: Settings) -> None:
    """One line: which sandbox backend lab code runs in here (checked by `require_sandbox`)."""
    console.print(describe(choose(settings.sandbox)), markup=False, soft_wrap=True)


def start_embedded(
    settings: Settings, runs: int, agent: bool, processes: int | None = None
) -> Embedded:
    """`open_working`, with a worker process that died while starting said in one line
    (exit 1); with worker processes, says how many, and has the watch stop as at Ctrl-C
    if one dies (its runs are left `interrupted`: `labrxiv resume` goes on)."""
    try:
        system = open_working(settings, runs, agent, processes)
    except ChildDied as exc:
        say_error(f"{exc} while starting")
        raise typer.Exit(1) from None
    if isinstance(system.bus, Fleet):
        console.print(f"steps: {system.bus.processes} worker processes (--processes)")
        system.bus.watch(_stop_for)
    return system


def _stop_for(why: str) -> None:
    """A worker process died: say so, and stop as at Ctrl-C."""
    say_error(f"{why}: stopping")
    press_ctrl_c()


def report_watch(outcome: CampaignOutcome, left: Sequence[Left] | None) -> int:
    """`report_outcome`, and where the watch stopped the work at `--timeout` (embedded:
    `left`, the runs it left), those runs marked interrupted, as the log has them, and
    what was left with the command that goes on with it."""
    if left is None:
        return report_outcome(outcome)
    runs = [run for item in left for run in item.runs]
    outcome = dataclasses.replace(outcome, endings=interrupted(outcome.endings, runs))
    code = report_outcome(outcome)
    say_stopped(console, list(left), unseen=len(outcome.runs) - len(outcome.endings))
    return code


def report_outcome(outcome: CampaignOutcome) -> int:
    """Print how each run ended and the campaign's line; the exit code it means."""
    print_endings(console, outcome.endings)
    state = "finished" if outcome.finished else "NOT finished"
    counted = count_endings(outcome.endings) if outcome.endings else f"{len(outcome.runs)} runs"
    console.print(f"campaign {outcome.campaign}: {state} in {outcome.seconds:.1f}s ({counted})")
    if not outcome.finished:
        return NOT_FINISHED
    if every_run_errored(outcome.endings):
        console.print(
            "[red]every run ended in error: nothing was measured (each run's reason is above)[/]"
        )
        return EVERY_RUN_ERRORED
    return 0
