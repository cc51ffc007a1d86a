"""An embedded campaign whose steps run in worker processes (`--processes`): a worker
killed mid-campaign is said in one line, the campaign stops as at Ctrl-C with its runs
`interrupted`, and `labrxiv resume` finishes them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import Cli, scored_in

from events import EventStore

pytestmark = pytest.mark.slow
LABRXIV = Path(sys.executable).with_name("labrxiv")


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _workers(pid: int) -> list[int]:
    return [
        child
        for child in _children(pid)
        if b"multiprocessing.spawn" in Path(f"/proc/{child}/cmdline").read_bytes()
    ]


def test_a_worker_killed_mid_campaign_stops_it_and_resume_goes_on(tmp_path: Path, cli: Cli) -> None:
    data = tmp_path / "data"
    log = data / "labrxiv.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env |= {"LABRXIV_DATA_DIR": str(data), "COLUMNS": "200"}
    out = tmp_path / "out.txt"
    command = ["campaign", "--task", "continual-digits", "--labs", "4", "--papers", "1"]
    command += ["--attempts", "6", "--processes", "2"]
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(LABRXIV), *command], env=env, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and scored_in(log) < 1:
            time.sleep(0.05)
        workers = _workers(proc.pid)
        assert len(workers) == 2, out.read_text()
        os.kill(workers[0], signal.SIGKILL)
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    said = " ".join(out.read_text().split())
    assert code == 130, said
    assert "ended (killed by signal 9): stopping" in said, said
    assert "labrxiv resume --campaign" in said and "Traceback" not in said, said
    assert not _workers(proc.pid)
    store = EventStore.from_url(f"sqlite:///{log}", create=False)
    (marker,) = store.read_records(types=["campaign.interrupted"])
    assert marker.payload["runs"]

    resumed = cli("resume", "--campaign", marker.correlation_id[:6], LABRXIV_DATA_DIR=str(data))
    assert resumed.code == 0, resumed.out
    endings = [r.payload["reason"] for r in store.read_records(types=["run.finished"])]
    assert endings == ["done"] * 4, endings
