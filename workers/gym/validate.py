"""Check a task bundle folder and name every problem at once, so one pass fixes them all.

The folder checks read the raw TOML, not the validated card: a card with a bad field
still names its grader, entrypoint and search space, and those are checked too.
"""

import hashlib
import json
import shlex
import tomllib
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from workers.gym.card import TaskCard
from workers.gym.conditions import among, applicable, as_lists
from workers.gym.conditions import problems as conditions_problems
from workers.gym.layout import (
    CARD_FILE,
    CONFIG_FILE,
    HIDDEN,
    OUTPUTS,
    WORKSPACE,
    is_inside,
    read_card,
    script_of,
)


def validate_bundle(path: Path, policies: Collection[str] = ()) -> list[str]:
    """Every problem of the bundle at `path`, one line each; empty when it is valid."""
    path = Path(path)
    if not path.is_dir():
        return [f"{path}: not a folder"]
    try:
        raw = read_card(path)
    except FileNotFoundError:
        return [f"{CARD_FILE}: missing (the task card)", *_check_folders(path, {})]
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return [f"{CARD_FILE}: not valid TOML: {exc}", *_check_folders(path, {})]
    return [
        *_check_card(raw, policies),
        *_check_policies(raw, policies),
        *_check_id(raw, path),
        *_check_folders(path, raw),
    ]


def _check_policies(raw: dict[str, Any], known: Collection[str]) -> list[str]:
    """Policies the card names that no worker has, and sections a named policy needs
    that the card leaves empty (checked when `known` is given: names, or a mapping of
    names to the sections each needs, `workers.lab.policies.policy_needs`)."""
    named = raw.get("policies", DEFAULT_POLICIES)
    if not known or not isinstance(named, list):
        return []
    needs: Mapping[str, Collection[str]] = known if isinstance(known, Mapping) else {}
    problems = []
    for name in named:
        if not isinstance(name, str):
            continue
        if name not in known:
            listed = ", ".join(sorted(known))
            problems.append(f"{CARD_FILE}: policies: no policy {name!r} (known: {listed})")
            continue
        problems += [
            f"{CARD_FILE}: policies: {name!r} needs a {section}{_WHY.get(section, '')}"
            for section in needs.get(name, ())
            if not raw.get(section)
        ]
    return problems


_WHY = {"search_space": " (the parameters it may set)"}
"""What a section a policy needs holds, as a problem line says it."""
DEFAULT_POLICIES = TaskCard.model_fields["policies"].get_default(call_default_factory=True)
"""The policies of a card that names none."""


def _unknown_policy_error(raw: dict[str, Any], known: Collection[str], error: Any) -> bool:
    """Whether `error` is about a policy name the registry check names (its pattern)."""
    loc = error["loc"]
    if not known or len(loc) != 2 or loc[0] != "policies" or not isinstance(loc[1], int):
        return False
    named = raw.get("policies")
    if not isinstance(named, list) or not isinstance(named[loc[1]], str):
        return False
    return named[loc[1]] not in known


def _check_card(raw: dict[str, Any], policies: Collection[str] = ()) -> list[str]:
    try:
        TaskCard.model_validate(raw)
    except ValidationError as exc:
        errors = [e for e in exc.errors() if not _unknown_policy_error(raw, policies, e)]
        # The card's cross-field validator (an error with no field) runs only once every
        # field is valid and stops at its first problem: the raw card is checked instead.
        return [_field_problem(error) for error in errors if error["loc"]] + _cross_field_problems(
            raw
        )
    return []


def _field_problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"])
    got = error.get("input")
    shown = isinstance(got, str | int | float | bool) and error["type"] != "missing"
    said = str(error["msg"]).removeprefix("Value error, ")  # pydantic's, for a ValueError
    message = f"{said} (got {got!r})" if shown else said
    return f"{CARD_FILE}: {where}: {message}" if where else f"{CARD_FILE}: {message}"


def _cross_field_problems(raw: dict[str, Any]) -> list[str]:
    return _subtask_problems(raw) + _space_problems(raw)


def _space_problems(raw: dict[str, Any]) -> list[str]:
    space, conditions = raw.get("search_space", {}), raw.get("search_space_conditions", {})
    if not isinstance(space, dict):
        return []
    problems = [
        f"{CARD_FILE}: search_space.{key} lists no values" for key, v in space.items() if v == []
    ]
    if isinstance(conditions, dict):
        problems += [f"{CARD_FILE}: {p}" for p in conditions_problems(space, as_lists(conditions))]
    return problems


def _subtask_problems(raw: dict[str, Any]) -> list[str]:
    subtasks = raw.get("subtasks")
    if not isinstance(subtasks, list):
        return []
    names = [item.get("name") for item in subtasks if isinstance(item, dict)]
    if len(names) != len(subtasks) or not all(isinstance(name, str) for name in names):
        return []
    problems = []
    if len(set(names)) != len(names):
        problems.append(f"{CARD_FILE}: subtask names repeat: {names}")
    primary = raw.get("primary")
    if isinstance(primary, str) and primary not in names:
        problems.append(f"{CARD_FILE}: primary {primary!r} is not one of the subtasks {names}")
    return problems


def _check_id(raw: dict[str, Any], path: Path) -> list[str]:
    task_id = raw.get("id")
    if isinstance(task_id, str) and task_id != path.resolve().name:
        return [f"{CARD_FILE}: id {task_id!r} is not the folder's name {path.resolve().name!r}"]
    return []


def _check_folders(path: Path, raw: dict[str, Any]) -> list[str]:
    problems = [*_check_workspace(path, raw), *_check_scripts(path, raw)]
    if not (path / HIDDEN).is_dir():
        problems.append(f"{HIDDEN}/: missing (the data only the grader reads)")
    return problems + _check_leaks(path, raw)


def _check_workspace(path: Path, raw: dict[str, Any]) -> list[str]:
    workspace = path / WORKSPACE
    if not workspace.is_dir():
        return [f"{WORKSPACE}/: missing (the starter files each run starts from)"]
    problems = []
    entrypoint = raw.get("entrypoint", "solution.py")
    if isinstance(entrypoint, str):
        if not is_inside(entrypoint):
            problems.append(f"entrypoint: {entrypoint!r} is not a path inside {WORKSPACE}/")
        elif not (workspace / entrypoint).is_file():
            problems.append(f"{WORKSPACE}/{entrypoint}: missing (the card's entrypoint)")
    if (workspace / OUTPUTS).exists():
        problems.append(f"{WORKSPACE}/{OUTPUTS}/: leftover results of a run; delete it")
    return problems + _check_config(workspace, raw)


def _check_config(workspace: Path, raw: dict[str, Any]) -> list[str]:
    search_space = raw.get("search_space")
    config_path = workspace / CONFIG_FILE
    if not config_path.is_file():
        return [f"{WORKSPACE}/{CONFIG_FILE}: missing (the baseline config the solution reads)"]
    try:
        config = json.loads(config_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return [f"{WORKSPACE}/{CONFIG_FILE}: not valid JSON: {exc}"]
    if not isinstance(config, dict):
        return [f"{WORKSPACE}/{CONFIG_FILE}: not a JSON object"]
    if not isinstance(search_space, dict):
        return []
    return [
        f"search_space.{key}: not a key of {WORKSPACE}/{CONFIG_FILE}"
        for key in search_space
        if key not in config
    ] + _check_starter_conditions(config, search_space, raw.get("search_space_conditions"))


def _check_starter_conditions(
    config: dict[str, Any], space: dict[str, Any], conditions: Any
) -> list[str]:
    """The starter's values the conditions read: each parameter a condition depends on,
    and each conditioned parameter that applies in the starter, holds one of its values."""
    if (
        not isinstance(conditions, dict)
        or not all(isinstance(entry, dict) for entry in conditions.values())
        or conditions_problems(space, as_lists(conditions))
    ):
        return []  # the card's own lines name those problems
    conditions = as_lists(conditions)
    read = {other for entry in conditions.values() for other in entry}
    applying = set(applicable(conditions, sorted(conditions), config))
    problems = []
    for key in sorted(read | applying):
        if key in config and isinstance(space[key], list) and not among(config[key], space[key]):
            why = "a condition reads it" if key in read else "it applies in the starter"
            problems.append(
                f"{WORKSPACE}/{CONFIG_FILE}: {key} = {config[key]!r} is not one of "
                f"search_space.{key}'s values {space[key]} ({why})"
            )
    return problems


def _scripts(raw: dict[str, Any]) -> dict[str, str]:
    """The bundle files the card's commands run, by the card field naming them."""
    found: dict[str, str] = {}
    grader = raw.get("grader")
    command = grader.get("command") if isinstance(grader, dict) else None
    if isinstance(command, list) and all(isinstance(part, str) for part in command):
        if script := script_of(command):
            found["grader.command"] = script
    reproduce = raw.get("reproduce")
    baselines = reproduce.get("baselines") if isinstance(reproduce, dict) else None
    if isinstance(baselines, str):
        try:
            script = script_of(shlex.split(baselines))
        except ValueError:
            script = None
        if script:
            found["reproduce.baselines"] = script
    return found


def _check_scripts(path: Path, raw: dict[str, Any]) -> list[str]:
    problems = []
    for field, script in _scripts(raw).items():
        if not is_inside(script):
            problems.append(f"{field}: {script!r} is not a path inside the bundle")
        elif (path / script).is_dir():
            problems.append(f"{script}: a folder; name the script file it runs (named by {field})")
        elif not (path / script).is_file():
            problems.append(f"{script}: missing (named by {field})")
        elif Path(script).parts[0] == WORKSPACE:
            problems.append(f"{field}: {script!r} is inside {WORKSPACE}/, where labs can edit it")
    return problems


def _check_leaks(path: Path, raw: dict[str, Any]) -> list[str]:
    """Workspace files that are copies of hidden files or of the grader, and symlinks."""
    workspace = path / WORKSPACE
    if not workspace.is_dir():
        return []
    secret: dict[str, str] = {}
    if (path / HIDDEN).is_dir():
        secret |= _digests(path / HIDDEN, path)
    grader = _scripts(raw).get("grader.command")
    if grader and is_inside(grader) and (path / grader).is_file():
        grader_dir = (path / grader).parent
        if grader_dir.resolve() == path.resolve():
            secret |= _digests(path / grader, path)
        elif grader_dir.resolve() != workspace.resolve():
            secret |= _digests(grader_dir, path)
    problems = []
    for file in sorted(workspace.rglob("*")):
        shown = file.relative_to(path).as_posix()
        if file.is_symlink():
            problems.append(f"{shown}: a symlink; the workspace must hold plain files")
        elif file.is_file() and (digest := _digest(file)) in secret:
            problems.append(f"{shown}: a copy of {secret[digest]}, which must stay out of reach")
    return problems


def _digests(root: Path, bundle: Path) -> dict[str, str]:
    """Digest → bundle-relative name of every non-empty plain file at or under `root`."""
    files = [root] if root.is_file() else sorted(root.rglob("*"))
    digests: dict[str, str] = {}
    for file in files:
        if file.is_file() and not file.is_symlink() and (digest := _digest(file)):
            digests[digest] = file.relative_to(bundle).as_posix()
    return digests


def _digest(file: Path) -> str:
    """The file's sha256, or '' for an empty file (which proves no leak)."""
    data = file.read_bytes()
    return hashlib.sha256(data).hexdigest() if data else ""
