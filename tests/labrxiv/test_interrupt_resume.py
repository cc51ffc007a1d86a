"""Ctrl-C of an embedded campaign or demo, and `labrxiv resume`:
the runs left are named in `campaign.interrupted` and shown `interrupted` by the runs
read model at once (not `running` for ever, nor missing until `projector --once`); the
command says how to go on and exits 130; `labrxiv resume` finishes them, every run
`done` with no attempt twice."""

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from cli_support import Cli, scored_in
from rich.console import Console

from events import EventStore
from labrxiv.interrupt import say_stopped
from labrxiv.report import interrupted, run_endings
from projections.campaigns import campaigns_of
from projections.catalogue import all_projectors
from projections.runner import ProjectionRunner
from projections.runs import runs_of
from runstate import fold

pytestmark = pytest.mark.slow
LABRXIV = Path(sys.executable).with_name("labrxiv")


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    return env | {"LABRXIV_DATA_DIR": str(data), "COLUMNS": "200"}


def _interrupted(
    command: list[str], data: Path, log: Path, tmp: Path, group: bool = False
) -> tuple[int, str]:
    """Run `labrxiv COMMAND`, Ctrl-C it once an attempt of it is scored, wait for it.
    `group`: the Ctrl-C goes to its whole process group, as a terminal sends it (worker
    processes included), not to the command alone."""
    out = tmp / "out.txt"
    with out.open("wb") as sink:
        proc = subprocess.Popen(
            [str(LABRXIV), *command],
            env=_env(data),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=group,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.is_file() and scored_in(log) >= 1:
            break
        time.sleep(0.05)
    assert proc.poll() is None, out.read_text()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)  # what Ctrl-C sends
    code = proc.wait(timeout=120)
    return code, " ".join(out.read_text().split())


@pytest.mark.parametrize("processes", [1, 2])
def test_ctrl_c_of_a_campaign_leaves_runs_interrupted_and_resume_finishes_them(
    tmp_path: Path, cli: Cli, processes: int
) -> None:
    data = tmp_path / "data"
    log = data / "labrxiv.db"
    code, said = _interrupted(
        [
            "campaign",
            "--task",
            "continual-digits",
            "--labs",
            "2",
            "--papers",
            "1",
            "--attempts",
            "6",
            "--mode",
            "archive",
            "--processes",
            str(processes),
        ],
        data,
        log,
        tmp_path,
        group=processes > 1,
    )
    assert code == 130, said
    assert "labrxiv resume --campaign" in said and "Traceback" not in said
    store = EventStore.from_url(f"sqlite:///{log}", create=False)
    (marker,) = store.read_records(types=["campaign.interrupted"])
    left = marker.payload["runs"]
    assert left and marker.payload["detail"] == "Ctrl-C in labrxiv campaign"
    with store.engine.connect() as conn:  # caught up before the process exited
        views = {v.stream: v for v in runs_of(conn)}
    assert {views[s].status for s in left} == {"interrupted"}
    assert {store.read_stream(s)[-1].type for s in left} == {"run.interrupted"}
    assert sum(v.event_count for v in views.values()) == sum(
        1 for r in store.iter_records() if r.stream.startswith("run-")
    )
    listed = cli("runs", LABRXIV_DATA_DIR=str(data))
    assert "interrupted" in listed.out

    resumed = cli("resume", "--campaign", marker.correlation_id[:6], LABRXIV_DATA_DIR=str(data))
    assert resumed.code == 0, resumed.out
    for stream in views:
        events = store.read_stream(stream)
        assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
        attempts = Counter(e.payload.attempt for e in events if e.type == "experiment.scored")
        assert sorted(attempts) == list(range(1, 7)) and set(attempts.values()) == {1}
    finished = store.read_records(types=["campaign.finished"])
    assert len(finished) == 1
    for stream in left:  # the stop is the run's own, and no wall time of it
        events = store.read_stream(stream)
        assert sum(e.type == "run.interrupted" for e in events) == 1
        assert fold(events).stopped_s > 0
    with store.engine.connect() as conn:
        assert {v.status for v in runs_of(conn)} == {"finished"}
    again = cli("resume", LABRXIV_DATA_DIR=str(data))
    assert again.code == 1 and "no unfinished run" in again.text


def test_ctrl_c_of_the_demo_says_where_its_data_is(tmp_path: Path) -> None:
    data = tmp_path / "data"
    code, said = _interrupted(
        [
            "demo",
            "--labs",
            "2",
            "--papers",
            "1",
            "--attempts",
            "4",
            "--report",
            str(tmp_path / "report"),
        ],
        data,
        data / "demo" / "labrxiv.db",
        tmp_path,
    )
    assert code == 130, said
    assert "labrxiv resume --campaign" in said and str(data / "demo") in said
    assert "Traceback" not in said and not (tmp_path / "report").exists()


def test_interrupted_runs_fold_the_same_in_pages_of_any_size(tmp_path: Path, cli: Cli) -> None:
    """The runs read model with `campaign.interrupted`: rebuilt in pages of 1, 7 and all
    equals the live one (a later event of a run makes it running again)."""
    data = tmp_path / "data"
    log = data / "labrxiv.db"
    _interrupted(
        [
            "campaign",
            "--task",
            "continual-digits",
            "--labs",
            "2",
            "--papers",
            "1",
            "--attempts",
            "4",
            "--mode",
            "isolated",
        ],
        data,
        log,
        tmp_path,
    )
    store = EventStore.from_url(f"sqlite:///{log}", create=False)
    with store.engine.connect() as conn:
        live = sorted(runs_of(conn), key=lambda v: v.stream)
    assert any(v.status == "interrupted" for v in live)
    for page in (1, 7, 100_000):
        runner = ProjectionRunner(store, all_projectors(), page=page)
        runner.rebuild()
        with store.engine.connect() as conn:
            assert sorted(runs_of(conn), key=lambda v: v.stream) == live, page


@pytest.mark.parametrize("processes", [1, 2])
def test_an_embedded_campaign_stops_at_its_timeout_and_resume_goes_on(
    tmp_path: Path, cli: Cli, processes: int
) -> None:
    """In embedded mode this process is the campaign's only worker: at `--timeout` it
    stops the work as Ctrl-C does (the runs left are named and can be resumed). It said
    "NOT finished in 0.5s" and then went on until every run had ended (found running
    labrxiv from outside: 12 s for a 2 s timeout). No campaign of 2 labs × 40 attempts
    ends in 0.5 s: each attempt trains a model."""
    data = tmp_path / "data"
    size = ["--labs", "2", "--papers", "1", "--attempts", "40", "--processes", str(processes)]
    said = cli(
        "campaign", "--task", "continual-digits", *size, "--timeout", "0.5",
        LABRXIV_DATA_DIR=str(data),
    )  # fmt: skip
    assert said.code == 3, said.out
    assert "NOT finished" in said.text and "labrxiv resume --campaign" in said.text
    store = EventStore.from_url(f"sqlite:///{data / 'labrxiv.db'}", create=False)
    (marker,) = store.read_records(types=["campaign.interrupted"])
    assert "--timeout" in marker.payload["detail"]
    scored = len(store.read_records(types=["experiment.scored"]))
    assert scored < 80 and not store.read_records(types=["campaign.finished"])
    for stream in marker.payload["runs"]:
        assert store.read_stream(stream)[-1].type != "run.finished"
    # How each run ended says what the log says of the runs left (it said "running").
    left = len(marker.payload["runs"])
    assert said.text.count(": interrupted") == left and f"{left} interrupted" in said.text
    assert "lab-0: running" not in said.text and "lab-1: running" not in said.text
    # The campaign's line says so too, as its runs' do (it said "running").
    with store.engine.connect() as conn:
        (campaign,) = campaigns_of(conn)
    assert campaign.status == "interrupted", campaign


@pytest.mark.parametrize("command", [["campaign", "--task", "continual-digits"], ["resume"]])
@pytest.mark.parametrize("timeout", ["0", "-1"])
def test_a_timeout_that_is_not_positive_is_refused(
    tmp_path: Path, cli: Cli, command: list[str], timeout: str
) -> None:
    said = cli(*command, "--timeout", timeout, LABRXIV_DATA_DIR=str(tmp_path / "data"))
    assert said.code == 2, said.out
    assert "--timeout" in said.text
    assert not (tmp_path / "data").exists()


def test_a_stop_with_no_run_left_says_which_runs_never_began() -> None:
    """A watch that timed out on a run whose run.started was dead-lettered (nothing of it
    unfinished in the log) said "every run had finished" after "NOT finished" (found
    running labrxiv from outside); runs that did finish are said to have finished."""
    console = Console(record=True, width=200)
    say_stopped(console, [], unseen=1)
    said = console.export_text()
    assert "every run had finished" not in said, said
    assert "1 watched run never seen to begin" in said and "labrxiv events dead" in said
    say_stopped(console, [])  # every run ended (a campaign may still await its reviews)
    assert "stopped: every run had finished" in console.export_text()


def test_a_run_left_interrupted_ends_interrupted_in_a_watch_of_other_runs(tmp_path: Path) -> None:
    """`labrxiv resume RUN` of one of a campaign's runs printed the run it left alone, still
    interrupted in the log, as `running` (found reviewing the endings after a timeout)."""
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    views = [
        SimpleNamespace(lab="lab-0", stream="run-c-0", finished=False, status="running",
                        finish_reason=None),
        SimpleNamespace(lab="lab-1", stream="run-c-1", finished=False, status="interrupted",
                        finish_reason=None),
    ]  # fmt: skip
    endings = run_endings(store, views)  # type: ignore[arg-type]
    assert [(e.lab, e.reason) for e in endings] == [("lab-0", None), ("lab-1", "interrupted")]
    stopped = interrupted(endings, ["run-c-0"])
    assert [e.reason for e in stopped] == ["interrupted", "interrupted"]


def test_resuming_every_run_of_a_campaign_gives_each_run_a_thread(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume of all of a campaign's runs took steps on three threads whatever their
    number (its thread count counted only the runs named one by one), so 100 llm labs
    resumed had three model calls in flight."""
    import labrxiv.wiring

    data = tmp_path / "data"
    size = ["--labs", "4", "--papers", "1", "--attempts", "40", "--timeout", "0.5"]
    said = cli("campaign", "--task", "continual-digits", *size, LABRXIV_DATA_DIR=str(data))
    assert said.code == 3, said.out
    opened: list[int] = []
    real = labrxiv.wiring.open_embedded

    def spy(settings: object, threads: int = 2) -> object:
        opened.append(threads)
        return real(settings, threads=threads)  # type: ignore[arg-type]

    monkeypatch.setattr(labrxiv.wiring, "open_embedded", spy)
    resumed = cli("resume", "--timeout", "0.5", LABRXIV_DATA_DIR=str(data))
    assert resumed.code == 3, resumed.out
    assert opened and opened[0] >= 4, opened
