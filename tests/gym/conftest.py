"""Fixtures for task bundles: copies of a built-in bundle in `tmp_path`, to break at will."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from workers.gym.registry import builtin_gym_dir

TEMPLATE = "continual-digits"
"""The built-in bundle the copies are made from."""


@pytest.fixture
def bundle_copy(tmp_path: Path) -> Callable[..., Path]:
    """Makes a clean copy (no caches) of the template bundle under `tmp_path/gym/<name>`."""

    def make(name: str = TEMPLATE) -> Path:
        return shutil.copytree(
            builtin_gym_dir() / TEMPLATE,
            tmp_path / "gym" / name,
            ignore=shutil.ignore_patterns("__pycache__"),
        )

    return make
