"""A task bundle on disk (`gym/<id>/`): its card and folders, loaded only when valid.

The bundle's code (solution, grader, reproduce script) is never imported: it runs as
subprocesses, and `Bundle` only says how to start them.
"""

import json
import shlex
import sys
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from workers.errors import BundleError
from workers.gym.card import ParamValue, TaskCard
from workers.gym.layout import CONFIG_FILE, HIDDEN, WORKSPACE, read_card, with_interpreter
from workers.gym.validate import validate_bundle

__all__ = ["Bundle", "load_bundle", "validate_bundle"]


@dataclass(frozen=True)
class Bundle:
    """A valid bundle: its absolute folder and its parsed card."""

    path: Path
    card: TaskCard

    @property
    def id(self) -> str:
        return self.card.id

    @property
    def workspace_dir(self) -> Path:
        """The starter files each run's workspace is a copy of."""
        return self.path / WORKSPACE

    @property
    def hidden_dir(self) -> Path:
        """Data only the grader reads; never copied into a workspace."""
        return self.path / HIDDEN

    def grader_argv(self, workspace: Path) -> list[str]:
        """Argv of the trusted grader for `workspace`; run it with cwd = `self.path`."""
        return [*self.grader_command(), str(Path(workspace).resolve())]

    def grader_command(self) -> list[str]:
        """The grader's argv before the workspace: the card's, `python` the interpreter."""
        return with_interpreter(self.card.grader.command)

    def solution_argv(self) -> list[str]:
        """Argv of one experiment; run it with cwd = the run's workspace."""
        return [sys.executable, self.card.entrypoint]

    def reproduce_argv(self) -> list[str]:
        """Argv that recomputes the card's baseline and SOTA numbers; cwd = `self.path`."""
        return with_interpreter(shlex.split(self.card.reproduce.baselines))

    def starter_config(self) -> dict[str, ParamValue]:
        """The baseline config (`workspace/config.json`) that the search space varies."""
        return json.loads((self.workspace_dir / CONFIG_FILE).read_text())


def load_bundle(path: Path, policies: Collection[str] = ()) -> Bundle:
    """The bundle at `path`; raises `BundleError` listing every problem if it is not valid
    (`policies`: the policies that exist, as `validate_bundle` takes them, to check the
    card's against)."""
    path = Path(path).resolve()
    problems = validate_bundle(path, policies)
    if problems:
        listed = "\n".join(f"- {problem}" for problem in problems)
        raise BundleError(f"{path} is not a valid task bundle:\n{listed}")
    return Bundle(path=path, card=TaskCard.model_validate(read_card(path)))
