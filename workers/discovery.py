"""Plug-ins found by name: one module (or subpackage) per implementation, each setting one
attribute, checked against its file's name. Lab policies and sandbox backends are found
this way; adding one touches one file or folder."""

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from typing import Any


def discover(
    package: str,
    path: Iterable[str],
    attribute: str,
    name_of: Callable[[Any], str],
    packages_only: bool = False,
) -> dict[str, Any]:
    """Every module of `package` (at `path`; its subpackages only, if `packages_only`)
    by name, as the value of its `attribute`. A module that sets none, or whose value is
    named otherwise than the module (`name_of`), is an `ImportError` naming it."""
    found: dict[str, Any] = {}
    for module in pkgutil.iter_modules(path):
        if packages_only and not module.ispkg:
            continue
        loaded = importlib.import_module(f"{package}.{module.name}")
        value = getattr(loaded, attribute, None)
        if value is None:
            raise ImportError(f"{loaded.__name__} sets no {attribute}")
        if name_of(value) != module.name:
            raise ImportError(f"{loaded.__name__}: {attribute} is named {name_of(value)!r}")
        found[module.name] = value
    return found
