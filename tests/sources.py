"""The project's own Python sources, for tests that read the code: every `*.py` under the
named folders, leaving out hidden folders (an environment a bench made, a cache)."""

from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sources(packages: Iterable[str]) -> Iterator[Path]:
    """The `*.py` files under each of `packages` (folders of the checkout), sorted."""
    for package in packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            if not any(part.startswith(".") for part in path.relative_to(ROOT).parts):
                yield path
