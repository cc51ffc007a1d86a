"""The `labrxiv` command line, run as a user runs it: exit codes and what it says.

`labrxiv demo` runs once, as installed, in a temporary directory; the commands that
read the log then run on the log it left.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from events import EventStore
from labrxiv.cli import app
from projections.catalogue import all_projectors
from projections.runs import runs_of
from workers.bus.local import LocalBus
from workers.context import WorkerContext
from workers.recorder import record_message


def said(text: str) -> str:
    """Output with whitespace collapsed, so a message wrapped by rich still matches."""
    return " ".join(text.split())


def has_row(out: str, *cells: object) -> bool:
    """Whether a table line holds `cells` in order, whatever the box characters."""
    pattern = r"\W+".join(re.escape(str(cell)) for cell in cells)
    return re.search(rf"(?m)^\W*{pattern}\W", out) is not None


def clean_env(**settings: str) -> dict[str, str | None]:
    """No LABRXIV_* variable from the caller's shell, then `settings`; a wide terminal."""
    unset: dict[str, str | None] = {k: None for k in os.environ if k.startswith("LABRXIV_")}
    return {**unset, "COLUMNS": "200", **settings}


def invoke(*args: str, **settings: str) -> tuple[int, str]:
    """Run the CLI in this process; returns the exit code and everything it printed."""
    result = CliRunner().invoke(app, list(args), env=clean_env(**settings))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def model_rows(store: EventStore) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every read model's tables, in primary-key order (all columns if none)."""
    rows = {}
    with store.engine.connect() as conn:
        for projector in all_projectors():
            for table in projector.tables:
                order = list(table.primary_key.columns) or list(table.columns)
                rows[table.name] = [tuple(r) for r in conn.execute(select(table).order_by(*order))]
    return rows


@dataclass(frozen=True)
class Demo:
    """A finished `labrxiv demo`: where it ran, what it printed, the log it left."""

    workdir: Path
    returncode: int
    output: str
    data_dir: Path
    """The demo's own data directory (it runs in `<LABRXIV_DATA_DIR>/demo`)."""

    @property
    def store(self) -> EventStore:
        return EventStore.from_url(f"sqlite:///{self.data_dir / 'labrxiv.db'}")

    def cli(self, *args: str) -> tuple[int, str]:
        """A command on the demo's log."""
        return invoke(*args, LABRXIV_DATA_DIR=str(self.data_dir))


DEMO_SIZE = ["--labs", "3", "--papers", "2", "--attempts", "4"]
"""Smaller than `make demo` (3 labs × 3 papers × the card's 20 attempts): the same path."""


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """`labrxiv demo` as `make demo` runs it (smaller): the console script, in a bare directory."""
    workdir = tmp_path_factory.mktemp("demo")
    script = Path(sys.executable).with_name("labrxiv")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "labrxiv.cli"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LABRXIV_")}
    env["COLUMNS"] = "200"
    done = subprocess.run(
        [*command, "demo", *DEMO_SIZE],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return Demo(workdir, done.returncode, done.stdout + done.stderr, workdir / ".labrxiv" / "demo")


@pytest.mark.slow
def test_demo_runs_on_a_bare_directory(demo: Demo) -> None:
    assert demo.returncode == 0, demo.output
    assert "report written to report/" in said(demo.output)
    assert (demo.workdir / "report" / "summary.md").is_file()
    for plot in ("best_per_paper", "best_vs_time", "best_vs_attempts"):
        assert (demo.workdir / "report" / f"{plot}.png").stat().st_size > 1000
    # Search labs call no model: flat-zero tokens and cost plots are left out, with why.
    summary = (demo.workdir / "report" / "summary.md").read_text()
    for plot in ("tokens", "cost"):
        assert not (demo.workdir / "report" / f"best_vs_{plot}.png").exists()
        assert f"so best score against {plot} is not drawn." in said(summary)
        assert f"so best score against {plot} is not drawn." in said(demo.output)
    assert "best normalized score after each paper" in said(demo.output)

    store = demo.store
    with store.engine.connect() as conn:
        runs = runs_of(conn)
    assert len(runs) == 6, "the demo runs two campaigns of three labs"
    # Every run got all of its events into the log, in order, to its end, and the runs
    # read model counts them as the log has them.
    for run in runs:
        events = store.read_stream(run.stream)
        assert [e.version for e in events] == list(range(run.event_count)), run.stream
        assert run.finished, run.stream
        types = [e.type for e in events]
        assert run.steps == types.count("tool.invoked") > 0, run.stream
        assert run.papers == types.count("paper.submitted") == 2, run.stream
        # The watcher's last table of each campaign shows the run as the read model has it.
        assert has_row(
            demo.output,
            run.lab,
            run.steps,
            f"{run.attempts}/4",
            f"{run.papers}/2",
            "-" if run.best_score is None else f"{run.best_score:.3f}",
            f"{run.elapsed_seconds:.1f}s",
            f"finished ({run.finish_reason})",
        ), run.stream
        # --attempts was given; the wall-time limit is the card's (continual-digits: 900 s).
        started = events[0].payload
        assert (started.budget.attempts, started.budget.wall_seconds) == (4, 900), run.stream
        assert started.budget_source == {"attempts": "command", "wall_seconds": "card"}
    assert store.dead_letter_count() == 0


@pytest.mark.slow
def test_rebuild_equals_the_demos_incremental_read_models(demo: Demo) -> None:
    store = demo.store
    incremental = model_rows(store)
    assert incremental["runs"]
    code, out = demo.cli("rebuild")
    assert code == 0, out
    assert f"rebuilt {len(all_projectors())} read models from {store.count()} events" in out
    assert model_rows(store) == incremental


@pytest.mark.slow
def test_status(demo: Demo) -> None:
    code, out = demo.cli("status")
    assert code == 0, out
    store = demo.store
    head = store.max_position()
    assert has_row(out, "bus", "embedded (in-process)")
    assert has_row(out, "events", store.count())
    assert has_row(out, "head position", head)
    for projector in all_projectors():  # the demo leaves every read model caught up
        assert has_row(out, f"projector {projector.name}", f"at {head}, 0 behind")
    assert has_row(out, "dead letters", 0)


@pytest.mark.slow
def test_projector_once_on_a_caught_up_log(demo: Demo) -> None:
    code, out = demo.cli("projector", "--once")
    assert code == 0, out
    assert "applied 0 events" in out


@pytest.mark.slow
def test_events_tail(demo: Demo) -> None:
    store = demo.store
    head = store.max_position()
    code, out = demo.cli("events", "tail", "--limit", "3")
    assert code == 0, out
    last = store.read_records(after=head - 4, limit=4)
    for record in last[1:]:
        assert has_row(out, record.position, record.stream, record.version, record.type)
    assert not has_row(out, last[0].position, last[0].stream)

    stream = last[0].stream
    code, out = demo.cli("events", "tail", "--stream", stream, "--limit", "10000")
    assert code == 0, out
    records = store.read_records(limit=10_000, stream=stream)
    for record in records:
        assert has_row(out, record.position, record.stream, record.version, record.type)
    assert len(re.findall(rf"(?m)^\W*\d+\W+{re.escape(stream)}\W", out)) == len(records)

    # `-n`, as `tail -n` (a newcomer's first try; it was "No such option: -n")
    code, short = demo.cli("events", "tail", "-n", "3")
    assert code == 0 and short == demo.cli("events", "tail", "--limit", "3")[1], short


@pytest.mark.slow
def test_events_show(demo: Demo) -> None:
    first = demo.store.read_records(limit=1)[0]
    code, out = demo.cli("events", "show", str(first.id))
    assert code == 0, out
    shown = json.loads(out)
    assert shown["id"] == str(first.id)
    assert shown["stream"] == first.stream and shown["position"] == first.position
    assert shown["payload"]["type"] == first.type


@pytest.mark.slow
def test_events_show_bad_id(demo: Demo) -> None:
    code, out = demo.cli("events", "show", "not-an-id")
    assert code == 2
    assert "'not-an-id' is not an event id (a UUID)" in said(out)


@pytest.mark.slow
def test_events_show_unknown_id(demo: Demo) -> None:
    code, out = demo.cli("events", "show", "00000000-0000-7000-8000-000000000000")
    assert code == 1
    assert "no event 00000000-0000-7000-8000-000000000000" in said(out)


@pytest.mark.slow
def test_runs(demo: Demo) -> None:
    with demo.store.engine.connect() as conn:
        runs = runs_of(conn)
    started = demo.store.read_records(types=["campaign.started"])
    modes = {r.correlation_id: r.payload["mode"] for r in started}
    code, out = demo.cli("runs")
    assert code == 0, out
    for run in runs:
        status = f"finished ({run.finish_reason})"
        cells = (run.event_count, run.steps, run.attempts, run.papers)
        where = (run.campaign, modes[run.campaign], run.task)  # which campaign, how
        assert has_row(out, run.stream, *where, run.lab, "search", status, *cells), run.stream
    done = sum(1 for run in runs if run.finish_reason == "done")
    assert out.count("finished (done)") == done


def test_runs_before_any_projector(tmp_path: Path) -> None:
    EventStore.from_url(f"sqlite:///{tmp_path / 'labrxiv.db'}")  # a log, no read model yet
    code, out = invoke("runs", LABRXIV_DATA_DIR=str(tmp_path))
    assert code == 0, out
    assert "run-" not in out and "no run yet" in said(out)


def test_events_dead_and_status_show_what_the_recorder_rejected(tmp_path: Path) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'labrxiv.db'}")
    ctx = WorkerContext(store=store, bus=LocalBus())
    record_message(ctx, '{"events": [{"id": "not-a-uuid", "stream": "run-x"}]}')
    record_message(ctx, "this is not json")

    code, out = invoke("events", "dead", LABRXIV_DATA_DIR=str(tmp_path))
    assert code == 0, out
    assert "invalid event: id: Input should be a valid UUID" in said(out)
    assert '"not-a-uuid"' in out
    assert "message is not JSON" in said(out) and "this is not json" in out

    code, out = invoke("status", LABRXIV_DATA_DIR=str(tmp_path))
    assert code == 0, out
    assert has_row(out, "dead letters", 2)
    assert "message is not JSON" in said(out)


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("LABRXIV_VISIBILITY_TIMEOUT", "abc"),
        ("LABRXIV_VISIBILITY_TIMEOUT", "0"),
        ("LABRXIV_DATABASE_URL", "mysql://x"),
        ("LABRXIV_REDIS_URL", "http://localhost:6379"),
        ("LABRXIV_REDIS_URL", "unix:///run/redis.sock?socket_timeout=5"),
        ("LABRXIV_LOG_LEVEL", "loud"),
        ("LABRXIV_MAX_MESSAGE_BYTES", "12"),
        ("LABRXIV_GYM_PATH", "/data/tasks"),  # a JSON list, not a PATH-like string
        ("LABRXIV_STALL_SECONDS", "inf"),
        ("LABRXIV_LLM_TIMEOUT", "nan"),
    ],
)
@pytest.mark.parametrize("command", [["status"], ["demo"], ["events", "tail"], ["runs"]])
def test_wrong_setting_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, command: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out = invoke(*command, **{variable: value})
    assert code == 2, out
    assert f"{variable}={value!r}" in said(out)
    assert "Traceback" not in out
    assert list(tmp_path.iterdir()) == []  # nothing was started


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_data_dir_is_refused(tmp_path: Path, value: str) -> None:
    """`LABRXIV_DATA_DIR= labrxiv runs` looked for the log in the current folder (an empty
    path is "."; found running labrxiv from outside)."""
    code, out = invoke("runs", LABRXIV_DATA_DIR=value)
    assert code == 2, out
    assert f"bad setting: LABRXIV_DATA_DIR={value!r}" in said(out) and "empty" in said(out)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b"[models.m]\ninput = inf\noutput = 1\n", "input: must be a finite number, not inf"),
        (b"[models.m]\ninput = 1\noutput = -2\n", "output: must be at least 0, not -2"),
        (b"\xff\xfe[models.m]\n", "not UTF-8"),
    ],
)
def test_a_broken_price_table_stops_the_command_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: bytes, problem: str
) -> None:
    """Checked when the command starts, not when a run first prices a call: a run that
    got there ended in an error, and an infinite price made every answer unrecordable."""
    prices = tmp_path / "prices.toml"
    prices.write_bytes(text)
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    command = ["campaign", "--task", "math-prompting", "--policy", "llm", "--model", "m"]
    code, out = invoke(*command, LABRXIV_PRICES=str(prices), LABRXIV_DATA_DIR="data")
    assert code == 2, out
    assert "bad setting: LABRXIV_PRICES=" in said(out) and problem in said(out)
    assert said(out).count(str(prices)) == 1, "the file is named once"
    assert "Traceback" not in out and len(out.strip().splitlines()) <= 3
    assert list((tmp_path / "data").iterdir()) == []  # nothing was started


@pytest.mark.parametrize(
    "option",
    [
        ["--dollars", "-1"],
        ["--tokens", "0"],
        ["--steps", "0"],
        ["--wall-seconds", "-3"],
        ["--campaign-dollars", "0"],
        ["--campaign-tokens", "0"],
        # An infinite limit was taken, written as null beside its source, dead-lettered,
        # and the command watched a run that never began (found from outside).
        ["--dollars", "inf"],
        ["--wall-seconds", "inf"],
        ["--campaign-dollars", "inf"],
        ["--base-url", "ftp://x"],
        ["--review", "llm", "--review-base-url", "file:///x"],
    ],
)
def test_a_wrong_budget_or_endpoint_is_one_line_before_any_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: list[str]
) -> None:
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    command = ["campaign", "--task", "continual-digits", "--policy", "llm", "--model", "m"]
    code, out = invoke(*command, "--labs", "1", *option, LABRXIV_DATA_DIR="data")
    assert code == 2, out
    assert said(out).startswith(f"{option[-2]} ") and "Traceback" not in out
    assert any(
        words in out
        for words in ("greater than", "must start with http:// or https://", "a finite number")
    ), out
    assert len(out.strip().splitlines()) == 1, out
    assert list((tmp_path / "data").iterdir()) == []  # nothing was started


def test_an_unknown_phase_is_named_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--phase-model review=x` said "phase_models.review.: Input should be…": rich took
    the `[key]` of pydantic's error place for a style tag (found trying a wrong input)."""
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    command = ["campaign", "--task", "continual-digits", "--policy", "llm", "--model", "m"]
    code, out = invoke(*command, "--phase-model", "review=x", LABRXIV_DATA_DIR="data")
    assert code == 2, out
    assert said(out).startswith("bad llm settings: phase_models.review: Input should be "), out
    assert "'revise'" in out and len(out.strip().splitlines()) == 1, out
    assert list((tmp_path / "data").iterdir()) == []
    # without `=`, the word was taken for a phase's name: say what the option takes
    for wrong in ("noequals", "=m", "plan="):
        code, out = invoke(*command, "--phase-model", wrong, LABRXIV_DATA_DIR="data")
        assert code == 2, out
        assert (
            said(out) == f"--phase-model takes PHASE=MODEL (literature=gpt-4o-mini), not {wrong!r}"
        )


AGENT = ["--model", "m", "--agent", "x.py"]
"""What an agent lab is given, beside the option under test."""


@pytest.mark.parametrize(
    ("policy", "option", "named"),
    [
        ("search", ["--tool-protocol", "nope"], "--tool-protocol"),
        ("search", ["--temperature", "-3"], "--temperature"),
        ("search", ["--context-tokens", "100"], "--context-tokens"),
        ("search", ["--phase-calls", "30"], "--phase-calls"),
        ("search", ["--phase-model", "foo=bar", "--model", "m"], "--model, --phase-model"),
        ("search", ["--base-url", "http://x"], "--base-url"),
        ("agent", [*AGENT, "--tool-protocol", "text"], "--tool-protocol"),
        ("agent", [*AGENT, "--temperature", "0.2"], "--temperature"),
        ("agent", [*AGENT, "--context-tokens", "8000"], "--context-tokens"),
        ("agent", [*AGENT, "--phase-calls", "30"], "--phase-calls"),
        (
            "agent",
            [*AGENT, "--temperature", "0.2", "--phase-calls", "30"],
            "--temperature, --phase-calls",
        ),
    ],
)
def test_llm_options_the_labs_do_not_read_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, option: list[str], named: str
) -> None:
    """They were accepted and ignored, invalid values included (`--tool-protocol nope`
    exited 0; found running labrxiv from outside). An agent lab reads the model, the
    phases' models and the endpoint (the agent is given them) and nothing else of the llm
    policy's settings: a campaign "at temperature 0.2" ran at the agent's own."""
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    command = ["campaign", "--task", "continual-digits", "--policy", policy, *option]
    code, out = invoke(*command, LABRXIV_DATA_DIR="data")
    assert code == 2, out
    assert said(out) == f"{named}: for llm labs only, and these are --policy {policy} labs"
    assert list((tmp_path / "data").iterdir()) == []


def test_a_policy_is_named_against_the_registry_and_the_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path)
    code, out = invoke("campaign", "--task", "continual-digits", "--policy", "foo")
    assert code == 2 and said(out) == "no policy 'foo' (known: agent, llm, search)", out
    code, out = invoke("campaign", "--task", "math-prompting", "--policy", "search")
    assert (
        code == 2
        and said(out) == "task math-prompting is for the llm and agent policies, not search"
    ), out
    # A bundle never validated, whose card names search but gives it nothing to search.
    gym = tmp_path / "gym"
    shutil.copytree(Path(__file__).parents[2] / "gym" / "continual-digits", gym / "bare")
    card = (gym / "bare" / "task.toml").read_text()
    card = card.replace('id = "continual-digits"', 'id = "bare"')
    (gym / "bare" / "task.toml").write_text(card[: card.index("[search_space]")])
    code, out = invoke("campaign", "--task", "bare", LABRXIV_GYM_PATH=f'["{gym}"]')
    line = "task.toml: policies: 'search' needs a search_space (the parameters it may set)"
    assert code == 2 and line in said(out), out  # as `tasks validate` says it


def test_worker_without_redis(tmp_path: Path) -> None:
    code, out = invoke("worker", LABRXIV_DATA_DIR=str(tmp_path))
    assert code == 2
    assert "LABRXIV_REDIS_URL is not set: a worker needs Redis" in said(out)


def test_demo_and_campaign_stop_with_a_reason_where_labs_cannot_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a user who is not root the root jail cannot run: say so and exit 2 before any
    run starts, rather than six runs ending in `error`, an empty report and exit 0."""
    from workers.sandbox import jail
    from workers.sandbox.backends import choose

    jail.check_available.cache_clear()
    choose.cache_clear()
    monkeypatch.setattr(jail.os, "geteuid", lambda: 1000)
    # A user's PATH on Debian has no /usr/sbin, where pivot_root is: not the reason to give.
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("LABRXIV_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LABRXIV_SANDBOX", "jail")
    try:
        for args in (["demo"], ["campaign", "--task", "continual-digits"]):
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 2, result.output
            assert "labs cannot run here" in result.output and "needs root" in result.output
        assert not (tmp_path / "data" / "demo").exists() or not any(
            (tmp_path / "data" / "demo").rglob("run-*")
        )
    finally:
        jail.check_available.cache_clear()
        choose.cache_clear()
