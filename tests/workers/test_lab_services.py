"""A steps worker that cannot find a run's task bundle says what it needs.

Found running the distributed mode from the README: a worker started without the
campaign's LABRXIV_GYM_PATH ended every run with `no task 'x' (known tasks: …)`, which
did not say that the bundle must be where the worker looks."""

import shutil
from pathlib import Path

import pytest

from workers.errors import WorkerError
from workers.gym.registry import builtin_gym_dir
from workers.lab.services import LabServices


def test_a_task_this_worker_cannot_find_names_the_folders_it_searched(tmp_path: Path) -> None:
    mine = tmp_path / "tasks"
    mine.mkdir()
    services = LabServices(
        workspaces=tmp_path / "ws", gym_dirs=[builtin_gym_dir(), mine], archive=None
    )  # type: ignore[arg-type]
    with pytest.raises(WorkerError) as raised:
        services.bundle("my-task")
    said = str(raised.value)
    assert "no task 'my-task'" in said and "continual-digits" in said, said
    assert f"this worker's task folders: {builtin_gym_dir()}, {mine}" in said, said
    assert "LABRXIV_GYM_PATH" in said, said
    assert services.bundle("continual-digits").card.id == "continual-digits"


def test_a_broken_card_this_worker_finds_is_named_as_tasks_validate_names_it(
    tmp_path: Path,
) -> None:
    """A card naming a policy no worker has is a problem of the card, not of where the
    worker looks: the line `tasks validate` prints, without the LABRXIV_GYM_PATH hint."""
    mine = tmp_path / "tasks"
    folder = shutil.copytree(builtin_gym_dir() / "continual-digits", mine / "my-task")
    card = folder / "task.toml"
    text = card.read_text().replace('id = "continual-digits"', 'id = "my-task"')
    card.write_text(text.replace('policies = ["search", "llm", "agent"]', 'policies = ["oracle"]'))
    services = LabServices(workspaces=tmp_path / "ws", gym_dirs=[mine], archive=None)  # type: ignore[arg-type]
    with pytest.raises(WorkerError) as raised:
        services.bundle("my-task")
    said = str(raised.value)
    assert "- task.toml: policies: no policy 'oracle' (known: agent, llm, search)" in said, said
    assert "LABRXIV_GYM_PATH" not in said, said
