"""`labrxiv demo` run by a user who is not root, for real (not a patched `geteuid`): it
refuses in one line with exit code 2 and leaves nothing half-written.

The demo runs as `nobody` through `setpriv`. The interpreter may live where `nobody`
cannot go (pyenv under a `/root` of mode 700): such a folder is covered, in a private
mount namespace of the test's own, by a world-readable tmpfs into which the folders the
interpreter needs are bound back. Nothing changes outside that namespace.
"""

import os
import shlex
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import labrxiv
from tests.needs import missing

SANDBOX_USER = "nobody"
SANDBOX_GROUP = "nogroup"


def needed_folders() -> list[Path]:
    """What the demo's interpreter reads: the venv, its base installation, the project.

    A folder others may not enter itself (a clone in a `mktemp -d` folder of mode 700,
    as CI makes) is given as its entries: binding it back would bring its mode back."""
    folders = {Path(sys.prefix), Path(sys.base_prefix), Path(labrxiv.__file__).parent.parent}
    folders.add(Path(sysconfig.get_paths()["stdlib"]))
    needed: set[Path] = set()
    for folder in {folder.resolve() for folder in folders}:
        if folder.stat().st_mode & stat.S_IXOTH:
            needed.add(folder)
        else:
            needed.update(folder.iterdir())
    # a folder inside another needed one is bound back with it
    return sorted(p for p in needed if not any(q in p.parents for q in needed))


def closed_ancestors(folder: Path) -> list[Path]:
    """Ancestors of `folder` that others may not enter (no o+x), outermost first."""
    return [
        parent
        for parent in reversed(folder.parents)
        if parent != Path("/") and not parent.stat().st_mode & stat.S_IXOTH
    ]


def opening_script(scratch: Path) -> str:
    """Shell lines, run in a private mount namespace, that let others reach the needed
    folders: each closed folder is covered by a tmpfs of mode 755 with them bound back."""
    lines = []
    closed: dict[Path, list[Path]] = {}
    for folder in needed_folders():
        ancestors = closed_ancestors(folder)
        if ancestors:
            closed.setdefault(ancestors[0], []).append(folder)
    for index, (cover, inside) in enumerate(sorted(closed.items())):
        for number, folder in enumerate(inside):
            keep = scratch / f"keep-{index}-{number}"
            lines += [_make(keep, folder.is_dir()), f"mount --bind {folder} {keep}"]
        lines.append(f"mount -t tmpfs -o mode=755 tmpfs {cover}")
        for number, folder in enumerate(inside):
            keep = scratch / f"keep-{index}-{number}"
            lines += [_make(folder, folder.is_dir()), f"mount --bind {keep} {folder}"]
    return "\n".join(lines)


def _make(path: Path, folder: bool) -> str:
    """A shell line making a mount point for a folder or a file."""
    if folder:
        return f"mkdir -p {shlex.quote(str(path))}"
    return f"mkdir -p {shlex.quote(str(path.parent))} && touch {shlex.quote(str(path))}"


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh folder `nobody` owns, with a home folder of its own in it (pytest's
    tmp_path is under a folder of mode 700)."""
    folder = Path(tempfile.mkdtemp(prefix="labrxiv-nobody-"))
    (folder / "home").mkdir()
    for path in (folder, folder / "home"):
        path.chmod(0o755)
        shutil.chown(path, SANDBOX_USER, SANDBOX_GROUP)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_demo_as_an_unprivileged_user_refuses_in_one_line_and_writes_nothing(
    workdir: Path,
) -> None:
    tools = [shutil.which(name) for name in ("setpriv", "unshare")]
    if not all(tools) or os.geteuid() != 0:
        missing("setpriv, unshare and root are needed to run the demo as nobody")
    scratch = Path(tempfile.mkdtemp(prefix="labrxiv-mounts-"))
    data = workdir / "data"
    report = workdir / "report"
    demo = [
        "setpriv", f"--reuid={SANDBOX_USER}", f"--regid={SANDBOX_GROUP}", "--clear-groups",
        "env", f"HOME={workdir / 'home'}", "PYTHONDONTWRITEBYTECODE=1", f"LABRXIV_DATA_DIR={data}",
        "COLUMNS=200", sys.executable, "-m", "labrxiv.cli", "demo", "--report", str(report),
    ]  # fmt: skip
    script = f"set -e\n{opening_script(scratch)}\ncd {workdir}\nexec {shlex.join(demo)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    try:
        done = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    said = (done.stdout + done.stderr).strip()
    assert done.returncode == 2, said
    assert said.count("\n") == 0, said
    assert said.startswith("labs cannot run here:") and "root" in said, said
    # Refused before anything was made: no data folder, no log, no report (the data
    # folder is where nobody may write it: only the refusal keeps it from being made).
    assert sorted(p.name for p in workdir.iterdir()) == ["home"], said
