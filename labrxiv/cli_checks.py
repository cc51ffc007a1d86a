"""Checks of command options that build event payloads: a wrong value is one line naming
the option, and exit code 2, before anything is written."""

import tempfile
from pathlib import Path

import typer
from pydantic import ValidationError

from events.payloads import Budget, LlmConfig
from labrxiv.cli_errors import say_error
from labrxiv.settings import http_url_problem


def budget_or_exit(prefix: str = "--", **limits: float | None) -> Budget:
    """A `Budget` of `limits` (its field names), each an option `prefix` + the field
    name with dashes (`--dollars`, `--campaign-tokens`)."""
    try:
        return Budget(**limits)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0])
            option = prefix + field.replace("_", "-")
            problems.append(f"{option} {limits.get(field)!r}: {error['msg']}")
        say_error("; ".join(problems))
        raise typer.Exit(2) from None


def http_url_or_exit(option: str, value: str | None) -> str | None:
    """`value`, an endpoint's URL, or exit 2 where it is not one (as `OPENAI_BASE_URL`
    is checked: `labrxiv.settings.http_url_problem`)."""
    problem = None if value is None else http_url_problem(value)
    if problem is not None:
        say_error(f"{option} {value!r}: {problem}")
        raise typer.Exit(2)
    return value


def writable_folder_or_exit(option: str, folder: Path) -> None:
    """Exit 2 naming `option` unless `folder` is, or can be made, a folder this process
    can write in. Nothing is left behind: the folder, or the nearest of its parents that
    exists, is tried with a file made and removed at once."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    problem = None
    if not existing.is_dir():
        problem = f"{existing} is not a folder"
    else:
        try:
            with tempfile.TemporaryFile(dir=existing):
                pass
        except OSError as exc:
            problem = f"cannot write in {existing}: {exc.strerror}"
    if problem is not None:
        say_error(f"{option} {folder}: {problem}")
        raise typer.Exit(2)


def refuse_llm_options(
    given: dict[str, tuple[str, bool]], reads: frozenset[str], labs: str
) -> None:
    """Stop with exit code 2 when a model option was given (`given`: option → the model
    setting it sets, whether it was given) to labs that do not read its setting (`reads`:
    those they read, `Policy.model_settings`; `labs` says which labs they are): a mistake,
    and unchecked (`--tool-protocol nope`, a search run "with a stronger model", an agent
    "at temperature 0.2")."""
    named = [option for option, (setting, was) in given.items() if was and setting not in reads]
    if named:
        say_error(f"{', '.join(named)}: for llm labs only, and {labs}")
        raise typer.Exit(2)


def llm_config_or_exit(fields: dict[str, object]) -> LlmConfig:
    """The llm labs' settings validated as `run.started` will be, or exit code 2 with one
    line naming each problem, before anything is written (unchecked, the run's first
    event was dead-lettered and its campaign watched a run that never began). An empty
    model is refused here: the payload takes one, no endpoint does."""
    if not fields.get("model"):
        say_error("--model is required for --policy llm and --policy agent (the model called)")
        raise typer.Exit(2)
    try:
        return LlmConfig.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'] if p != '[key]')}: {e['msg']}"
            for e in exc.errors()
        )
        say_error(f"bad llm settings: {problems}")
        raise typer.Exit(2) from None
