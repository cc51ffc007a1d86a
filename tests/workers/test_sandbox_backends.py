"""Sandbox backends: found by name, chosen by `LABRXIV_SANDBOX`, refusing in one line."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from labrxiv.settings import SettingsError, load_settings
from tests.needs import missing, needs_root
from tests.unprivileged import NORMAL_USER, normal_user, run_as
from workers.sandbox import jail
from workers.sandbox.backends import AUTO, backend_names, choose, new_sandbox, userns
from workers.sandbox.base import SandboxUnavailable
from workers.sandbox.local import LocalSandbox


@pytest.fixture(autouse=True)
def fresh_choice() -> Iterator[None]:
    """Each test chooses afresh (the checks are cached for a process's life)."""
    for cached in (choose, userns.check_userns, jail.check_available):
        cached.cache_clear()
    yield
    for cached in (choose, userns.check_userns, jail.check_available):
        cached.cache_clear()


def test_backends_are_found_by_name_strongest_first() -> None:
    assert backend_names() == ["jail", "userns"]


def test_the_setting_names_a_backend_or_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABRXIV_SANDBOX", "docker")
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert "LABRXIV_SANDBOX='docker': must be auto, jail or userns" in str(info.value)
    monkeypatch.setenv("LABRXIV_SANDBOX", "userns")
    assert load_settings().sandbox == "userns"
    assert load_settings(sandbox=AUTO).sandbox == AUTO


def test_an_unknown_backend_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(SandboxUnavailable, match="no sandbox backend 'nope'; known: auto, jail"):
        choose("nope")


def test_auto_takes_the_root_jail_as_root_and_the_rootless_one_otherwise() -> None:
    try:
        chosen = choose(AUTO)
    except SandboxUnavailable as exc:
        missing(f"no sandbox works here: {exc}")
    assert chosen.backend == ("jail" if os.geteuid() == 0 else "userns")


def test_a_sandbox_is_made_through_the_registry(tmp_path: Path) -> None:
    needs_root("the root jail runs as root")
    try:
        box = new_sandbox("jail", tmp_path / "ws")
    except SandboxUnavailable as exc:
        missing(f"the root jail does not work here (it needs root): {exc}")
    assert isinstance(box, LocalSandbox) and box.backend == "jail"


@pytest.mark.parametrize(
    ("setting", "value", "expected"),
    [
        (
            "kernel.unprivileged_userns_clone",
            "0",
            "unprivileged user namespaces are off here (kernel.unprivileged_userns_clone=0): "
            "as root, run `sysctl -w kernel.unprivileged_userns_clone=1`",
        ),
        (
            "user.max_user_namespaces",
            "0",
            "(user.max_user_namespaces=0): as root, run `sysctl -w user.max_user_namespaces=15000`",
        ),
        (
            "kernel.apparmor_restrict_unprivileged_userns",
            "1",
            "(kernel.apparmor_restrict_unprivileged_userns=1): as root, run "
            "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04's",
        ),
    ],
)
def test_user_namespaces_turned_off_are_named_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str, expected: str
) -> None:
    """Where the kernel refuses user namespaces, `auto` (as a user) and `userns` say which
    setting refuses them and the command that allows them, in one line, before any run."""
    refused = subprocess.CompletedProcess(
        [], 1, "", "unshare: unshare failed: Operation not permitted"
    )
    monkeypatch.setattr(userns.subprocess, "run", lambda *a, **k: refused)
    monkeypatch.setattr(userns, "sysctl", lambda name: value if name == setting else None)
    monkeypatch.setattr(userns.os, "geteuid", lambda: 1000)
    for chosen in ("userns", AUTO):
        for cached in (choose, userns.check_userns, jail.check_available):
            cached.cache_clear()
        with pytest.raises(SandboxUnavailable) as info:
            choose(chosen)
        said = str(info.value)
        assert expected in said and "\n" not in said, said
        assert said.startswith("unprivileged user namespaces are off here"), said


def test_user_namespaces_refused_by_a_container_say_what_to_allow(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    refused = subprocess.CompletedProcess(
        [], 1, "", "unshare: unshare failed: Operation not permitted"
    )
    monkeypatch.setattr(userns.subprocess, "run", lambda *a, **k: refused)
    monkeypatch.setattr(userns, "sysctl", lambda name: None)
    monkeypatch.setattr(userns.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable) as info:
        choose("userns")
    said = str(info.value)
    assert said.startswith(
        "unprivileged user namespaces are not permitted here (unshare: unshare failed: "
        "Operation not permitted): in a container, allow them"
    ), said


DOCKER_PROC_MASKS = "\n".join(
    [
        f"if [ -d {path} ]; then mount -t tmpfs -o ro tmpfs {path}; "
        f"elif [ -e {path} ]; then mount --bind /dev/null {path}; fi"
        for path in (
            "/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
            "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
        )
    ]
    + [
        f"mount --bind {path} {path} && mount -o remount,bind,ro {path}"
        for path in ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
    ]
)  # fmt: skip
"""Shell lines covering /proc as Docker does by default (runc's masked and read-only
paths), which `--security-opt systempaths=unconfined` lifts."""


def test_a_containers_masked_proc_is_refused_saying_what_to_lift(tmp_path: Path) -> None:
    """The kernel refuses a new /proc in a user namespace while /proc has covered paths, as
    a Docker container's has (docs/deploy.md, "What the steps workers need"): the rootless
    backend, run as a normal user under those covers, refuses naming the option that
    lifts them; without the covers, it works."""
    normal_user()
    check = (
        "from workers.sandbox.backends.userns import check_userns\n"
        "from workers.sandbox.base import SandboxUnavailable\n"
        "try:\n    check_userns()\nexcept SandboxUnavailable as exc:\n"
        "    print(exc)\n    raise SystemExit(3)\n"
    )
    repo = Path(__file__).resolve().parents[2]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    command = [sys.executable, "-c", check]
    plain = run_as(NORMAL_USER, command, repo, env, timeout=120)
    if plain.returncode != 0:
        missing(f"the rootless sandbox does not work here: {plain.stdout}{plain.stderr}")
    masked = run_as(NORMAL_USER, command, repo, env, timeout=120, setup=DOCKER_PROC_MASKS)
    said = masked.stdout.strip()
    assert masked.returncode == 3, masked.stdout + masked.stderr
    assert "mount labrxiv-proc on /mnt/proc: Operation not permitted" in said, said
    assert "systempaths=unconfined" in said and "\n" not in said, said


def test_auto_with_no_backend_installed_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from workers.sandbox import backends

    monkeypatch.setattr(backends, "backend_names", lambda: [])
    backends.choose.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="no sandbox backend is installed"):
            backends.choose(AUTO)
    finally:
        backends.choose.cache_clear()
