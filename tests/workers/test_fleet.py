"""The embedded bus across processes (`workers.bus.processes`): tasks go to the process
that owns their stream, `join` waits for what the children sent each other, a child that
dies is said, and writers of several processes take turns at one SQLite file."""

import fcntl
import multiprocessing
import os
from pathlib import Path

import fleet_support
import pytest

from events.engines import WRITER_OPTIONS, make_engine
from workers.bus.base import RECORD_TASK
from workers.bus.processes import ChildDied, Fleet, owner


def test_a_streams_tasks_go_to_one_process_and_records_run_where_sent() -> None:
    streams = [f"run-{i}" for i in range(40)]
    owners = {s: owner("labrxiv.lab_step", (s, 3), 2) for s in streams}
    assert set(owners.values()) == {0, 1}  # both processes get runs
    for stream in streams:  # every task of a stream, whatever it is, to the same one
        assert owner("labrxiv.review_step", (stream, 9), 2) == owners[stream]
    assert owner(RECORD_TASK, ('{"events": []}',), 2) is None


def test_join_waits_for_the_tasks_the_children_sent_each_other(tmp_path: Path) -> None:
    fleet = Fleet(fleet_support.serve, (str(tmp_path),), processes=2, threads=2)
    try:
        for i in range(6):
            fleet.send("hop", f"run-{i}", 4)  # each sends one more, four times
        fleet.join()
        lines = [
            line for f in sorted(tmp_path.glob("*.txt")) for line in f.read_text().splitlines()
        ]
        assert len(lines) == 6 * 5, lines
        assert len(list(tmp_path.glob("*.txt"))) == 2  # both processes took tasks
    finally:
        fleet.close()
    assert fleet.processes == 2


def test_a_child_that_dies_is_said_with_how_it_ended(tmp_path: Path) -> None:
    fleet = Fleet(fleet_support.serve, (str(tmp_path),), processes=2, threads=2)
    said: list[str] = []
    fleet.watch(said.append)
    try:
        fleet.send("die", "run-0")
        with pytest.raises(
            ChildDied, match=r"worker process labrxiv-worker-\d ended \(exit code 3\)"
        ):
            fleet.join()
        for _ in range(100):
            if said:
                break
            multiprocessing.Event().wait(0.05)
        assert said and "exit code 3" in said[0]
    finally:
        fleet.close()


def _hold_the_writer(
    database: str,
    held: "multiprocessing.synchronize.Event",
    go: "multiprocessing.synchronize.Event",
) -> None:
    engine = make_engine(f"sqlite:///{database}")
    with engine.connect().execution_options(**WRITER_OPTIONS) as conn, conn.begin():
        held.set()
        go.wait(30)
    engine.dispose()


def test_a_writer_in_another_process_holds_the_file_lock_writers_queue_at(tmp_path: Path) -> None:
    database = str(tmp_path / "log.db")
    make_engine(f"sqlite:///{database}").dispose()
    context = multiprocessing.get_context("spawn")
    held, go = context.Event(), context.Event()
    other = context.Process(target=_hold_the_writer, args=(database, held, go))
    other.start()
    try:
        assert held.wait(60)
        fd = os.open(f"{os.path.realpath(database)}-writer", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):  # a writer here would wait, asleep
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            go.set()
            other.join(60)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once it committed
        finally:
            os.close(fd)
    finally:
        go.set()
        other.join(60)
