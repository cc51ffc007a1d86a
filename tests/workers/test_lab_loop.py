"""The lab loop end to end on the embedded system: runs finish, papers carry measured numbers,
the search policy is deterministic, and refusals become integrity events."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from events import Event
from events.payloads import RunStarted
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from runstate import fold
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.tools.invoke import invoke


@pytest.fixture
def system(tmp_path: Path) -> Iterator[Embedded]:
    embedded = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=2)
    yield embedded
    embedded.close()


def _campaign(
    system: Embedded, mode: str, seed: int, labs: int = 2, papers: int = 1
) -> list[list[Event]]:
    plan = CampaignPlan(
        task="continual-digits", labs=labs, papers=papers, mode=mode, seed=seed, attempts=3
    )  # type: ignore[arg-type]
    _campaign_id, runs = start_campaign(system.bus, plan)
    system.bus.join()
    assert not system.bus.failures
    return [system.store.read_stream(stream) for stream in runs]


def test_campaign_runs_finish_with_papers_whose_claims_were_measured(system: Embedded) -> None:
    streams = _campaign(system, "archive", seed=3)
    for events in streams:
        state = fold(events)
        assert state.finished is not None and state.finished.reason == "done"
        assert [e.version for e in events] == list(range(len(events)))
        scored = {e.payload.attempt: e for e in events if e.type == "experiment.scored"}
        assert len(scored) == 3
        assert all(e.actor == "grader:continual-digits" for e in scored.values())
        (paper,) = [e.payload for e in events if e.type == "paper.submitted"]
        assert paper.claims
        for claim in paper.claims:
            assert claim.attempt is not None
            assert claim.value == scored[claim.attempt].payload.subtask_scores[claim.subtask]
        assert [x.attempt for x in paper.experiments] == sorted(scored)
        configs = [a.config for a in state.attempts]
        for experiment in paper.experiments:
            assert experiment.scores == scored[experiment.attempt].payload.subtask_scores
            assert experiment.config == configs[experiment.attempt - 1]
    campaign = streams[0][0].correlation_id
    finished = system.store.read_stream(f"campaign-{campaign}")
    assert [e.type for e in finished] == ["campaign.started", "campaign.finished"]


def test_archive_labs_read_only_their_own_campaigns_papers(system: Embedded) -> None:
    """An archive campaign after an isolated one on the same log starts from nothing."""
    isolated = _campaign(system, "isolated", seed=5, papers=2)
    earlier = _paper_ids(isolated)
    archive = _campaign(system, "archive", seed=5, papers=2)
    own = _paper_ids(archive)
    read = {
        paper_id
        for events in archive
        for e in events
        if e.type == "papers.retrieved"
        for paper_id in e.payload.paper_ids
    }
    assert earlier and read, "both campaigns published, and the archive labs searched"
    assert read <= own and not read & earlier


def _paper_ids(streams: list[list[Event]]) -> set[str]:
    return {e.payload.paper_id for events in streams for e in events if e.type == "paper.submitted"}  # type: ignore[attr-defined]


def test_search_policy_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    def trace(folder: str) -> list[tuple[str, str]]:
        embedded = open_embedded(load_settings(data_dir=tmp_path / folder), threads=2)
        try:
            (events,) = _campaign(embedded, "isolated", seed=7, labs=1)
        finally:
            embedded.close()
        return [(e.payload.tool, str(e.payload.args)) for e in events if e.type == "tool.invoked"]

    first, second = trace("a"), trace("b")
    assert first == second
    configs = [args for tool, args in first if tool == "write_file"]
    assert len(set(configs)) == len(configs) == 3


def _env(system: Embedded) -> object:
    _campaign_id, (stream,) = start_campaign(
        system.bus,
        CampaignPlan(
            task="continual-digits", labs=1, papers=1, mode="isolated", seed=1, attempts=1
        ),
    )
    system.bus.join()
    events = system.store.read_stream(stream)
    state = fold(events[:1])
    assert isinstance(state.started, RunStarted)
    return system.ctx.labs.env_for(state)


@pytest.mark.parametrize(
    ("tool", "args", "kind"),
    [
        ("read_file", {"path": "../../etc/passwd"}, "path_traversal"),
        ("write_file", {"path": "/tmp/evil", "content": "x"}, "absolute_path"),
        ("bash", {"command": "cat {gym}/continual-digits/hidden/*"}, "protected_path"),
        (
            "python",
            {"code": "import socket; socket.create_connection(('127.0.0.1', 6379), timeout=2)"},
            "network",
        ),
    ],
)
def test_refusals_are_recorded_as_integrity_violations(
    system: Embedded, tool: str, args: dict[str, str], kind: str
) -> None:
    env = _env(system)
    gym = str(system.ctx.labs.gym_dirs[0])
    args = {k: v.replace("{gym}", gym) for k, v in args.items()}
    outcome = invoke(env, tool, args, call_id="c1")  # type: ignore[arg-type]
    types = [p.type for p in outcome.payloads]
    assert types[:2] == ["tool.invoked", "tool.returned"]
    violations = [p for p in outcome.payloads if p.type == "integrity.violation"]
    assert [v.kind for v in violations] == [kind]  # type: ignore[attr-defined]
    assert violations[0].call_id == "c1"  # type: ignore[attr-defined]
    assert outcome.payloads[1].exit_code != 0  # type: ignore[attr-defined]


def test_symlink_to_hidden_labels_is_refused(system: Embedded) -> None:
    env = _env(system)
    gym = system.ctx.labs.gym_dirs[0]
    invoke(env, "bash", {"command": "ln -s ../../../ x"}, call_id="c0")  # type: ignore[arg-type]
    hidden = next((gym / "continual-digits" / "hidden").iterdir())
    link = env.sandbox.root / "labels"  # type: ignore[attr-defined]
    link.symlink_to(hidden)
    outcome = invoke(env, "read_file", {"path": "labels"}, call_id="c1")  # type: ignore[arg-type]
    kinds = [p.kind for p in outcome.payloads if p.type == "integrity.violation"]  # type: ignore[attr-defined]
    assert kinds == ["protected_path"]


def test_unknown_tool_and_bad_arguments_are_told_not_raised(system: Embedded) -> None:
    env = _env(system)
    unknown = invoke(env, "teleport", {}, call_id="c1")  # type: ignore[arg-type]
    assert "unknown tool" in unknown.payloads[1].preview  # type: ignore[attr-defined]
    bad = invoke(env, "read_file", {"file": "x"}, call_id="c2")  # type: ignore[arg-type]
    assert "bad arguments for read_file" in bad.payloads[1].preview  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("code", "limit"),
    [
        ("import time; time.sleep(30)", "time"),
        ("x = bytearray(8 * 1024**3)", "memory"),
        ("while True: print('y' * 100)", "output"),
    ],
)
def test_limits_are_reported_in_the_tool_event(system: Embedded, code: str, limit: str) -> None:
    env = _env(system)
    outcome = invoke(env, "python", {"code": code, "timeout_s": 2}, call_id="c1")  # type: ignore[arg-type]
    returned = outcome.payloads[1]
    assert returned.type == "tool.returned"
    assert returned.limit == limit  # type: ignore[attr-defined]
    assert returned.exit_code != 0  # type: ignore[attr-defined]
    assert f"[stopped: {limit} limit]" in outcome.output


def test_binary_output_is_escaped_so_every_backend_stores_it(system: Embedded) -> None:
    env = _env(system)
    outcome = invoke(env, "python", {"code": "print('a\\x00b')"}, call_id="c1")  # type: ignore[arg-type]
    assert "\x00" not in outcome.payloads[1].preview  # type: ignore[attr-defined]
    assert "a\\x00b" in outcome.payloads[1].preview  # type: ignore[attr-defined]
