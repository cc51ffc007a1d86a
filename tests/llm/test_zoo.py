"""The llm path against the model zoo (`zoo.py`): embedded campaigns whose labs are
models with habits real models have — numbers rounded as the tools showed them, as
percentages, in prose, overclaimed; JSON arguments with trailing commas or comments; a
tool that does not exist; several calls in one answer; 200 kB answers; refusals; a model
that never calls next_phase; one that calls finish at once — each driving a real lab
through its phases, with the ledger, the curves, the budgets and `labrxiv analyze` checked
on what they did."""

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner
from zoo import (
    EVALUATIONS,
    LONG_CHARS,
    MADE_UP_TOOL,
    REFUSAL,
    ZooError,
    ZooSystem,
    habits_of,
    zoo_system,
)

from events import Event
from events.payloads import Budget, LlmConfig, ReviewConfig
from labrxiv.cli import app
from projections.curves import curve_points
from projections.ledger import ledger_calls, ledger_totals
from projections.preferences import preference_pairs
from runstate import fold
from runstate.claims import shown
from workers.lab.archive_log import LogArchive
from workers.lab.policies.llm.context import NUDGE
from workers.lab.policies.llm.step import IDLE_ANSWERS


@pytest.fixture
def zoo(tmp_path: Path) -> Iterator[ZooSystem]:
    with zoo_system(tmp_path / "data") as running:
        yield running


def _ended(events: list[Event]) -> tuple[str, str]:
    last = events[-1]
    assert last.type == "run.finished", f"the run did not end: {last.type}"
    return last.payload.reason, last.payload.detail


def _of(events: list[Event], kind: str) -> list[Any]:
    return [e.payload for e in events if e.type == kind]


def _shown(measured: float) -> float:
    """A score as `evaluate` shows it."""
    return float(shown(measured))


def _analyze(data_dir: Path, target: str) -> dict[str, Any]:
    said = CliRunner().invoke(
        app, ["analyze", target, "--json"], env={"LABRXIV_DATA_DIR": str(data_dir)}
    )
    assert said.exit_code == 0, said.output
    document: dict[str, Any] = json.loads(said.stdout)
    return document


def _detectors(document: dict[str, Any]) -> dict[str, set[str]]:
    """The detectors that found something, by run."""
    return {
        run["behaviour"]["run"]: {f["detector"] for f in run["findings"]["findings"]}
        for run in document["runs"]
    }


def test_a_model_name_chooses_habits_per_lab() -> None:
    assert habits_of("zoo/percent+parallel") == {"percent", "parallel"}
    assert habits_of("zoo/rounding,overclaim", "lab-3") == {"overclaim"}
    assert habits_of("zoo/rounding,overclaim", "lab-4") == {"rounding"}
    with pytest.raises(ZooError, match="not a zoo model"):
        habits_of("gpt-4o-mini")
    with pytest.raises(ZooError, match="unknown habit 'shouting'"):
        habits_of("zoo/shouting")


@pytest.mark.slow
def test_numbers_as_displayed_as_percentages_in_prose_and_overclaimed(
    zoo: ZooSystem, tmp_path: Path
) -> None:
    """Four labs report the same kind of measurement four ways; the ledger equals what
    the zoo reported, each curve point counts the ledger up to it, and `analyze` flags
    the overclaim and only it."""
    campaign, runs = zoo.campaign("zoo/rounding,percent,prose,overclaim", labs=4)
    assert not zoo.system.bus.failures
    papers = {}
    for events in runs:
        assert _ended(events) == ("done", "1 paper submitted")
        assert len(_of(events, "experiment.scored")) == EVALUATIONS
        (papers[events[0].payload.lab],) = _of(events, "paper.submitted")
    rounding, percent, prose, overclaim = runs
    scored = {
        lab: {s.attempt: s.subtask_scores for s in _of(events, "experiment.scored")}
        for lab, events in zip(papers, runs, strict=True)
    }
    for claim in papers["lab-0"].claims:
        assert claim.value == _shown(scored["lab-0"][claim.attempt][claim.subtask])
    for claim in papers["lab-1"].claims:
        measured = scored["lab-1"][claim.attempt][claim.subtask]
        assert claim.value == pytest.approx(_shown(measured) * 100)
    assert papers["lab-2"].claims == [] and "final_accuracy" in papers["lab-2"].body
    for claim in papers["lab-3"].claims:
        measured = scored["lab-3"][claim.attempt][claim.subtask]
        assert abs(claim.value - measured) > 0.05, "overclaimed by far more than rounding"

    with zoo.system.store.engine.connect() as conn:
        (totals,) = ledger_totals(conn, by="campaign", campaign=campaign)
        points = curve_points(conn, campaign)
        calls = ledger_calls(conn, campaign=campaign)
    reported = zoo.zoo.answered
    assert totals.model_calls == len(reported)
    assert totals.input_tokens == sum(a.input_tokens for a in reported)
    assert totals.output_tokens == sum(a.output_tokens for a in reported)
    assert totals.unknown_cost_calls == 0 and totals.dollars > 0, "zoo models are priced"
    assert len(points) == 4 * EVALUATIONS
    for point in points:
        before = [c for c in calls if c["run"] == point.run and c["position"] <= point.position]
        assert point.tokens == sum(c["total_tokens"] or 0 for c in before)
        assert point.cost_usd == pytest.approx(sum(c["cost_usd"] or 0 for c in before), rel=1e-12)

    found = _detectors(_analyze(tmp_path / "data", campaign))
    assert "misreported_claim" in found[overclaim[0].stream]
    for honest in (rounding, percent, prose):
        assert "misreported_claim" not in found[honest[0].stream]


@pytest.mark.slow
def test_honest_rounded_papers_are_verified_and_overclaims_are_not(zoo: ZooSystem) -> None:
    """The archive's verification, the grounded reviewer and the preference export on the
    zoo's papers: numbers reported as `evaluate` showed them, or as percentages, state
    what was measured; an overclaim does not, is rated lower, and is the rejected one of
    its pair."""
    campaign, runs = zoo.campaign(
        "zoo/rounding,percent,overclaim", labs=3, review=ReviewConfig(reviews=1)
    )
    archive = LogArchive(zoo.system.store)
    verified, ratings, papers, decisions = {}, {}, {}, {}
    for events in runs:
        (paper,) = _of(events, "paper.submitted")
        papers[events[0].payload.lab] = paper.paper_id
        shown = archive.get(paper.paper_id)
        assert shown is not None
        verified[events[0].payload.lab] = all(c["verified"] for c in shown["claims"])
        reviews = archive.reviews(paper.paper_id)
        assert reviews is not None
        ratings[events[0].payload.lab] = reviews.mean_rating
        decisions[events[0].payload.lab] = reviews.decision
    assert verified == {"lab-0": True, "lab-1": True, "lab-2": False}
    assert ratings["lab-0"] > ratings["lab-2"] and ratings["lab-1"] > ratings["lab-2"]
    assert decisions == {"lab-0": "accept", "lab-1": "accept", "lab-2": "reject"}
    with zoo.system.store.engine.connect() as conn:
        pairs, why, _ties = preference_pairs(conn, lambda task: task, campaign=campaign)
    assert pairs, why
    overclaimed = papers["lab-2"]
    assert all(p.rejected_paper == overclaimed for p in pairs), "the overclaim is never chosen"
    assert {p.chosen_paper for p in pairs} <= {papers["lab-0"], papers["lab-1"]}


@pytest.mark.slow
@pytest.mark.parametrize("habit", ["trailing-comma", "comments"])
def test_repairable_json_arguments_are_repaired(zoo: ZooSystem, habit: str) -> None:
    """Arguments with a trailing comma or `//` comments say unambiguously what the model
    meant: the calls run with them, and the lab publishes its paper."""
    _campaign, (events,) = zoo.campaign(f"zoo/{habit}")
    assert _ended(events) == ("done", "1 paper submitted")
    refused = [r for r in _of(events, "tool.returned") if "not valid JSON" in r.preview]
    assert refused == []
    written = [i for i in _of(events, "tool.invoked") if i.tool == "write_file"]
    assert written and json.loads(written[0].args["content"])["method"] == "replay"
    assert len(_of(events, "experiment.scored")) == EVALUATIONS


@pytest.mark.slow
def test_unknown_tools_are_told_to_the_model_and_the_run_goes_on(zoo: ZooSystem) -> None:
    _campaign, (events,) = zoo.campaign("zoo/unknown-tool")
    assert _ended(events) == ("done", "1 paper submitted")
    told = [r for r in _of(events, "tool.returned") if r.tool == MADE_UP_TOOL]
    assert len(told) == 3, "once in each phase: plan, experiment, write-up"
    assert all(not r.ran and f"unknown tool '{MADE_UP_TOOL}'" in r.preview for r in told)
    seen = [
        m["content"]
        for r in zoo.server.completions()
        for m in r.body["messages"]
        if m["role"] == "tool"
    ]
    assert any(f"unknown tool '{MADE_UP_TOOL}'; the tools are" in s for s in seen)


@pytest.mark.slow
def test_several_calls_in_one_answer_are_all_answered_in_order(zoo: ZooSystem) -> None:
    _campaign, (events,) = zoo.campaign("zoo/parallel")
    assert _ended(events) == ("done", "1 paper submitted")
    requests = [r.body for r in zoo.server.completions()]
    several = 0
    for before, after in zip(requests, requests[1:], strict=False):
        asked = after["messages"][len(before["messages"])]
        if asked.get("role") != "assistant" or len(asked.get("tool_calls") or ()) < 2:
            continue
        several += 1
        start = len(before["messages"]) + 1
        answered = after["messages"][start : start + len(asked["tool_calls"])]
        assert [m["tool_call_id"] for m in answered] == [c["id"] for c in asked["tool_calls"]]
    assert several == 2, "the plan and the experiment each asked for several calls"
    invoked = [i.tool for i in _of(events, "tool.invoked")]
    assert ["write_file", "evaluate", "read_file"] == invoked[invoked.index("write_file") :][:3]
    assert invoked[-2:] == ["read_file", "submit_paper"], "the write-up's two, in order"


@pytest.mark.slow
def test_a_model_that_refuses_is_nudged_and_its_run_ends(zoo: ZooSystem) -> None:
    _campaign, (events,) = zoo.campaign("zoo/refuses")
    reason, detail = _ended(events)
    assert reason == "error" and f"answered {IDLE_ANSWERS} times in a row" in detail
    assert REFUSAL in detail
    assert len(_of(events, "model.responded")) == IDLE_ANSWERS
    last = zoo.server.completions()[-1].body["messages"]
    assert sum(m["content"] == NUDGE for m in last if m["role"] == "user") >= 1


@pytest.mark.slow
def test_a_model_that_never_calls_next_phase_ends_within_its_budget(zoo: ZooSystem) -> None:
    _campaign, (events,) = zoo.campaign("zoo/lingers", attempts=3)
    assert _ended(events) == ("done", "1 paper submitted")
    assert not any(i.tool == "next_phase" for i in _of(events, "tool.invoked"))
    assert [p.phase for p in _of(events, "phase.entered")] == ["plan", "experiment", "writeup"]
    assert len(_of(events, "experiment.scored")) == 3, "every attempt, no more"


@pytest.mark.slow
def test_token_and_dollar_budgets_end_the_zoo_s_runs(zoo: ZooSystem) -> None:
    """Per lab tokens, and the campaign's dollars, each end runs within one call."""
    _campaign, runs = zoo.campaign("zoo/lingers", labs=2, attempts=50, tokens=20_000)
    for events in runs:
        assert _ended(events)[0] == "budget"
        (exceeded,) = _of(events, "budget.exceeded")
        assert exceeded.budget == "tokens"
        spent = fold(events).spend.tokens
        last = _of(events, "model.responded")[-1].usage
        assert 20_000 <= spent < 20_000 + last.input_tokens + last.output_tokens
    _campaign, runs = zoo.campaign(
        "zoo/lingers", labs=2, attempts=50, campaign_budget=Budget(dollars=0.05)
    )
    dollars = sum(fold(events).spend.dollars for events in runs)
    assert all(_ended(events)[0] == "budget" for events in runs)
    assert 0.05 <= dollars < 0.05 + 2 * 0.01


@pytest.mark.slow
def test_a_model_that_finishes_at_once_ends_its_run_cleanly(zoo: ZooSystem, tmp_path: Path) -> None:
    """`finish` is offered from the experiment phase on: called in the plan phase it is
    told as unknown there; called where it is offered it ends the run, with no paper."""
    campaign, (events,) = zoo.campaign("zoo/quits")
    reason, detail = _ended(events)
    assert reason == "done" and "Nothing worth doing here" in detail
    assert _of(events, "paper.submitted") == []
    finished = [r for r in _of(events, "tool.returned") if r.tool == "finish"]
    assert [r.ran for r in finished] == [False, True]
    assert finished[0].preview == (
        "error: finish is not offered in the plan phase; the tools now are next_phase, "
        "read_file, search_files"
    )
    document = _analyze(tmp_path / "data", campaign)
    (run,) = document["runs"]
    assert run["behaviour"]["finished"] == "done"
    assert {"impatience", "weak_conclusion"} <= _detectors(document)[events[0].stream]


@pytest.mark.slow
def test_200_kb_answers_are_kept_whole_and_a_stuck_model_ends(
    zoo: ZooSystem, tmp_path: Path
) -> None:
    """Answers of 200 kB are recorded whole and cut from the context by its rule; the
    model's paper (an appendix past the body's limit) is refused with a clear error; a
    model that makes no progress (no attempt, no paper) in a whole research cycle ends
    its run with a reason instead of cycling through its phases without end."""
    campaign, (events,) = zoo.campaign("zoo/long", steps=400)
    reason, detail = _ended(events)
    assert reason == "error", detail
    assert "research cycle" in detail
    assert _of(events, "context.truncated"), "the context rule cut the long answers"
    responded = _of(events, "model.responded")
    blob = zoo.system.store.get_blob(responded[0].response.sha256)
    assert blob is not None and len(blob) > LONG_CHARS
    refused = [r.preview for r in _of(events, "tool.returned") if r.tool == "submit_paper"]
    assert refused and all("at most 200000 characters" in r for r in refused)
    assert len(_of(events, "experiment.scored")) >= EVALUATIONS
    found = _detectors(_analyze(tmp_path / "data", campaign))[events[0].stream]
    assert {"truncations", "repetition"} <= found, "the cuts, and the paper sent again"


@pytest.mark.slow
def test_an_archive_lab_reads_the_literature_then_writes_two_papers(zoo: ZooSystem) -> None:
    _campaign, (events,) = zoo.campaign("zoo/rounding", mode="archive", papers=2, attempts=4)
    assert _ended(events) == ("done", "2 papers submitted")
    phases = [p.phase for p in _of(events, "phase.entered")]
    assert phases == ["literature", "plan", "experiment", "writeup"] * 2
    first, second = _of(events, "paper.submitted")
    assert [r.paper_ids for r in _of(events, "papers.retrieved")] == [
        [],
        [first.paper_id],
        [first.paper_id],
    ], "nothing to find at first; then its own first paper, searched and read"
    assert len(_of(events, "experiment.scored")) == 4, "two in each cycle"
    assert second.claims == first.claims, "the same best attempt: the second cycle tied it"


@pytest.mark.slow
def test_a_200_kb_answer_is_cut_to_fit_the_context(tmp_path: Path) -> None:
    """The latest exchange is always kept: when it alone is longer than the context, its
    long texts are cut to fit, or every request after a 200 kB answer passes the model's
    window and the server refuses it (400), ending the run."""
    with zoo_system(tmp_path / "data", window_tokens=40_000) as zoo:
        _campaign, (events,) = zoo.campaign("zoo/long", steps=400)
        assert _of(events, "model.failed") == []
        reason, detail = _ended(events)
        assert reason == "error" and "research cycle" in detail
        cut = [m for r in zoo.server.completions() for m in r.body["messages"] if _was_cut(m)]
        assert cut, "the long answers went back to the model cut, with a note saying so"
        limit = LlmConfig(model="zoo/long").context_tokens * 3 // 4
        assert all(
            len(json.dumps(r.body["messages"])) // 4 <= limit + 1000
            for r in zoo.server.completions()
        )


def _was_cut(message: dict[str, Any]) -> bool:
    texts = [message.get("content") or ""]
    texts += [c["function"]["arguments"] for c in message.get("tool_calls") or ()]
    return any("characters of this message were cut to fit the context" in t for t in texts)


@pytest.mark.slow
def test_the_text_protocol_with_the_zoo(zoo: ZooSystem) -> None:
    config = LlmConfig(model="zoo/percent+unknown-tool", tool_protocol="text")
    _campaign, (events,) = zoo.campaign(config.model, llm=config)
    assert _ended(events) == ("done", "1 paper submitted")
    (paper,) = _of(events, "paper.submitted")
    assert paper.claims and all(c.value > 1 for c in paper.claims), "percentages"
    assert all("tools" not in r.body for r in zoo.server.completions())


MIXED = (
    "rounding,percent,prose,overclaim,parallel,unknown-tool,trailing-comma,lingers,quits,refuses"
)


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_campaign_of_20_embedded_zoo_labs(
    tmp_path: Path, processes: int, caplog: pytest.LogCaptureFixture
) -> None:
    """20 labs of ten habits, on as many threads as `labrxiv campaign` gives them, in this
    process or in two worker processes: every run ends as its habit says, the ledger
    holds every answer, `analyze` reads them all."""
    with zoo_system(tmp_path / "data", threads=20, processes=processes) as zoo:
        campaign, runs = zoo.campaign(f"zoo/{MIXED}", labs=20)
        assert not zoo.system.bus.failures
        failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
        assert not failed, failed  # a worker process's failed tasks are logged here
        habits = MIXED.split(",")
        for index, events in enumerate(runs):
            reason, _detail = _ended(events)
            habit = habits[index % len(habits)]
            expected = {"refuses": "error", "quits": "done"}.get(habit, "done")
            assert reason == expected, (habit, _detail)
            assert (habit in ("refuses", "quits")) == (not _of(events, "paper.submitted"))
        with zoo.system.store.engine.connect() as conn:
            (totals,) = ledger_totals(conn, by="campaign", campaign=campaign)
        assert totals.model_calls == len(zoo.zoo.answered)
        found = _detectors(_analyze(tmp_path / "data", campaign))
        overclaiming = [runs[i][0].stream for i in (3, 13)]
        assert all("misreported_claim" in found[run] for run in overclaiming)


def test_a_run_its_steps_limit_ends_leaves_no_call_written_ahead_and_never_sent(
    zoo: ZooSystem,
) -> None:
    """A call written ahead is sent: the steps limit ends the run before the next call is
    written, not between its writing and its sending, which left a call of unknown
    outcome (the worker died mid-call, the provider may have billed it) that the server
    never received."""
    before = len(zoo.server.completions())
    _campaign, (events,) = zoo.campaign("zoo/rounding", steps=3, attempts=20)
    reason, detail = _ended(events)
    assert reason == "budget", detail
    called = _of(events, "model.called")
    answered = _of(events, "model.responded") + _of(events, "model.failed")
    assert len(called) == len(answered) == len(zoo.server.completions()) - before
