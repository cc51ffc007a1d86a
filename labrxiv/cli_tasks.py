"""`labrxiv tasks`: list, show and validate research task bundles (`gym/<id>/`)."""

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table

from labrxiv.cli_common import GymPath, settings_or_exit, with_gym_path
from labrxiv.cli_group import command_group
from labrxiv.console import console
from workers.errors import BundleError
from workers.gym.bundle import Bundle, load_bundle, validate_bundle
from workers.gym.card import Budgets
from workers.gym.conditions import when
from workers.gym.registry import bundle_dirs, find_bundle
from workers.lab.policies import policy_needs

tasks_app = command_group("Research task bundles: list, show, validate.", no_args_is_help=True)


def _extra_dirs(gym_path: list[Path] | None) -> list[Path]:
    """The user's task folders: LABRXIV_GYM_PATH, then --gym-path options."""
    return with_gym_path(settings_or_exit(), gym_path).gym_path


def _folders(gym_path: list[Path] | None) -> dict[str, Path]:
    try:
        return bundle_dirs(_extra_dirs(gym_path))
    except BundleError as exc:
        console.print(f"[red]{escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(2) from None


@tasks_app.command("list")
def tasks_list(gym_path: GymPath = None) -> None:
    """Every task found: id, title, subtasks (primary first) and the policies it supports."""
    table = Table(title="tasks")
    table.add_column("id", overflow="fold")
    table.add_column("title", overflow="fold")
    table.add_column("subtasks", overflow="fold")
    table.add_column("policies", overflow="fold")
    for task_id, folder in _folders(gym_path).items():
        try:
            card = load_bundle(folder, policy_needs()).card
        except BundleError:
            invalid = f"[red]invalid: labrxiv tasks validate {escape(str(folder))}[/]"
            table.add_row(task_id, invalid, "", "")
            continue
        names = [card.primary] + [s.name for s in card.subtasks if s.name != card.primary]
        table.add_row(card.id, escape(card.title), "\n".join(names), ", ".join(card.policies))
    console.print(table)


@tasks_app.command("show")
def tasks_show(
    task_id: str = typer.Argument(..., help="The task's id (its folder's name)."),
    as_json: bool = typer.Option(False, "--json", help="Print the card as JSON."),
    gym_path: GymPath = None,
) -> None:
    """One task's card in full, with its folder and the command that reproduces its numbers."""
    _folders(gym_path)  # task folders that cannot be read: exit 2, as `tasks list` says
    try:
        bundle = find_bundle(task_id, _extra_dirs(gym_path), policy_needs())
    except BundleError as exc:
        console.print(f"[red]{escape(str(exc))}[/]", soft_wrap=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(bundle.card.model_dump_json(indent=2))
        return
    _print_card(bundle)


def _budgets(budgets: Budgets) -> str:
    """The limits a card names, in words (`20 attempts, 900 s, 40 steps`)."""
    named = [f"{budgets.attempts} attempts", f"{budgets.wall_seconds:g} s"]
    if budgets.steps is not None:
        named.append(f"{budgets.steps} steps")
    if budgets.tokens is not None:
        named.append(f"{budgets.tokens} tokens")
    if budgets.dollars is not None:
        named.append(f"${budgets.dollars:g}")
    return ", ".join(named)


def _print_card(bundle: Bundle) -> None:
    card = bundle.card
    lines = [
        f"[bold]{card.id}[/]: {escape(card.title)}",
        f"folder: {escape(str(bundle.path))}",
        f"policies supported: {', '.join(card.policies)}",
        f"primary subtask: {card.primary}",
        f"experiment: {escape(shlex.join(bundle.solution_argv()))} (in a copy of workspace/)",
        f"budgets per run: {_budgets(card.budgets)} (unless the command sets its own)",
        f"grader: {escape(shlex.join(bundle.grader_command()))} <workspace>"
        f" (from the folder, timeout {card.grader.timeout_seconds:g} s)",
        f"reproduce: cd {escape(shlex.quote(str(bundle.path)))}"
        f" && {escape(shlex.join(bundle.reproduce_argv()))}",
    ]
    for line in lines:
        console.print(line, soft_wrap=True)
    console.print("\n[bold]goal[/]")
    console.print(escape(card.goal.strip()))
    console.print("\n[bold]subtasks[/]")
    for s in card.subtasks:
        role = " (primary)" if s.name == card.primary else ""
        console.print(
            f"[bold]{s.name}[/]{role}: {escape(s.metric)}, {s.direction};"
            f" baseline {s.baseline:g}, sota {s.sota:g}",
            soft_wrap=True,
        )
        if s.description:
            console.print(Padding(escape(s.description.strip()), (0, 0, 0, 2)))
    if card.search_space:
        starter = bundle.starter_config()
        space = Table(title="search space")
        columns = ("parameter", "values", "starter", "applies when")
        for column in columns[: 4 if card.search_space_conditions else 3]:
            space.add_column(column)
        for key, values in card.search_space.items():
            cells = [key, ", ".join(map(str, values)), str(starter.get(key, "-"))]
            applies = when(card.search_space_conditions, key) or "always"
            space.add_row(*cells, *([escape(applies)] if card.search_space_conditions else []))
        console.print(space)


@tasks_app.command("validate")
def tasks_validate(
    path: Annotated[Path, typer.Argument(help="A bundle folder.")],
    run: Annotated[
        bool,
        typer.Option(
            "--run",
            help="Also run the starter solution and the grader once in the sandbox and "
            "check the grader's output against the card (in the sandbox the labs would use here).",
        ),
    ] = False,
) -> None:
    """Check a bundle folder: print every problem and exit 1, or print ok. With --run,
    then run it once and print each check: exit 1 if one failed, 2 if it cannot run here."""
    problems = validate_bundle(path, policies=policy_needs())
    if problems:
        console.print(f"[red]{len(problems)} problem(s) in {escape(str(path))}:[/]", soft_wrap=True)
        for problem in problems:
            console.print(f"- {escape(problem)}", soft_wrap=True)
        if run:
            console.print("not run: fix the problems above first")
        raise typer.Exit(1)
    if run:
        _trial(path)
    console.print("ok")


def _trial(path: Path) -> None:
    """Run the bundle once (`workers.gym.trial`), print each check; exit 1 on a failure."""
    from labrxiv.cli_labs import require_sandbox
    from labrxiv.wiring import gym_dirs
    from workers.gym.trial import failed, trial

    settings = settings_or_exit()
    sandbox = require_sandbox(settings)
    bundle = load_bundle(path)
    console.print(
        f"running {escape(str(path))} once: the starter solution in the sandbox, then the grader",
        soft_wrap=True,
    )
    # Like a lab's: the solution sees no bundle, nor the data folder with the log.
    checks = trial(bundle, hidden=[*gym_dirs(settings), settings.data_dir], sandbox=sandbox)
    style = {"ok": "green", "FAILED": "red", "skipped": "dim", "note": "yellow"}
    for check in checks:
        console.print(
            f"[{style[check.status]}]{check.status:<8}[/] {check.name:<9} {escape(check.detail)}",
            soft_wrap=True,
        )
    if failed(checks):
        raise typer.Exit(1)
