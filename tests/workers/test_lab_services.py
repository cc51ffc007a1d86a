"""A steps worker that cannot find a run's task bundle says what it needs.

Found running the distributed mode from the README: a worker started without the
campaign's LABRXIV_GYM_PATH ended every run with `no task 'x' (known tasks: …)`, which
did not say that the bundle must be where the worker looks."""

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
