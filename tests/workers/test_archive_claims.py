"""Claims in the archive as labs read it: verified against the author's graded attempts, and
what the `search` policy does with a verified and with an unverified number."""

import json
import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from events import Event, EventStore
from events.ids import new_id
from events.payloads import (
    Budget,
    Claim,
    Experiment,
    ExperimentScored,
    ForkPoint,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    RunStarted,
    ToolInvoked,
)
from runstate import Attempt, fold
from workers.gym.bundle import load_bundle
from workers.gym.card import Subtask
from workers.lab.archive_log import LogArchive
from workers.lab.policies.search.memory import Known, RunMemory
from workers.lab.policies.search.policy import (
    SearchPolicy,
    _crossed,
    _graft,
    _novel,
    _partners,
    _published,
    _read,
    start_from,
)
from workers.lab.policies.search.space import Space
from workers.review.evidence import gather
from workers.review.grounded import ClaimCheck
from workers.tools.env import ArchiveScope

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
GYM = Path(__file__).resolve().parents[2] / "gym"
BETTER = {"method": "replay", "replay_per_class": 20, "hidden_units": 64, "epochs": 10}


def space_of(values: dict[str, list], starter: dict | None = None) -> Space:
    """The search policy's view of a card with this search space (no conditions)."""
    card = load_bundle(GYM / "continual-digits").card.model_copy(update={"search_space": values})
    return Space(card, starter or {})


def memory_of(own: list[dict], primary: Subtask, scores: list[float | None]) -> RunMemory:
    """A run's memory of attempts with these configurations and primary scores."""
    memory = RunMemory(space_of({key: [] for config in own for key in config}))
    for number, (config, score) in enumerate(zip(own, scores, strict=True), start=1):
        graded = None if score is None else {primary.name: score}
        memory.add(Attempt(number=number, config=config, scores=graded), primary)
    return memory


def stream_of(run: str, payloads: list[Payload]) -> list[Event]:
    return [
        Event(
            id=new_id(),
            stream=run,
            version=version,
            occurred_at=T0 + timedelta(seconds=version),
            payload=payload,
            actor=run.removeprefix("run-"),
        )
        for version, payload in enumerate(payloads)
    ]


def lab_b_started(reads_archive: bool) -> RunStarted:
    """Lab b's run: 2 papers of 2 attempts each on continual-digits."""
    return RunStarted(
        task="continual-digits",
        lab="b",
        policy="search",
        seed=4,
        reads_archive=reads_archive,
        papers=2,
        budget=Budget(attempts=4),
    )


def configured(config: dict) -> ToolInvoked:
    """The lab writing `config.json` (what its next evaluations run)."""
    content = json.dumps(config)
    return ToolInvoked(
        call_id="c0", tool="write_file", args={"path": "config.json", "content": content}
    )


def author(store: EventStore, claimed: float, attempt: int | None = 1) -> str:
    """Lab a's run: one graded attempt at 0.9 on `BETTER`, then a paper claiming `claimed`."""
    scores = {"final_accuracy": 0.9, "average_forgetting": 0.05}
    paper = PaperSubmitted(
        paper_id="p-a1",
        task="continual-digits",
        title="replay with herding",
        abstract="replay closes the gap",
        body="final_accuracy replay",
        method=BETTER,
        claims=[
            Claim(subtask="final_accuracy", metric="accuracy", value=claimed, attempt=attempt),
            Claim(subtask="average_forgetting", metric="forgetting", value=0.05, attempt=7),
        ],
        experiments=[
            Experiment(attempt=1, config=BETTER, scores={"final_accuracy": claimed}),
            Experiment(attempt=2, config=BETTER, scores=scores),  # attempt 2 never ran
            Experiment(attempt=1, config={"method": "ncm"}, scores=scores),  # not what ran
        ],
    )
    store.append(
        stream_of(
            "run-a",
            [
                RunStarted(task="continual-digits", lab="a", policy="search"),
                configured(BETTER),
                ToolInvoked(call_id="c1", tool="evaluate"),
                ExperimentScored(attempt=1, subtask_scores=scores, score=0.9),
                paper,
            ],
        )
    )
    return paper.paper_id


@pytest.mark.parametrize(
    ("claimed", "attempt", "verified"),
    [(0.9, 1, True), (0.95, 1, False), (0.9, None, False), (0.9, 3, False)],
)
def test_a_claim_is_verified_only_by_the_graded_attempt_it_names(
    sqlite_url: str, claimed: float, attempt: int | None, verified: bool
) -> None:
    store = EventStore.from_url(sqlite_url)
    paper_id = author(store, claimed, attempt)
    archive = LogArchive(store)
    [hit] = archive.search(ArchiveScope("continual-digits"), "replay", 5)
    assert [c["verified"] for c in hit.claims] == [verified, False]  # attempt 7 never ran
    assert [e["verified"] for e in hit.experiments] == [claimed == 0.9, False, False]
    paper = archive.get(paper_id)
    assert paper is not None and paper["claims"] == hit.claims
    assert paper["run"] == "run-a"


@pytest.mark.parametrize(("claimed", "measures_it_again"), [(0.9, False), (0.95, True)])
def test_search_labs_build_on_a_verified_claim_and_measure_an_unverified_one(
    sqlite_url: str, claimed: float, measures_it_again: bool
) -> None:
    """Lab b read lab a's paper before its first experiment: a verified best is a starting
    point to move from; a number no graded attempt backs is measured before it is used."""
    store = EventStore.from_url(sqlite_url)
    paper_id = author(store, claimed)
    started = lab_b_started(reads_archive=True)
    reader = stream_of("run-b", [started, PapersRetrieved(query="q", paper_ids=[paper_id])])
    store.append(reader)
    state = fold(reader)
    # the search that retrieved the paper, before the first attempt
    state = replace(state, searched_at=0)
    bundle = load_bundle(GYM / "continual-digits")
    action = SearchPolicy().decide(state, bundle, LogArchive(store))
    assert action.tool == "write_file"
    config = json.loads(action.args["content"])
    published = {**bundle.starter_config(), **BETTER}
    assert (config == published) is measures_it_again
    if not measures_it_again:
        changed = {k for k in config if config[k] != published[k]}
        assert changed and changed <= set(bundle.card.search_space), "a move from the best"


@pytest.mark.parametrize(("theirs", "follows"), [(0.92, True), (0.86, False), (0.83, False)])
def test_a_lab_follows_another_labs_result_only_when_it_is_clearly_ahead(
    theirs: float, follows: bool
) -> None:
    """Final accuracy 0.82 of our own against theirs: 0.92 is 13% of the gap to the
    reference ahead (past `FOLLOW`, 10%), 0.86 5% (a gain, but not worth leaving the
    lab's own line for), 0.83 about 1% (below `PROGRESS`: noise on a plateau)."""
    primary = load_bundle(GYM / "continual-digits").card.subtask("final_accuracy")
    mine = Known(0.82, {"method": "replay"}, measured=True, own=True)
    other = Known(theirs, BETTER, measured=True)
    memory = memory_of([mine.config, {"method": "ncm"}], primary, [0.82, 0.5])
    start = start_from(memory, [other], primary)
    assert start == (other if follows else mine)


def test_a_jump_covers_pairs_of_values_no_known_experiment_tried() -> None:
    """Rehearsal pays only with a memory: a jump prefers configurations whose pairs of
    values none of the lab's experiments set together.
    Of the five configurations not tried here, one sets all three untried pairs and
    the others one or none (1.2 on average)."""
    space = {"method": ["finetune", "replay"], "memory": [0, 20], "epochs": [1, 10]}
    tried = [
        {"method": "finetune", "memory": 0, "epochs": 1},
        {"method": "finetune", "memory": 20, "epochs": 10},
        {"method": "replay", "memory": 0, "epochs": 10},
    ]
    untried = {("memory", 20, "method", "replay"), ("epochs", 1, "method", "replay")}
    untried.add(("epochs", 1, "memory", 20))
    primary = load_bundle(GYM / "continual-digits").card.subtask("final_accuracy")
    memory = memory_of(tried, primary, [None, None, None])
    covered = []
    for seed in range(20):
        jump = _novel(random.Random(seed), tried[0], space_of(space), memory)
        assert jump not in tried
        keys = sorted(space)
        pairs = {(a, jump[a], b, jump[b]) for i, a in enumerate(keys) for b in keys[i + 1 :]}
        covered.append(len(pairs & untried))
    assert sum(covered) / len(covered) >= 1.8, covered


@pytest.mark.parametrize("reads_archive", [True, False])
def test_an_archive_lab_searches_before_every_experiment_and_an_isolated_one_never(
    sqlite_url: str, reads_archive: bool
) -> None:
    """A paper another lab records mid-round is read before the lab's next experiment,
    not a round later; the paper ends the round without another search."""
    store = EventStore.from_url(sqlite_url)
    bundle = load_bundle(GYM / "continual-digits")
    started = lab_b_started(reads_archive)
    search = ToolInvoked(call_id="s", tool="search_archive", args={"query": "q"})
    evaluate = ToolInvoked(call_id="e", tool="evaluate")
    steps = [started]
    tools = []
    for _ in range(20):
        state = fold(stream_of("run-b", steps))
        action = SearchPolicy().decide(state, bundle, LogArchive(store))
        tools.append(action.tool)
        if action.tool == "search_archive":
            steps.append(search)
        elif action.tool == "write_file":
            steps.append(configured(json.loads(action.args["content"])))
        elif action.tool == "evaluate":
            steps.append(evaluate)
        elif action.tool == "submit_paper":
            paper = action.args | {"paper_id": str(new_id()), "task": "continual-digits"}
            steps.append(PaperSubmitted.model_validate(paper))
        else:
            break
    experiment = ["write_file", "evaluate"]
    per_paper = (["search_archive"] if reads_archive else []) + experiment
    assert tools == (per_paper * 2 + ["submit_paper"]) * 2 + ["finish"]


def test_a_crossing_takes_some_of_a_good_partners_values_and_keeps_some_of_the_best() -> None:
    """Partners are the good measured results that differ from the best in two or more
    parameters; a result at the baseline, less than half as far above it as the best
    (0.45: a third of the gap, the best 92%), or one parameter away is none. A crossing
    takes at least one of the partner's differing values and keeps at least one."""
    primary = load_bundle(GYM / "continual-digits").card.subtask("final_accuracy")
    space = {"method": ["finetune", "replay", "ncm"], "replay_per_class": [0, 20]}
    space |= {"epochs": [1, 10], "hidden_units": [0, 64]}
    best = Known(0.9, {"method": "replay", "replay_per_class": 20, "epochs": 1}, True, own=True)
    partner = Known(0.8, {"method": "ncm", "replay_per_class": 20, "epochs": 10}, True)
    one_away = Known(0.85, best.config | {"epochs": 10}, True)
    at_baseline = Known(0.19, {"method": "finetune", "replay_per_class": 0}, True)
    weak = Known(0.45, {"method": "finetune", "replay_per_class": 20, "epochs": 10}, True)
    claimed = Known(0.95, {"method": "ncm", "hidden_units": 64}, measured=False)
    read = [partner, one_away, at_baseline, weak, claimed]
    memory = memory_of([best.config], primary, [best.score])
    assert _partners(memory, read, best, primary, space) == [partner]
    children = [
        _crossed(random.Random(seed), best.config, partner.config, space_of(space), {})
        for seed in range(20)
    ]
    assert {c["replay_per_class"] for c in children} == {20}
    for child in children:
        assert child not in (best.config, partner.config)
        assert (child["method"], child["epochs"]) in {("ncm", 1), ("replay", 10)}
    assert {c["method"] for c in children} == {"ncm", "replay"}


def test_a_lab_that_follows_another_crosses_its_own_best_onto_that_line() -> None:
    """A lab that follows another lab's result keeps its own best as a graft, to cross
    onto that line; not while it keeps its own line, nor when its best is at the
    baseline (0.19, nothing to give) or one value from the line followed."""
    primary = load_bundle(GYM / "continual-digits").card.subtask("final_accuracy")
    space = space_of({"method": ["replay", "ncm"], "replay_per_class": [0, 20], "epochs": [1, 10]})
    theirs = Known(0.92, BETTER, measured=True)
    mine = {"method": "ncm", "replay_per_class": 0, "epochs": 1}
    memory = memory_of([mine], primary, [0.82])
    assert _graft(memory, theirs, primary, space) == memory.top
    assert memory.top is not None
    assert _graft(memory, memory.top, primary, space) is None
    assert _graft(memory_of([mine], primary, [0.19]), theirs, primary, space) is None
    near = BETTER | {"epochs": 1}
    assert _graft(memory_of([near], primary, [0.82]), theirs, primary, space) is None


def test_a_number_that_is_not_finite_is_refused() -> None:
    with pytest.raises(ValidationError):
        Claim(subtask="a", metric="a", value=float("nan"))
    with pytest.raises(ValidationError):
        Experiment(attempt=1, config={}, scores={"a": float("inf")})


def test_an_attempt_graded_after_the_paper_does_not_verify_it(sqlite_url: str) -> None:
    """Experiment 2 names an attempt the author ran only after publishing."""
    store = EventStore.from_url(sqlite_url)
    author(store, 0.9)
    scores = {"final_accuracy": 0.9, "average_forgetting": 0.05}
    later = [
        ToolInvoked(call_id="c2", tool="evaluate"),
        ExperimentScored(attempt=2, subtask_scores=scores, score=0.9),
    ]
    events = stream_of("run-a", [RunStarted(task="t", lab="a", policy="search")] * 5 + later)
    store.append(events[5:])
    paper = LogArchive(store).get("p-a1")
    assert paper is not None
    assert [e["verified"] for e in paper["experiments"]] == [True, False, False]


def test_a_configuration_the_lab_graded_itself_is_known_by_its_own_score(sqlite_url: str) -> None:
    """Lab b ran lab a's configuration and got 0.3: the paper's 0.9 no longer counts."""
    store = EventStore.from_url(sqlite_url)
    paper_id = author(store, 0.9)
    bundle = load_bundle(GYM / "continual-digits")
    published = {**bundle.starter_config(), **BETTER}
    started = RunStarted(task="continual-digits", lab="b", policy="search", reads_archive=True)
    own = {"final_accuracy": 0.3, "average_forgetting": 0.5}
    reader = stream_of(
        "run-b",
        [
            started,
            configured(published),
            ToolInvoked(call_id="c1", tool="evaluate"),
            ExperimentScored(attempt=1, subtask_scores=own, score=0.3),
            PapersRetrieved(query="q", paper_ids=[paper_id]),
        ],
    )
    store.append(reader)
    primary = bundle.card.subtask("final_accuracy")
    state = fold(reader)
    memory = memory_of([a.config for a in state.attempts], primary, [0.3])
    space = Space(bundle.card, dict(bundle.starter_config()))
    read = _read(_published(state, LogArchive(store)), memory, primary, space)
    known = [*memory.own, *read]
    assert [(k.score, k.own) for k in known if k.config == published] == [(0.3, True)]


def test_one_archive_instance_sees_papers_recorded_after_its_first_read(sqlite_url: str) -> None:
    store = EventStore.from_url(sqlite_url)
    author(store, 0.9)
    archive = LogArchive(store)
    digits = ArchiveScope("continual-digits")
    assert [h.paper_id for h in archive.search(digits, "replay", 5)] == ["p-a1"]
    later = PaperSubmitted(
        paper_id="p-c1", task="continual-digits", title="replay again", abstract="", body=""
    )
    store.append(
        stream_of("run-c", [RunStarted(task="continual-digits", lab="c", policy="search"), later])
    )
    assert {h.paper_id for h in archive.search(digits, "replay", 5)} == {
        "p-a1",
        "p-c1",
    }
    paper = archive.get("p-c1")
    assert paper is not None and paper["claims"] == [] and paper["run"] == "run-c"


def forked_author(store: EventStore) -> list[Event]:
    """Run-a (`author`), then a fork of it after its attempt 1 that grades attempt 2 at
    0.93 and writes a paper claiming attempt 1's 0.9, attempt 2's 0.93 and a 0.99 no
    attempt measured; the fork's events."""
    author(store, 0.9)  # run-a: attempt 1 graded 0.9 at version 3, its paper at 4
    second = {"final_accuracy": 0.93, "average_forgetting": 0.04}
    paper = PaperSubmitted(
        paper_id="p-f1",
        task="continual-digits",
        title="replay, again",
        abstract="a fork goes on",
        body="final_accuracy replay",
        method=BETTER,
        claims=[
            Claim(subtask="final_accuracy", metric="accuracy", value=0.9, attempt=1),
            Claim(subtask="final_accuracy", metric="accuracy", value=0.93, attempt=2),
            Claim(subtask="final_accuracy", metric="accuracy", value=0.99, attempt=2),
        ],
        experiments=[Experiment(attempt=2, config=BETTER, scores={"final_accuracy": 0.93})],
    )
    fork = RunStarted(
        task="continual-digits",
        lab="a",
        policy="search",
        forked_from=ForkPoint(run="run-a", version=3, step=2),
    )
    events = stream_of(
        "run-f",
        [
            fork,
            ToolInvoked(call_id="c2", tool="evaluate"),
            ExperimentScored(attempt=2, subtask_scores=second, score=0.93),
            paper,
        ],
    )
    store.append(events)
    return events


def test_a_forks_claims_are_verified_on_the_trajectory_it_stands_on(sqlite_url: str) -> None:
    """A fork's attempts go on from its parent's (attempt 2 after the parent's 1): its
    paper's claims, of the inherited attempt and of its own, are the grader's scores, and
    were shown `verified NO` when they were checked on the fork's own stream alone
    (found running labrxiv from outside)."""
    store = EventStore.from_url(sqlite_url)
    forked_author(store)
    checked = LogArchive(store).get("p-f1")
    assert checked is not None
    assert [c["verified"] for c in checked["claims"]] == [True, True, False]
    assert [e["verified"] for e in checked["experiments"]] == [True]


def test_the_grounded_reviewer_sees_a_forks_inherited_attempts(sqlite_url: str) -> None:
    """The same paper as the grounded reviewer checks it: attempt 1, graded in the
    parent before the fork point, is evidence, as the archive shows it verified."""
    store = EventStore.from_url(sqlite_url)
    events = forked_author(store)
    evidence = gather(store, events, version=3)
    assert sorted(evidence.graded) == [1, 2]
    assert evidence.graded[1].scores["final_accuracy"] == 0.9
    statuses = [
        ClaimCheck(c, evidence.graded.get(c.attempt or 0)).status for c in evidence.paper.claims
    ]
    assert statuses == ["verified", "verified", "mismatch"]


def test_the_archive_best_counts_a_forks_paper_on_its_inherited_attempts(
    sqlite_url: str,
) -> None:
    """A fork's first paper claims only the attempt it inherited (0.8, graded in the
    parent); its second paper is reviewed against that one as the archive's best. The
    earlier paper was measured on the fork's own stream alone, found no graded attempt
    and did not count (found reading the reviewer's evidence after forks)."""
    store = EventStore.from_url(sqlite_url)

    def events(run: str, campaign: str, payloads: list[Payload]) -> list[Event]:
        return [e.model_copy(update={"correlation_id": campaign}) for e in stream_of(run, payloads)]

    def scored(attempt: int, value: float) -> ExperimentScored:
        return ExperimentScored(
            attempt=attempt,
            subtask_scores={"final_accuracy": value},
            score=value,
            normalized_score=value,
        )

    def claiming(paper_id: str, attempt: int, value: float) -> PaperSubmitted:
        return PaperSubmitted(
            paper_id=paper_id,
            task="continual-digits",
            title=paper_id,
            abstract="a fork goes on",
            body="final_accuracy replay",
            method=BETTER,
            claims=[
                Claim(subtask="final_accuracy", metric="accuracy", value=value, attempt=attempt)
            ],
        )

    started = RunStarted(task="continual-digits", lab="a", policy="search")
    store.append(events("run-p", "cp", [started, scored(1, 0.8)]))
    fork = started.model_copy(update={"forked_from": ForkPoint(run="run-p", version=1, step=1)})
    own = events(
        "run-f",
        "cf",
        [fork, claiming("p-f1", 1, 0.8), scored(2, 0.5), claiming("p-f2", 2, 0.5)],
    )
    store.append(own)
    evidence = gather(store, store.read_stream("run-f"), version=3)
    assert (evidence.prior_best, evidence.prior_paper) == (0.8, "p-f1")


def test_a_verified_percentage_is_known_at_the_fraction_the_grader_measured(
    sqlite_url: str,
) -> None:
    """Lab a reports its 0.9 as 90 (percent): verified, and a reader knows it as 0.9, not
    as a score a hundred times the reference."""
    store = EventStore.from_url(sqlite_url)
    paper_id = author(store, 90.0)
    reader = stream_of(
        "run-b",
        [lab_b_started(reads_archive=True), PapersRetrieved(query="q", paper_ids=[paper_id])],
    )
    store.append(reader)
    bundle = load_bundle(GYM / "continual-digits")
    primary = bundle.card.subtask("final_accuracy")
    published = _published(fold(reader), LogArchive(store))
    [experiment] = [e for e in published[0]["experiments"] if e["verified"]]
    assert experiment["scores"]["final_accuracy"] == 90.0
    assert experiment["measured"]["final_accuracy"] == 0.9
    space = Space(bundle.card, dict(bundle.starter_config()))
    read = _read(published, memory_of([], primary, []), primary, space)
    assert [k.score for k in read if k.measured] == [0.9]
