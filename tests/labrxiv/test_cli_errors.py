"""What the read commands say when something is missing or out of reach: one
line naming the problem, a non-zero exit, never a traceback, and nothing created."""

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from cli_support import ARCHIVE, ISOLATED, TASK, Cli, Said
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from events import EventStore
from labrxiv.cli_errors import explain
from labrxiv.reading import database_unreachable
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from workers.lab.campaign import CampaignPlan, start_campaign

READ_COMMANDS = [
    ["status"],
    ["campaigns"],
    ["runs"],
    ["runs", "show", "run-x-0"],
    ["events", "tail"],
    ["events", "show", "1"],
    ["events", "dead"],
    ["papers", "list"],
    ["papers", "show", "p-x"],
    ["papers", "search", "herding"],
    ["papers", "top", TASK],
    ["ledger"],
    ["curves", "--out", "plots"],
    ["replay", "run-x-0"],
    ["analyze", "run-x-0"],
    ["fork", "run-x-0", "--at", "1"],
    ["resume"],
    ["exporter", "--once"],
    ["rebuild"],
]


def one_line(said: Said) -> str:
    """The single line a failed command printed; fails the test on a traceback or more."""
    assert said.exception is None or isinstance(said.exception, SystemExit), said.exception
    assert "Traceback" not in said.out
    lines = said.out.strip().splitlines()
    assert len(lines) == 1, said.out
    return lines[0]


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_a_missing_data_folder_is_named_not_created(
    workdir: Path, cli: Cli, command: list[str]
) -> None:
    said = cli(*command, LABRXIV_DATA_DIR="nowhere")
    assert said.code == 1, said.out
    assert "no log in nowhere" in one_line(said)
    assert not (workdir / "nowhere").exists()


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_the_default_data_folder_is_not_created_either(
    workdir: Path, cli: Cli, command: list[str]
) -> None:
    said = cli(*command)
    assert said.code == 1, said.out
    assert "no log in .labrxiv" in one_line(said) and "make demo" in said.text
    assert not (workdir / ".labrxiv").exists()


def test_the_hint_to_make_a_log_needs_no_root(workdir: Path, cli: Cli) -> None:
    """Any user can run `make demo` (a normal one gets the rootless sandbox): the hint
    sends everyone there, and says nothing of root."""
    line = one_line(cli("runs"))
    assert "make demo" in line and "LABRXIV_DATA_DIR" in line and "root" not in line, line


@pytest.mark.parametrize(
    "command", [*READ_COMMANDS, ["projector", "--once"], ["rebuild"]], ids=" ".join
)
def test_a_file_that_is_not_a_log_is_named_as_such(
    workdir: Path, cli: Cli, command: list[str]
) -> None:
    """Bytes that are no SQLite database where the log should be: one line saying the
    file cannot be read (not that a database cannot be reached); `projector --once`
    printed a traceback (found running labrxiv from outside). The file is left as it was."""
    data = workdir / "data"
    data.mkdir()
    junk = bytes(range(256)) * 20
    (data / "labrxiv.db").write_bytes(junk)
    said = cli(*command, LABRXIV_DATA_DIR="data")
    assert said.code == 1, said.out
    line = one_line(said)
    assert "cannot read the database" in line and "not a database" in line, line
    assert (data / "labrxiv.db").read_bytes() == junk


@pytest.mark.parametrize("command", [*READ_COMMANDS, ["serve", "--port", "1"]], ids=" ".join)
def test_an_empty_file_where_the_log_should_be_is_no_log_and_stays_empty(
    workdir: Path, cli: Cli, command: list[str]
) -> None:
    """A read command only reads: an empty file named as the log is said to hold no log,
    and is not turned into a database (SQLite's WAL mode set on it, a `-wal` beside it)."""
    data = workdir / "data"
    data.mkdir()
    (data / "labrxiv.db").touch()
    said = cli(*command, LABRXIV_DATA_DIR="data")
    assert said.code == 1, said.out
    assert "no log in" in one_line(said), said.out
    assert [p.name for p in data.iterdir()] == ["labrxiv.db"]
    assert (data / "labrxiv.db").stat().st_size == 0


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
def test_an_unreachable_postgresql_is_one_line(
    cli: Cli, closed_port: int, command: list[str]
) -> None:
    url = f"postgresql://postgres:secret@127.0.0.1:{closed_port}/labrxiv"
    said = cli(*command, LABRXIV_DATABASE_URL=url)
    assert said.code == 1, said.out
    line = one_line(said)
    assert f"cannot reach the database postgresql://postgres:***@127.0.0.1:{closed_port}" in line
    assert "secret" not in said.out


@pytest.mark.parametrize(
    ("command", "told"),
    [
        (["runs", "--campaign", "bbbb"], "no campaign bbbb"),
        (["runs", "--campaign", "aaaa"], f"campaign aaaa is ambiguous: {ISOLATED}, {ARCHIVE}"),
        (["runs", "show", "run-nope-0"], "no run run-nope-0"),
        (["runs", "show", ""], "an empty run id names no run"),
        (["analyze", ""], "an empty id names no run or campaign"),
        (["fork", "nope", "--at", "1"], "no run nope (labrxiv runs lists them)"),
        (["fork", " ", "--at", "1"], "an empty run id names no run"),
        (["resume", "nope"], "no unfinished run nope"),
        (["papers", "show", ""], "an empty paper id names no paper"),
        (["events", "show", "999"], "no event at position 999"),
        (["events", "show", "00000000-0000-7000-8000-000000000000"], "no event 00000000"),
        (["events", "tail", "--stream", "run-nope-0"], "no event in stream run-nope-0"),
        (["events", "tail", "--type", "budget.exceeded"], "no budget.exceeded event"),
        (["events", "tail", "--type", "no.such"], "no event type no.such"),
        (["events", "tail", "--campaign", "cccc"], "no campaign cccc"),
        (
            ["events", "tail", "--after", "99999", "--type", "run.started"],
            "no run.started event after position 99999 (the head is",
        ),
        (["papers", "list", "--task", "other"], "no paper on task other"),
        (["papers", "list", "--lab", "lab-9"], "no paper by lab lab-9"),
        (["papers", "show", "p-nope"], "no paper p-nope"),
        (["papers", "search", "quantum"], "no paper matches 'quantum'"),
        (["papers", "top", "other"], "no paper on task other"),
        (["papers", "top", TASK, "--subtask", "speed"], "no claim on subtask speed"),
        (["ledger", "--campaign", "dddd"], "no campaign dddd"),
        (["curves", "--out", "plots", "--campaign", "eeee"], "no campaign eeee"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_unknown_ids_and_empty_filters_are_told(
    two_campaigns: EventStore, cli: Cli, command: list[str], told: str
) -> None:
    said = cli(*command)
    assert said.code == 1, said.out
    assert told in one_line(said)


def test_an_unwritable_data_folder_is_named(workdir: Path, cli: Cli) -> None:
    """A data folder that cannot be made (here a file stands in its way; as root, a
    permission bit would not stop the test) is named, with what to do."""
    (workdir / "taken").write_text("a file, not a folder")
    for command in (["projector", "--once"],):
        said = cli(*command, LABRXIV_DATA_DIR="taken/data")
        assert said.code == 1, said.out
        line = one_line(said)
        assert "cannot write taken/data" in line and "LABRXIV_DATA_DIR" in line
    # A folder that cannot be made where it is asked for (nothing can be made in /proc):
    # a 120-line traceback ending in FileNotFoundError.
    said = cli("projector", "--once", LABRXIV_DATA_DIR="/proc/labrxiv-data")
    assert said.code == 1, said.out
    assert "cannot make /proc/labrxiv-data" in one_line(said)
    assert "Traceback" not in said.out and "LABRXIV_DATA_DIR" in one_line(said)


@pytest.mark.parametrize(
    ("command", "told"),
    [
        (["curves", "--out", "afile/plots"], "cannot write afile/plots: Not a directory"),
        (["export", "preferences", "-o", "afile/p.jsonl"], "cannot write afile/p.jsonl: afile is"),
        (
            ["export", "finetune", "--campaign", ISOLATED, "-o", "/proc/x/f.jsonl"],
            "cannot write /proc/x/f.jsonl: No such",
        ),
        # A folder that cannot be made although its parent exists (mkdir: ENOENT).
        (["curves", "--out", "/proc/labrxiv-plots"], "cannot write /proc/labrxiv-plots"),
    ],
)
def test_an_output_path_that_cannot_be_written_is_named(
    two_campaigns: EventStore, workdir: Path, cli: Cli, command: list[str], told: str
) -> None:
    """The option's path is named, not the data folder (which is fine)."""
    (workdir / "afile").write_text("a file, not a folder")
    said = cli(*command)
    assert said.code == 1, said.out
    line = one_line(said)
    assert told in line and "LABRXIV_DATA_DIR" not in line


@pytest.mark.parametrize(
    "command",
    [
        ["export", "inspect", "--campaign", ISOLATED, "--out", "logs/campaign.eval"],
        ["export", "finetune", "--campaign", ISOLATED, "--out", "out/runs.jsonl"],
    ],
)
def test_an_export_makes_the_folder_it_is_asked_to_write_in(
    two_campaigns: EventStore, workdir: Path, cli: Cli, command: list[str]
) -> None:
    """As docs/exports.md writes them: the folder of `--out` need not exist yet."""
    said = cli(*command)
    assert said.code == 0, said.out
    assert (workdir / command[-1]).exists()


@pytest.mark.parametrize("report", ["/proc/labrxiv-report", "afile", "afile/report"])
def test_a_demo_report_folder_that_cannot_be_written_stops_it_before_any_run(
    workdir: Path, cli: Cli, report: str
) -> None:
    """Checked first: the demo ran both campaigns and only then failed on it (a
    traceback for /proc, one line for a file in the way), its report lost."""
    (workdir / "afile").write_text("a file, not a folder")
    said = cli("demo", "--report", report, LABRXIV_DATA_DIR="data")
    assert said.code == 2, said.out
    assert f"--report {report}" in one_line(said)
    assert not (workdir / "data").exists()


@pytest.mark.timeout(120)
def test_a_worker_whose_redis_does_not_answer_stops_at_once(
    tmp_path: Path, closed_port: int
) -> None:
    """Not 100 retries naming the transport's class: one line with the URL, and exit 2 (a
    worker refuses to start on what does not answer)."""
    script = Path(sys.executable).with_name("labrxiv")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env |= {"LABRXIV_REDIS_URL": f"redis://127.0.0.1:{closed_port}/0", "COLUMNS": "200"}
    env["LABRXIV_DATA_DIR"] = str(tmp_path / "data")
    env["LABRXIV_DATABASE_URL"] = f"sqlite:///{tmp_path / 'log.db'}"
    done = subprocess.run(
        [str(script), "worker"], env=env, capture_output=True, text=True, timeout=100
    )
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert len(out.strip().splitlines()) == 1, out
    assert f"cannot reach Redis at redis://127.0.0.1:{closed_port}/0" in out
    assert "class" not in out and "Traceback" not in out


def test_reap_with_no_log_or_no_redis_says_so_and_fails(
    two_campaigns: EventStore, workdir: Path, cli: Cli, closed_port: int
) -> None:
    """It said "sent 0 lost steps again" and exited 0 either way, having made an empty log
    where none was, and never looked at Redis (there was nothing to send)."""
    away = f"redis://127.0.0.1:{closed_port}/0"
    said = cli("reap", LABRXIV_REDIS_URL=away, LABRXIV_DATA_DIR="nowhere")
    assert said.code == 1 and "no log in nowhere" in one_line(said)
    assert not (workdir / "nowhere").exists()
    said = cli("reap", LABRXIV_REDIS_URL=away)  # the two campaigns' log, Redis away
    assert said.code == 1 and f"cannot reach Redis at {away}" in one_line(said)


def test_events_tail_after_the_head_is_an_empty_poll_not_an_error(
    two_campaigns: EventStore, cli: Cli
) -> None:
    """With no filter, nothing after `--after` is what a script polling for new events
    finds: exit 0 (an empty list as JSON), as `events tail` on an empty log."""
    head = two_campaigns.max_position()
    said = cli("events", "tail", "--after", str(head))
    assert said.code == 0 and f"no event after position {head} yet" in said.text
    said = cli("events", "tail", "--after", str(head), "--json")
    assert said.code == 0 and said.stdout.strip() == "[]"


def test_an_archive_setting_for_isolated_labs_is_refused(workdir: Path, cli: Cli) -> None:
    """Isolated labs read no archive: which papers they would read means nothing (it
    ran, and did nothing of what was asked)."""
    said = cli(
        "campaign",
        "--task",
        "noisy-digits",
        "--mode",
        "isolated",
        "--archive-reads",
        "accepted",
        "--review",
        "grounded",
        LABRXIV_DATA_DIR="data",
    )
    assert said.code == 2, said.out
    assert "isolated labs read no archive" in one_line(said)
    assert not (workdir / "data").exists()


def test_resuming_a_campaign_the_log_does_not_hold_says_so(workdir: Path, cli: Cli) -> None:
    """Not "no campaign with unfinished runs nosuch", which reads as if it had some."""
    data = workdir / "data"
    system = open_embedded(load_settings(data_dir=data), threads=1)
    try:
        plan = CampaignPlan(task=TASK, labs=1, papers=1, mode="isolated", seed=0, attempts=1)
        campaign, _ = start_campaign(system.bus, plan)
        system.settle()
    finally:
        system.close()
    said = cli("resume", "--campaign", "nosuch", LABRXIV_DATA_DIR="data")
    assert said.code == 1 and "no campaign nosuch (`labrxiv campaigns` lists them)" in one_line(
        said
    ), said.out
    said = cli("resume", "--campaign", campaign[:6], LABRXIV_DATA_DIR="data")
    assert said.code == 1 and "every run has finished" in one_line(said), said.out


def test_a_log_that_cannot_be_written_here_is_said_to_be_read_only(tmp_path: Path) -> None:
    """Read commands keep their read models in the log's database: SQLite's error for a
    log in a folder the user cannot write (here a file opened read-only: root ignores
    permission bits) is told as read-only, with what to do, not as a database "out of
    reach"."""
    log = tmp_path / "labrxiv.db"
    with closing(sqlite3.connect(log)) as db:
        db.execute("CREATE TABLE t (x)")
    engine = create_engine(f"sqlite:///file:{log}?mode=ro&uri=true")
    with pytest.raises(OperationalError) as caught, engine.begin() as conn:
        conn.execute(text("INSERT INTO t VALUES (1)"))
    opened = str(database_unreachable(f"sqlite:///{log}", caught.value))  # at open
    for line in (explain(caught.value), opened):
        assert line is not None and "read-only" in line and "copy" in line, line
        assert "cannot reach" not in line, line


def test_a_damaged_event_is_named_in_one_line_and_rebuild_keeps_the_read_models(
    workdir: Path, cli: Cli, two_campaigns: EventStore
) -> None:
    """An event whose stored payload is no longer JSON (a hand edit, a damaged disk): the
    commands that read it say which one it is, in one line; `rebuild`, which would drop
    the read models and then fail on it (leaving every read command dead), refuses first."""
    log = workdir / ".labrxiv" / "labrxiv.db"
    with closing(sqlite3.connect(log)) as db:
        position, stream = db.execute(
            "SELECT position, stream FROM events WHERE type = 'experiment.scored' "
            "ORDER BY position LIMIT 1"
        ).fetchone()
        db.execute("UPDATE events SET payload = '{not json' WHERE position = ?", (position,))
        db.commit()
    told = f"the log's event at position {position} ({stream}, experiment.scored) is damaged"
    for command in (["runs", "show", stream], ["replay", stream], ["events", "tail", "-n", "500"]):
        said = cli(*command)
        assert said.code == 1, (command, said.out)
        line = one_line(said)
        assert told in line and "not JSON" in line, (command, line)
    listed = cli("runs")
    assert listed.code == 0, listed.out
    said = cli("rebuild")
    assert said.code == 1 and told in one_line(said), said.out
    after = cli("runs")
    assert after.code == 0 and stream in after.out, after.out
