"""The files of a task bundle (`gym/<id>/`) and how its commands are spelled.

Shared by loading and validation; nothing here imports or runs bundle code.
"""

import sys
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

CARD_FILE = "task.toml"
"""The task card, at the bundle's top."""
WORKSPACE = "workspace"
"""The starter files each run's workspace is a copy of."""
HIDDEN = "hidden"
"""Data only the grader reads (test labels, ground truth)."""
CONFIG_FILE = "config.json"
"""The baseline config inside `workspace/`; its keys are the search space's."""
OUTPUTS = "outputs"
"""Where a solution writes its results inside a run's workspace."""


def read_card(bundle: Path) -> dict[str, Any]:
    """The raw TOML of the bundle's card; raises OSError or `tomllib.TOMLDecodeError`
    (text that is not UTF-8 too: TOML is UTF-8)."""
    data = (Path(bundle) / CARD_FILE).read_bytes()
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise tomllib.TOMLDecodeError(f"not UTF-8 text (byte {exc.start})") from None
    return tomllib.loads(text)


def with_interpreter(argv: list[str]) -> list[str]:
    """`argv` with a leading `python` replaced by this interpreter (so the venv's packages)."""
    return [sys.executable, *argv[1:]] if argv and argv[0] == "python" else list(argv)


def script_of(argv: list[str]) -> str | None:
    """The bundle file a command runs (`python x.py …` → `x.py`), or None for `python -m …`."""
    if not argv:
        return None
    if argv[0] != "python":
        return argv[0]
    if len(argv) < 2 or argv[1].startswith("-"):
        return None
    return argv[1]


def is_inside(relative: str) -> bool:
    """Whether a path named in the card stays inside the folder it is relative to."""
    path = PurePosixPath(relative)
    return bool(relative) and not path.is_absolute() and ".." not in path.parts
