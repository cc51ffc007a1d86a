"""Sandbox backends: one module each, found by name, behind one protocol (`base.Sandbox`).

Adding a backend touches one file: write `workers/sandbox/backends/<name>.py` that sets
`BACKEND`, a class built as `BACKEND(root, hidden=..., limits=...)` that follows
`Sandbox`, named `<name>` (`BACKEND.backend`), with a `strength` (`auto` takes the
strongest that works here), a one-line `summary`, and a `check()` class method that
raises `SandboxUnavailable` saying why, in one line, where it cannot run.
`LABRXIV_SANDBOX` names one, or `auto`.
"""

import logging
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import ClassVar, Protocol

from workers.discovery import discover
from workers.sandbox import cgroup
from workers.sandbox.base import Limits, Sandbox, SandboxUnavailable

__all__ = ["AUTO", "Backend", "backend_names", "choose", "describe", "new_sandbox"]

AUTO = "auto"
"""The setting that takes the strongest backend that works on this machine."""

log = logging.getLogger(__name__)


class Backend(Protocol):
    """A sandbox backend's class: how to make one, and whether it works here."""

    backend: ClassVar[str]
    strength: ClassVar[int]
    summary: ClassVar[str]

    def __call__(
        self, root: Path, hidden: Sequence[Path] = (), limits: Limits | None = None
    ) -> Sandbox: ...

    def check(self) -> None: ...


@cache
def _backends() -> dict[str, Backend]:
    return discover(__name__, __path__, "BACKEND", lambda backend: backend.backend)


def backend_names() -> list[str]:
    """The names of every backend found, strongest first."""
    return sorted(_backends(), key=lambda name: -_backends()[name].strength)


@cache
def choose(setting: str = AUTO) -> Backend:
    """The backend `setting` names, checked to work here; `auto`: the strongest that does.

    Raises `SandboxUnavailable` with the reason in one line: the named backend's, or for
    `auto` the weakest's (the one meant for any user), the stronger ones' in brackets."""
    if setting != AUTO:
        if setting not in _backends():
            known = ", ".join([AUTO, *backend_names()])
            raise SandboxUnavailable(f"no sandbox backend {setting!r}; known: {known}")
        chosen = _backends()[setting]
        chosen.check()
        return chosen
    reasons = []
    for name in backend_names():
        try:
            _backends()[name].check()
        except SandboxUnavailable as exc:
            reasons.append((name, str(exc)))
            continue
        return _backends()[name]
    if not reasons:
        raise SandboxUnavailable("no sandbox backend is installed (workers/sandbox/backends)")
    _weakest, why = reasons[-1]
    others = "; ".join(f"{name}: {reason}" for name, reason in reasons[:-1])
    raise SandboxUnavailable(f"{why} ({others})" if others else why)


def new_sandbox(
    setting: str, root: Path, hidden: Sequence[Path] = (), limits: Limits | None = None
) -> Sandbox:
    """A sandbox of the backend `setting` chooses (`choose`) on the workspace `root`."""
    return choose(setting)(root, hidden=hidden, limits=limits)


def describe(backend: Backend) -> str:
    """The one line that says, at start, which sandbox lab code runs in and how a call's
    process tree is bounded here: by a cgroup of its own, or per process where none can
    be made (and why; it is not logged again)."""
    why = cgroup.probe()
    bounds = (
        "a cgroup per call bounds its memory and processes"
        if why is None
        else f"memory and processes bounded per process (rlimits): {why}"
    )
    return f"sandbox: {backend.backend} ({backend.summary}; {bounds})"
