"""What a search lab reads in papers' ablations and no-gain results, and how it acts on
them: a move shown to hurt (clearly, or by two papers) from a context like the lab's
best is not tried again there."""

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from runstate import Attempt
from runstate.verification import checked_claims, checked_experiments
from tests.conditional_bundle import STARTER, conditional_bundle
from workers.gym.bundle import load_bundle
from workers.gym.card import Subtask
from workers.lab.policies.search.memory import RunMemory
from workers.lab.policies.search.policy import _next_config, _read, start_from
from workers.lab.policies.search.reading import Advice, findings
from workers.lab.policies.search.space import Space

PRIMARY = Subtask(name="acc", metric="accuracy", direction="maximize", baseline=0.0, sota=1.0)
GYM = Path(__file__).resolve().parents[2] / "gym"
SPACE = {"a": [0, 1, 2], "b": [0, 1, 2], "c": [0, 1, 2], "seed": [0, 1, 2]}
BASE = {"a": 1, "b": 1, "c": 1, "seed": 0}


def _paper(
    paper_id: str, *experiments: tuple[dict[str, Any], float], verified: bool = True
) -> dict[str, Any]:
    return {
        "paper_id": paper_id,
        "title": f"{paper_id}: no gain over acc",
        "claims": [],
        "method": {},
        "experiments": [
            {"config": c, "verified": verified, "measured": {"acc": v} if verified else None}
            for c, v in experiments
        ],
    }


def _with(**changes: Any) -> dict[str, Any]:
    return BASE | changes


def _advice(*papers: dict[str, Any]) -> Advice:
    return Advice.of(list(papers), PRIMARY, {})


def test_an_ablation_is_read_both_ways_and_a_no_gain_result_once() -> None:
    paper = _paper("p1", (BASE, 0.8), (_with(a=2), 0.6), (_with(b=0, c=0), 0.7))
    read = {
        (tuple(f.moves.items()), round(f.gain, 6), f.ablation)
        for f in findings([paper], PRIMARY, {})
    }
    assert read == {
        ((("a", 2),), -0.2, True),  # the ablation: from the best, a=2 hurt
        ((("a", 1),), 0.2, False),  # read back: from a=2, a=1 helped
        ((("b", 0), ("c", 0)), -0.1, False),  # two changes around the best, no gain
    }


def test_unverified_experiments_are_not_evidence() -> None:
    assert (
        findings([_paper("p1", (BASE, 0.8), (_with(a=2), 0.2), verified=False)], PRIMARY, {}) == []
    )


def test_a_clear_drop_in_one_ablation_advises_against_the_move() -> None:
    advice = _advice(_paper("p1", (BASE, 0.8), (_with(a=2), 0.6)))
    assert advice.against(BASE, "a", 2)
    assert not advice.against(BASE, "a", 0)  # never measured
    assert not advice.against(BASE, "a", 1)  # no move


def test_one_small_drop_is_not_enough_but_two_papers_are() -> None:
    small = 0.05  # above PROGRESS, below HURT
    one = _paper("p1", (BASE, 0.8), (_with(a=2), 0.8 - small))
    assert not _advice(one).against(BASE, "a", 2)
    again = _paper("p2", (BASE, 0.8), (_with(a=2, b=2), 0.7))
    assert _advice(one, again).against(BASE, "a", 2)
    elsewhere = _paper("p2", (_with(c=2), 0.7), (_with(a=2, c=2), 0.7 - small))
    assert not _advice(one, elsewhere).against(BASE, "a", 2)  # p2's context differs in c


def test_no_gain_papers_count_against_each_of_their_moves_only_when_two_agree() -> None:
    one = _paper("p1", (BASE, 0.8), (_with(a=2, b=2), 0.7))
    assert not _advice(one).against(BASE, "a", 2)
    other = _paper("p2", (BASE, 0.8), (_with(a=2, c=0), 0.75))
    assert _advice(one, other).against(BASE, "a", 2)
    assert not _advice(one, other).against(BASE, "b", 2)


def test_a_context_that_differs_in_a_parameter_that_matters_says_nothing() -> None:
    advice = _advice(_paper("p1", (BASE, 0.8), (_with(a=2), 0.3)))
    assert not advice.against(_with(b=0), "a", 2)  # a memory method tried without a memory


def test_a_context_may_differ_in_a_parameter_ablations_showed_not_to_matter() -> None:
    seeds = _paper(
        "p1", (BASE, 0.8), (_with(a=2), 0.3), (_with(seed=1), 0.79), (_with(seed=2), 0.8)
    )
    assert _advice(seeds).against(_with(seed=2), "a", 2)
    once = _paper("p1", (BASE, 0.8), (_with(a=2), 0.3), (_with(seed=1), 0.79))
    assert not _advice(once).against(_with(seed=2), "a", 2)  # one ablation shows little


def test_a_paper_that_found_the_move_helped_there_outweighs_the_drop() -> None:
    hurt = _paper("p1", (BASE, 0.8), (_with(a=2), 0.6))
    helped = _paper("p2", (BASE, 0.5), (_with(a=2), 0.7))  # the same pair, another lab's grader run
    assert not _advice(hurt, helped).against(BASE, "a", 2)


def test_refuted_only_a_single_move_advised_against() -> None:
    advice = _advice(_paper("p1", (BASE, 0.8), (_with(a=2), 0.6)))
    assert advice.refuted(BASE, _with(a=2))
    assert not advice.refuted(BASE, _with(a=2, b=2))  # an interaction is still worth a try


OTHER = _paper(
    "p2",
    ({"a": 0, "b": 0, "c": 0, "seed": 0}, 0.85),
    ({"a": 0, "b": 0, "c": 2, "seed": 0}, 0.5),
)
"""Another lab's paper: from its own line, c=0 helped by 0.35."""


def _space() -> Space:
    """The policy's view of a card with `SPACE` (no conditions) and `BASE` as starter."""
    card = load_bundle(GYM / "continual-digits").card.model_copy(update={"search_space": SPACE})
    return Space(card, dict(BASE))


def _proposals(published: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a lab whose best is `BASE` proposes next, over many seeds."""
    attempts = [Attempt(1, dict(BASE), {"acc": 0.8})]
    proposed = []
    for seed in range(200):
        state = SimpleNamespace(
            started=SimpleNamespace(seed=seed),
            lab="lab-0",
            attempts=attempts,
            attempts_since_paper=lambda: attempts,
        )
        space = _space()
        memory = RunMemory(space)
        memory.add(attempts[0], PRIMARY)
        proposed.append(_next_config(state, memory, PRIMARY, space, published))  # type: ignore[arg-type]
    return proposed


def test_the_policy_does_not_try_a_move_a_paper_showed_to_hurt_from_a_best_like_its_own() -> None:
    # The paper's best differs from the lab's only in the seed, which its ablations
    # showed not to matter; from it, a=2 fell by 0.4.
    hurt = _paper(
        "p1",
        (_with(seed=1), 0.8),
        (_with(seed=1, a=2), 0.4),
        (_with(seed=2), 0.8),
        (_with(seed=0), 0.79),
    )
    assert sum(p == _with(a=2) for p in _proposals([])) > 0
    assert sum(p == _with(a=2) for p in _proposals([hurt])) == 0


def test_the_advice_is_the_same_for_the_same_papers() -> None:
    assert _proposals([OTHER]) == _proposals([OTHER])


def test_a_change_of_a_parameter_that_does_not_apply_is_no_ablation(tmp_path: Path) -> None:
    """A paper (of an llm or agent lab) whose experiments differ only in a parameter that
    does not apply where they ran (`alpha` of a kNN) reports no ablation of it, read
    through the space's canonical form; the same experiments read raw would."""
    card = load_bundle(conditional_bundle(tmp_path)).card
    space = Space(card, dict(STARTER))
    knn = {k: v for k, v in STARTER.items() if k != "note"}
    paper = _paper("p1", (knn, 0.8), (knn | {"alpha": 10.0}, 0.6))
    assert [f.moves for f in findings([paper], PRIMARY, STARTER)] == [
        {"alpha": 10.0},
        {"alpha": 1.0},
    ]
    assert findings([paper], PRIMARY, STARTER, space.canonical) == []


def test_a_verified_claim_is_known_by_what_the_grader_measured() -> None:
    """A paper's claim the archive verified is read as the measured value: a claim
    written as a percentage (96.9 for 0.9686) is not a score of 96.9 that outranks the
    lab's own 0.975. Its configuration is still measured before it is relied on: the
    archive checks the number against the attempt, not that the attempt ran the paper's
    method."""
    space = _space()
    memory = RunMemory(space)
    memory.add(Attempt(1, dict(BASE), {"acc": 0.975}), PRIMARY)
    claim = {"subtask": "acc", "metric": "accuracy", "value": 96.9, "attempt": 1}
    method = _with(a=0, b=0)
    verified = {"paper_id": "p1", "method": method, "experiments": []} | {
        "claims": [claim | {"verified": True, "measured": 0.968616}]
    }
    read = _read([verified], memory, PRIMARY, space)
    assert [(k.score, k.measured) for k in read] == [(0.968616, False)]
    assert start_from(memory, read, PRIMARY).own
    unverified = verified | {"claims": [claim | {"verified": False, "measured": None}]}
    assert [(k.score, k.measured) for k in _read([unverified], memory, PRIMARY, space)] == [
        (96.9, False)  # a number no grade backs: measured before it is relied on
    ]


def test_a_method_no_attempt_ran_is_measured_before_it_is_relied_on() -> None:
    """A verified claim vouches for its attempt's score, not for the paper's method: a
    paper whose method is not what the claimed attempt ran has that method measured
    first, not taken as graded."""
    ran, said = _with(a=2, b=2), _with(a=0, b=0)
    graded = {3: Attempt(3, ran, {"acc": 0.9})}
    claims = checked_claims(
        [{"subtask": "acc", "metric": "accuracy", "value": 0.9, "attempt": 3}], graded
    )
    paper = {
        "paper_id": "p1",
        "method": said,
        "claims": claims,
        "experiments": checked_experiments([], graded),
    }
    assert claims[0]["verified"], "the archive's mark: the number is the grader's"
    space = _space()
    memory = RunMemory(space)
    own = [Attempt(1, dict(BASE), {"acc": 0.5})]
    memory.add(own[0], PRIMARY)
    state = SimpleNamespace(
        started=SimpleNamespace(seed=0), lab="lab-0", attempts=own, attempts_since_paper=lambda: own
    )
    proposed = _next_config(state, memory, PRIMARY, space, [paper])  # type: ignore[arg-type]
    assert proposed == space.canonical(said), "the unrun method is measured first"
