"""Where task bundles live: the built-in `gym/` folder, and extra folders a caller names.

Extra folders come as an argument (the CLI reads `LABRXIV_GYM_PATH`); nothing here reads
the environment. A task's id is its folder's name, so one id in two places is an error,
not a silent override.
"""

from collections.abc import Collection, Sequence
from pathlib import Path

import workers
from workers.errors import BundleError, UnknownTask
from workers.gym.bundle import Bundle, load_bundle
from workers.gym.layout import CARD_FILE


def builtin_gym_dir() -> Path:
    """The repository's `gym/` folder: the parent of the `workers` package holds it."""
    return Path(workers.__file__).resolve().parent.parent / "gym"


def bundle_dirs(extra_dirs: Sequence[Path] = ()) -> dict[str, Path]:
    """Every bundle folder (one holding a task.toml) by task id, sorted by id.

    An extra folder is either a bundle itself or a folder of bundles, like `gym/`.
    """
    found: dict[str, Path] = {}
    builtin = builtin_gym_dir()
    for root in [builtin, *map(Path, extra_dirs)]:
        if not root.is_dir():
            if root == builtin:
                continue  # an installed (non-editable) package has no gym/ beside it
            raise BundleError(f"{root}: not a folder of task bundles")
        if (root / CARD_FILE).is_file():
            folders = [root]
        else:
            folders = [child for child in root.iterdir() if (child / CARD_FILE).is_file()]
        for folder in folders:
            folder = folder.resolve()
            seen = found.setdefault(folder.name, folder)
            if seen != folder:
                raise BundleError(f"task {folder.name!r} is in two folders: {seen} and {folder}")
    return dict(sorted(found.items()))


def find_bundle(
    task_id: str, extra_dirs: Sequence[Path] = (), policies: Collection[str] = ()
) -> Bundle:
    """The valid bundle of `task_id`; raises `BundleError` if it is unknown or broken
    (`policies`: those that exist, to check the card's against, `load_bundle`)."""
    folders = bundle_dirs(extra_dirs)
    if task_id not in folders:
        known = ", ".join(folders) or "none"
        raise UnknownTask(f"no task {task_id!r} (known tasks: {known})")
    return load_bundle(folders[task_id], policies)
