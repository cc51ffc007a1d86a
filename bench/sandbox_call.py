"""The CPU one tool call costs on each sandbox backend, beside the root jail's.

`--calls` calls of a trivial command (`true`) are made through the `Sandbox` protocol
(`exec`) on a fresh workspace of each backend, after `--warmup` calls not counted. The
cost of a call is the CPU time of the whole process tree it made (`unshare`, the jail's
init, `setpriv`, the command) and of this process's own work for it (building the argv,
the cgroup, the wait): `getrusage` of this process and of its waited-for children,
user + system, over the calls. Printed per backend: CPU ms a call (mean), wall ms a call
(median), and the ratio of CPU to the jail's.

Rows: `jail` as root; `userns` as root (made by `nobody`); `userns` as a normal user
(`labrxiv-user`, made with `useradd` if absent, the bench run again as that user by
`tests/unprivileged.py`'s helper). Run as root for all three; as a normal user, only
`userns` is measured.

    .venv/bin/python bench/sandbox_call.py [--calls 200] [--warmup 10]

The rootless backend's target: at most 1.5x the jail's CPU a call.
"""

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workers.sandbox.backends import _backends  # noqa: E402
from workers.sandbox.base import Sandbox  # noqa: E402

COMMAND = ["true"]
TARGET = 1.5
"""The most the rootless backend's CPU a call may be, over the jail's."""


@dataclass(frozen=True)
class Row:
    """One backend's figures, as one user."""

    backend: str
    user: str
    calls: int
    cpu_ms: float
    """CPU a call (user + system, this process and its children), mean."""
    wall_ms: float
    """Wall time a call, median."""


def _cpu_seconds() -> float:
    spent = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        spent += usage.ru_utime + usage.ru_stime
    return spent


def measure(backend: str, calls: int, warmup: int) -> Row:
    """`calls` calls of `COMMAND` on a fresh workspace of `backend`, as this user."""
    chosen = _backends()[backend]
    chosen.check()
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-sandbox-") as folder:
        os.chmod(folder, 0o755)
        sandbox = chosen(Path(folder) / "workspace")
        sandbox.prepare()
        for _ in range(warmup):
            _call(sandbox)
        walls = []
        before = _cpu_seconds()
        for _ in range(calls):
            started = time.perf_counter()
            _call(sandbox)
            walls.append(time.perf_counter() - started)
        spent = _cpu_seconds() - before
    user = "root" if os.geteuid() == 0 else os.environ.get("USER") or str(os.geteuid())
    return Row(backend, user, calls, 1000 * spent / calls, 1000 * statistics.median(walls))


def _call(sandbox: Sandbox) -> None:
    result = sandbox.exec(COMMAND)
    if result.exit_code != 0:
        raise SystemExit(f"`{' '.join(COMMAND)}` failed in the sandbox: {result.stderr}")


def measured_as(user: str, backend: str, calls: int, warmup: int) -> Row | str:
    """`backend`'s row measured by this bench run again as `user` (root, or the normal
    user), where the interpreter is reachable (`tests/unprivileged.py`: a folder closed to
    others, as a `/root` of mode 700, is opened in a mount namespace of the run's own);
    a reason where it cannot be."""
    from tests.unprivileged import normal_user, run_as  # pytest: for root's runs only

    normal_user()
    with tempfile.TemporaryDirectory(prefix="labrxiv-bench-home-") as home:
        os.chmod(home, 0o755)
        env = {"PATH": "/usr/local/bin:/usr/bin:/usr/sbin:/bin", "HOME": home, "USER": user}
        command = [sys.executable, str(Path(__file__).resolve()), "--backend", backend]
        command += ["--calls", str(calls), "--warmup", str(warmup), "--json"]
        said = run_as(user, command, Path(home), env, timeout=3600)
    if said.returncode != 0:
        return f"{backend} as {user}: {said.stderr.strip() or said.stdout.strip()}"
    return Row(**json.loads(said.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--backend", help="measure this backend alone, as this user")
    parser.add_argument("--json", action="store_true", help="print the row as JSON")
    args = parser.parse_args()
    if args.backend:
        row = measure(args.backend, args.calls, args.warmup)
        print(json.dumps(asdict(row)) if args.json else row)
        return
    rows: list[Row] = []
    if os.geteuid() == 0:  # each row in a process of its own, the same way
        from tests.unprivileged import NORMAL_USER

        for user, backend in (("root", "jail"), ("root", "userns"), (NORMAL_USER, "userns")):
            got = measured_as(user, backend, args.calls, args.warmup)
            if isinstance(got, Row):
                rows.append(got)
            else:
                print(got)
    else:
        rows.append(measure("userns", args.calls, args.warmup))
    baseline = next((row.cpu_ms for row in rows if row.backend == "jail"), None)
    print(f"`{' '.join(COMMAND)}` through Sandbox.exec, {args.calls} calls each")
    print("| backend | as | CPU ms a call | wall ms a call | CPU / jail |")
    print("| --- | --- | ---: | ---: | ---: |")
    for row in rows:
        ratio = f"{row.cpu_ms / baseline:.2f}x" if baseline else "-"
        print(f"| {row.backend} | {row.user} | {row.cpu_ms:.1f} | {row.wall_ms:.1f} | {ratio} |")
    if baseline:
        worst = max((r.cpu_ms / baseline for r in rows if r.backend != "jail"), default=0.0)
        verdict = "met" if worst <= TARGET else "NOT met"
        print(f"target (rootless at most {TARGET}x the jail's CPU a call): {verdict}")


if __name__ == "__main__":
    main()
