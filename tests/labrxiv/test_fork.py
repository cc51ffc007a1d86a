"""`labrxiv fork RUN --at K` on an offline run: the fork goes on from the parent's step K
with its own settings, in a workspace rebuilt from the log as it was at K (no tool run
again); the runs read model and replay show where it branched; what cannot be forked
is one line."""

import json
from pathlib import Path

import pytest
from cli_support import Cli
from sqlalchemy import select

from analysis.detectors import detect
from analysis.detectors.view import read_run
from events import Event, EventStore
from events.ids import new_id, utcnow
from events.payloads import ForkPoint, ToolReturned
from labrxiv.settings import load_settings
from labrxiv.wiring import open_embedded
from projections.behaviour import BEHAVIOUR
from projections.findings import findings_of
from projections.runs import runs_of
from runstate.trajectory import steps
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.fork import ForkError, restore

pytestmark = pytest.mark.slow


@pytest.fixture
def parent(workdir: Path) -> tuple[str, Path]:
    data = workdir / "data"
    system = open_embedded(load_settings(data_dir=data), threads=1)
    try:
        plan = CampaignPlan(
            task="continual-digits", labs=1, papers=1, mode="isolated", seed=2, attempts=4
        )
        _, (run,) = start_campaign(system.bus, plan)
        system.settle()
    finally:
        system.close()
    return run, data


def _store(data: Path) -> EventStore:
    return EventStore.from_url(load_settings(data_dir=data).store_url, create=False)


def test_a_fork_goes_on_from_step_k_with_its_own_settings(
    parent: tuple[str, Path], cli: Cli
) -> None:
    run, data = parent
    said = cli(
        "fork", run[4:12], "--at", "4", "--seed", "9", "--attempts", "6", LABRXIV_DATA_DIR=str(data)
    )
    assert said.code == 0, said.out
    store = _store(data)
    (fork,) = [r.stream for r in store.read_records(types=["run.started"]) if r.stream != run]
    own = store.read_stream(fork)
    point = own[0].payload.forked_from
    assert point is not None and point.run == run and point.step == 4
    assert own[0].payload.seed == 9 and own[0].payload.budget.attempts == 6
    assert own[-1].type == "run.finished" and own[-1].payload.reason == "done"
    attempts = [e.payload.attempt for e in own if e.type == "experiment.scored"]
    assert attempts == [3, 4, 5, 6], "two inherited attempts, four of its own"
    parent_events = store.read_stream(run)
    theirs = [s for s, _ in steps(parent_events)][:5]
    load = lambda s, v: store.read_stream(s, limit=v + 1)  # noqa: E731
    mine = [s for s, _ in steps(own, load)]
    assert mine[:5] == theirs and mine[5].stream == fork
    with store.engine.connect() as conn:
        (view,) = runs_of(conn, streams=[fork])
    assert view.forked_from == run and view.fork_step == 4
    # Its budget counts the inherited attempts, and so does the watch's table (it showed
    # 4/6 for a fork that had made all 6; found running labrxiv from outside).
    assert (view.attempts, view.inherited_attempts) == (4, 2)
    assert (view.papers, view.inherited_papers) == (1, 0)
    assert "6/6" in said.out and "4/6" not in said.out
    shown_run = cli("runs", "show", fork, LABRXIV_DATA_DIR=str(data), COLUMNS="300")
    assert f"forked from {run} at step 4" in shown_run.out, shown_run.out
    assert "4 scored attempts (and 2 inherited)" in shown_run.out, shown_run.out
    replayed = cli("replay", fork, "--json", LABRXIV_DATA_DIR=str(data))
    shown = json.loads(replayed.stdout)
    assert [s["stream"] for s in shown["steps"][:5]] == [run] * 5
    assert len(shown["state"]["attempts"]) == 6


def test_the_workspace_is_rebuilt_as_it_was_at_the_fork_point(
    parent: tuple[str, Path], tmp_path: Path
) -> None:
    run, data = parent
    store = _store(data)
    events = store.read_stream(run)
    written = [e for e in events if e.type == "tool.invoked" and e.payload.tool == "write_file"]
    for k, expected in ((1, written[0]), (3, written[1])):
        step = [s for s, _ in steps(events)][k]
        root = tmp_path / f"at-{k}"
        root.mkdir()
        restore(store, root, ForkPoint(run=run, step=k, version=step.last_version))
        assert (root / "config.json").read_text() == expected.payload.args["content"]


def test_what_cannot_be_forked_is_one_line(parent: tuple[str, Path], cli: Cli) -> None:
    run, data = parent
    for args, words in [
        (("fork", "run-nope", "--at", "1"), "no run"),
        (("fork", run, "--at", "999"), "has no step 999"),
        (
            ("fork", run, "--at", "2", "--policy", "nope"),
            "no policy 'nope' (known: agent, llm, search)",
        ),
        (("fork", run, "--at", "2", "--dollars", "-1"), "--dollars -1.0: Input should be"),
        (
            ("fork", run, "--at", "2", "--policy", "llm", "--model", "m", "--base-url", "x"),
            "--base-url 'x': must start",
        ),
        # Found running labrxiv from outside: a setting `campaign` refuses reached the
        # fork's run.started unchecked, which was dead-lettered, and the command watched a
        # run that never began until --timeout; options the fork's labs read none of were
        # dropped silently (a search run forked "with a stronger model" tested nothing).
        (
            ("fork", run, "--at", "2", "--policy", "llm", "--model", "m", "--temperature", "5"),
            "bad llm settings: temperature: Input should be less than or equal to 2",
        ),
        (
            ("fork", run, "--at", "2", "--policy", "llm", "--temperature", "nan", "--model", "m"),
            "bad llm settings: temperature",
        ),
        (("fork", run, "--at", "2", "--model", "gpt-x"), "--model: for llm labs only"),
        (
            ("fork", run, "--at", "2", "--policy", "llm", "--model", ""),
            "--model is required for --policy llm",
        ),
        (("fork", run, "--at", "2", "--policy", "llm"), "a run that had no model needs --model"),
        (  # it started, made no attempt and ended `budget: attempts limit`
            ("fork", run, "--at", "4", "--attempts", "2"),
            "--attempts 2: the fork inherits 2 attempts by step 4; give a larger limit or an "
            "earlier step",
        ),
        (
            ("fork", run, "--at", "2", "--temperature", "-3", "--base-url", "http://h/v1"),
            "--base-url, --temperature: for llm labs only, and this fork is a --policy search run",
        ),
    ]:
        said = cli(*args, LABRXIV_DATA_DIR=str(data))
        assert said.code == 2 if "llm" in words else said.code != 0, said.out
        assert words in said.text, said.out
        assert "Traceback" not in said.out
    started = _store(data).read_records(types=["run.started", "campaign.started"])
    assert [r.stream for r in started if r.type == "run.started"] == [run], "nothing begun"
    finished_at = len([s for s in steps(_store(data).read_stream(run))]) - 1
    said = cli("fork", run, "--at", str(finished_at), LABRXIV_DATA_DIR=str(data))
    assert said.code == 1 and "had finished" in said.text


def test_a_log_entry_leaving_the_workspace_is_refused(tmp_path: Path) -> None:
    store = EventStore.from_url(f"sqlite:///{tmp_path / 'log.db'}")
    bad = ToolReturned(
        call_id="c1",
        tool="bash",
        exit_code=0,
        duration_s=0.1,
        files_deleted=["../outside.txt"],
    )
    store.append([Event(id=new_id(), stream="run-x", version=0, occurred_at=utcnow(), payload=bad)])
    (tmp_path / "outside.txt").write_text("kept")
    root = tmp_path / "ws"
    root.mkdir()
    with pytest.raises(ForkError, match="not a path inside"):
        restore(store, root, ForkPoint(run="run-x", step=0, version=0))
    assert (tmp_path / "outside.txt").read_text() == "kept"


def test_a_fork_is_judged_on_the_trajectory_it_stands_on(
    parent: tuple[str, Path], cli: Cli
) -> None:
    run, data = parent
    assert cli("fork", run, "--at", "4", "--seed", "9", LABRXIV_DATA_DIR=str(data)).code == 0
    store = _store(data)
    (fork,) = [r.stream for r in store.read_records(types=["run.started"]) if r.stream != run]
    own = store.read_stream(fork)
    load = lambda s, v: store.read_stream(s, limit=v + 1)  # noqa: E731
    whole = read_run(own, load)
    theirs = {e.id for e in store.read_stream(run)}
    inherited = [c for c in whole.calls if c.invoked in theirs]
    assert inherited and len(whole.calls) == len(inherited) + len(read_run(own).calls)
    assert whole.started.id == own[0].id  # its own settings
    expected = detect(own, load)
    # Read alone, its paper's claims name attempts it inherited: "misreported" wrongly.
    assert any(f.detector == "misreported_claim" for f in detect(own))
    assert not any(f.detector == "misreported_claim" for f in expected)
    shown = json.loads(cli("analyze", fork, "--json", LABRXIV_DATA_DIR=str(data)).stdout)
    said = shown["runs"][0]["findings"]["findings"]
    assert [(f["detector"], f["events"]) for f in said] == [
        (f.detector, [str(i) for i in f.events]) for f in expected
    ]
    # The findings read model judges it the same way, incrementally and rebuilt.
    with store.engine.connect() as conn:
        kept = findings_of(conn, run=fork)[fork].findings
    assert kept == tuple(expected)
    assert cli("rebuild", LABRXIV_DATA_DIR=str(data)).code == 0
    with store.engine.connect() as conn:
        assert findings_of(conn, run=fork)[fork].findings == tuple(expected)


def test_a_fork_of_a_fork_is_cut_at_replays_step_numbers(
    parent: tuple[str, Path], cli: Cli
) -> None:
    """`--at K` counts steps as `labrxiv replay` of the run shows them, inherited ones
    first: on a fork, K was taken as the fork's own K-th step (found running labrxiv from
    outside: `fork FORK --at 2` cut the fork at replay's step 7, past 3 attempts, and the
    new run ended at once over its attempts budget)."""
    run, data = parent
    said = cli("fork", run, "--at", "4", "--attempts", "6", LABRXIV_DATA_DIR=str(data))
    assert said.code == 0, said.out
    store = _store(data)
    load = lambda s, v: store.read_stream(s, limit=v + 1)  # noqa: E731
    (fork,) = [r.stream for r in store.read_records(types=["run.started"]) if r.stream != run]
    replayed = [s for s, _ in steps(store.read_stream(fork), load)]
    own = next(s for s in replayed if s.stream == fork and s.number > 5)  # past its start
    for at, stream in ((2, run), (own.number, fork)):  # an inherited step, one of its own
        said = cli("fork", fork, "--at", str(at), "--attempts", "6", LABRXIV_DATA_DIR=str(data))
        assert said.code == 0, said.out
        newest = store.read_records(types=["run.started"])[-1]
        point = newest.typed().payload.forked_from
        assert point is not None and (point.run, point.step) == (stream, at)
        cut = {s.number: s for s in replayed}[at]
        assert point.version == cut.last_version
        mine = [s for s, _ in steps(store.read_stream(newest.stream), load)]
        assert [s.events for s in mine[: at + 1]] == [s.events for s in replayed[: at + 1]]
        end = store.read_stream(newest.stream)[-1]
        assert end.type == "run.finished" and end.payload.reason == "done", end.payload
        with store.engine.connect() as conn:  # what it stands on, through both forks
            (view,) = runs_of(conn, streams=[newest.stream])
        assert view.inherited_attempts == sum(len(s.scored) for s in replayed[: at + 1])


def test_analyze_numbers_a_forks_steps_as_replay_does(parent: tuple[str, Path], cli: Cli) -> None:
    """The behaviour figures are of the fork's own events, and its best score's step is
    the step replay shows for that scoring (after the inherited ones): analyze said
    "at step 19" where replay showed the scoring at step 30 (found running labrxiv from
    outside)."""
    run, data = parent
    assert cli("fork", run, "--at", "4", "--seed", "9", LABRXIV_DATA_DIR=str(data)).code == 0
    store = _store(data)
    (fork,) = [r.stream for r in store.read_records(types=["run.started"]) if r.stream != run]
    replayed = json.loads(cli("replay", fork, "--json", LABRXIV_DATA_DIR=str(data)).stdout)
    own = [s for s in replayed["steps"] if s["stream"] == fork]
    for source in ([], ["--no-findings"]):  # from the read model, and folded from the log
        shown = json.loads(
            cli("analyze", fork, "--json", *source, LABRXIV_DATA_DIR=str(data)).stdout
        )
        figures = shown["runs"][0]["behaviour"]
        assert figures["steps"] == len(own)
        useful = figures["useful"]
        best_step = next(s for s in replayed["steps"] if s["number"] == useful["best_step"])
        assert best_step["stream"] == fork
        assert useful["best"] in best_step["scored"]
    with store.engine.connect() as conn:  # the read model's summary column agrees
        stored = conn.execute(select(BEHAVIOUR.c.steps).where(BEHAVIOUR.c.run == fork)).scalar()
    assert stored == len(own)
