"""The `search` policy: an offline researcher, a baseline agent (not a stand-in for an LLM).

It works in rounds, one paper per round: (archive mode) search the archive before
every experiment and start from the best published configuration (measured first
unless a verified experiment of its paper ran it); run
experiments by writing `config.json` within the task's declared search space and
calling `evaluate`; write a paper with the numbers the grader measured; repeat;
finish. Local search: each new
configuration changes one or more parameters of the best one known, or jumps to the
configuration covering the most untried pairs of values, or crosses the best with
another good result (uniform crossover: some of its values are taken: in archive mode
mostly another lab's, so what different papers found is combined on one line).
Deterministic for a given seed.

What the archive is used for (an island model: labs keep their own line and take
another's only when it is clearly better): another lab's verified result is a
starting point when it is `FOLLOW` ahead of the lab's own, and a lab that takes it
crosses its own best onto it in two of five moves (`_graft`: a migrant meets the
island's ingredients, the lab's line is not dropped; measured on noisy-digits at the
demo budget, labs that only moved to another's line often lost the one that would have
gone higher alone), experiments a known lab ran are not repeated, and papers'
ablations and no-gain results are read as evidence about single moves (`reading.py`):
a move shown to hurt from a configuration that agrees with the best in the parameters
that matter is rarely drawn, only on clear or repeated evidence. A move shown to help
elsewhere is not transplanted onto the best on its own (measured: with 6 attempts a
lab, such transplants took the attempts that found the good region of ts-saliency, and
on 2 of 8 seeds every archive lab ended near 0.53 where isolated labs reached
0.93-0.99). Which values local moves prefer otherwise, and which pairs of values jumps
cover, come from the lab's own experiments only: labs that all steer by means over the
same shared results search alike, and one unlucky negative result (a memory method
tried without a memory) then steers every lab away from what works.
"""

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from events.payloads import ReviewAwaited, ReviewReceived, RunFinished
from runstate import RunState
from runstate.best import best_of
from runstate.words import counted
from workers.gym.bundle import Bundle
from workers.gym.card import Subtask
from workers.gym.scoring import PROGRESS, better, over_baseline
from workers.lab.budget import out_of_attempts
from workers.lab.policies.base import StepInput, StepOutcome
from workers.lab.policies.search.memory import Known, Memories, RunMemory, config_key, pairs
from workers.lab.policies.search.paper import revision, write_paper
from workers.lab.policies.search.reading import Advice
from workers.lab.policies.search.space import Space
from workers.lab.reviews import WAIT, Revise, review_round
from workers.tools.env import Archive
from workers.tools.invoke import invoke

DEFAULT_ATTEMPTS_PER_PAPER = 4


@dataclass(frozen=True)
class Action:
    """One tool call the policy asks for."""

    tool: str
    args: dict[str, Any] = field(default_factory=dict)


class SearchPolicy:
    """Local search over the task's search space, reading and writing the archive."""

    name = "search"
    card_needs = ("search_space",)
    model_settings: frozenset[str] = frozenset()

    def __init__(self) -> None:
        self._memories = Memories()
        """This worker's summaries of runs' attempts (`memory.py`)."""

    def step(self, step: StepInput) -> StepOutcome:
        """Decide the next tool call and run it (one tool call a step)."""
        state = step.state
        if len(state.papers) >= state.started.papers:  # its papers written: any reviews?
            after = review_round(state, step.archive)
            if after == WAIT:
                return [], {}  # idle until the paper's decision wakes the run
            if isinstance(after, ReviewAwaited | ReviewReceived):
                return [after], {}
        action = self.decide(state, step.bundle, step.archive)
        ended = out_of_attempts(state) if action.tool == "evaluate" else None
        if ended is not None:
            return ended, {}
        call_id = f"{state.stream}:{step.version + 1}"
        outcome = invoke(step.env, action.tool, action.args, call_id=call_id)
        payloads = list(outcome.payloads)
        if outcome.finish:
            payloads.append(RunFinished(reason="done", detail=outcome.output[:500]))
        return payloads, outcome.blobs

    def decide(self, state: RunState, bundle: Bundle, archive: Archive) -> Action:
        """The next action of the round the run is in."""
        target = state.started.papers
        revising = review_round(state, archive) if len(state.papers) >= target else None
        if len(state.papers) >= target and not isinstance(revising, Revise):
            return _finish(state, bundle)
        if state.pending_tool == "write_file":
            return Action("evaluate")
        done = state.attempts_since_paper()
        if len(done) < _per_paper(state):
            if state.started.reads_archive and state.searched_at != len(state.attempts):
                # Before every experiment: a paper recorded since the last one is read
                # at once, not a round later.
                query = f"{bundle.card.title} {bundle.card.primary} best configuration"
                return Action("search_archive", {"query": query, "k": 20})
            config = self._next_config(state, bundle, archive)
            if config is not None:
                content = json.dumps(config, sort_keys=True)
                return Action("write_file", {"path": "config.json", "content": content})
            if not done:  # the space is used up: nothing new to write a paper on
                return _finish(state, bundle, "every configuration of the search space tried")
        paper = write_paper(
            state, bundle, _published(state, archive), revising=isinstance(revising, Revise)
        )
        if isinstance(revising, Revise):  # the new version answers the reviews with work
            paper = revision(paper, revising, state, bundle)
        return Action("submit_paper", paper)

    def _next_config(
        self, state: RunState, bundle: Bundle, archive: Archive
    ) -> dict[str, Any] | None:
        primary = bundle.card.subtask(bundle.card.primary)
        space = Space(bundle.card, dict(bundle.starter_config()))
        with self._memories.of(state, primary, space) as memory:
            return _next_config(state, memory, primary, space, _published(state, archive))


def _next_config(
    state: RunState,
    memory: RunMemory,
    primary: Subtask,
    space: Space,
    published: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """The next configuration to try; a parameter that does not apply in it is never
    varied (it keeps the starter's value, `space.py`), and one that applies alike to a
    configuration tried before (by the run, or by a verified experiment it read) is not
    taken. None when every configuration of the space has been tried."""
    starter = space.starter
    read = _read(published, memory, primary, space)
    if not memory.own and not read:
        return space.canonical(starter)
    best = start_from(memory, read, primary)
    measured_read = {config_key(k.config) for k in read if k.measured}

    def tried(config: dict[str, Any]) -> bool:
        key = space.key(config)
        return key in memory.tried or key in measured_read

    if not tried(best.config):
        return best.config  # a claim no verified experiment backs is measured first
    rng = random.Random(f"{state.started.seed}:{state.lab}:{len(state.attempts)}")
    stuck = len(state.attempts_since_paper())
    if config_key(best.config) in memory.scored:
        stuck = memory.stuck
    advice = Advice.of(published, primary, starter, space.canonical)
    weights = _value_weights(memory, space.values)
    for key, values in space.values.items():  # a move papers advise against is rarely drawn
        for i, value in enumerate(values):
            if advice.against(best.config, key, value):
                weights[key][i] *= ADVISED_AGAINST
    partners = _partners(memory, read, best, primary, space.values)
    graft = _graft(memory, best, primary, space)
    applies = space.applicable(best.config)
    for _ in range(50):
        # Moves around the best: small while they pay, wider after every attempt
        # that did not improve (a best adopted from a paper is a new start, judged on
        # this round's attempts); a fifth of the moves are jumps, a fifth (when
        # another good result is known) cross the best with it, or two fifths, when
        # the best is another lab's, cross it with the lab's own best. New values are
        # drawn by what the run's own results say of them and what papers' ablations
        # say of the move from the best.
        candidate = dict(best.config)
        moves = min(len(applies), 1 + stuck + rng.choice([0, 0, 1]))
        draw = rng.random()
        if draw < 0.2:
            candidate = _novel(rng, candidate, space, memory)
        elif draw < 0.6 and graft is not None:
            candidate = _crossed(rng, candidate, graft.config, space, weights)
        elif draw < 0.4 and partners:
            candidate = _crossed(rng, candidate, rng.choice(partners).config, space, weights)
        else:
            moved = rng.sample(applies, k=moves)
            for key in moved:
                candidate[key] = rng.choices(space.values[key], weights[key])[0]
            candidate = space.settle(rng, candidate, best.config, moved, weights)
        if not tried(candidate) and not advice.refuted(best.config, candidate):
            return candidate
    drawn = space.canonical(
        {key: rng.choice(values) for key, values in space.values.items()}
        | {k: v for k, v in starter.items() if k not in space.values}
    )
    if tried(drawn) and space.enumerable:
        return space.first_untried(tried)  # None: the space is used up
    return drawn


def _finish(state: RunState, bundle: Bundle, why: str = "") -> Action:
    """Finish the run, saying its papers and best score (and `why`, when it ends before
    its papers are written)."""
    best = _best_attempt(state, bundle.card.subtask(bundle.card.primary))
    shown = "none" if best is None else f"{best:.4g}"  # not 0.8611111111111112
    summary = f"{counted(len(state.papers), 'paper')}; best {bundle.card.primary} = {shown}"
    return Action("finish", {"summary": f"{why}: {summary}" if why else summary})


def _novel(
    rng: random.Random, base: dict[str, Any], space: Space, memory: RunMemory
) -> dict[str, Any]:
    """A jump: of a few random configurations, the one that sets the most pairs of
    values (two parameters that apply, set together) that the run's attempts did not.
    Effects that need two settings together (rehearsal and a memory) are found by
    covering pairs."""
    keys = space.names
    seen = memory.pair_counts
    best, novelty = base, -1.0
    for _ in range(JUMP_CANDIDATES):
        candidate = space.canonical(
            dict(base) | {key: rng.choice(space.values[key]) for key in keys}
        )
        applies = space.applicable(candidate)
        score = sum(1 / (1 + seen[pair]) for pair in pairs(candidate, applies))
        if score > novelty and config_key(candidate) not in memory.tried:
            best, novelty = candidate, score
    return best


def _partners(
    memory: RunMemory,
    read: list[Known],
    best: Known,
    primary: Subtask,
    space: dict[str, list[Any]],
) -> list[Known]:
    """Who the best is crossed with: the `PARTNERS` best measured results that differ
    from it in at least two parameters of the space and are good in their own right:
    `PROGRESS` above the baseline and at least half as far above it as the best (a
    result near the baseline has no ingredient worth taking; crossing a cliff found
    with one lab's near-baseline result only loses the cliff). In archive mode these
    are mostly other labs' results: one lab's ingredient meets another's.

    Ties keep the order results are known in: the run's own attempts first, in order,
    then the papers'."""

    def good(k: Known) -> bool:
        differs = sum(k.config.get(key) != best.config.get(key) for key in space) >= 2
        return k.measured and differs and over_baseline(primary, k.score) >= floor

    floor = max(PROGRESS, over_baseline(primary, best.score) / 2)
    found: list[tuple[float, int, Known]] = []
    for negative, index in memory.ranked:  # the run's own results, best first
        if -negative < floor or len(found) == PARTNERS:
            break
        if good(memory.own[index]):
            found.append((negative, index, memory.own[index]))
    mine = len(memory.own)
    found += [
        (-over_baseline(primary, k.score), mine + i, k) for i, k in enumerate(read) if good(k)
    ]
    return [k for _, _, k in sorted(found, key=lambda item: item[:2])][:PARTNERS]


def _graft(memory: RunMemory, best: Known, primary: Subtask, space: Space) -> Known | None:
    """When the lab follows another's line, its own best, whose values it crosses onto
    that line in two of five moves (a migrant meets the island's own ingredients: what
    two papers found combined, not the lab's line abandoned); None when the lab keeps
    its own line or its best has nothing to give (at the baseline, or one value apart)."""
    mine = memory.top
    if best.own or mine is None or over_baseline(primary, mine.score) < PROGRESS:
        return None
    differing = [key for key in space.names if mine.config.get(key) != best.config.get(key)]
    return mine if len(differing) >= 2 else None


PARTNERS = 3
"""How many of the best other results a crossing may draw its partner from."""


def _crossed(
    rng: random.Random,
    base: dict[str, Any],
    partner: dict[str, Any],
    space: Space,
    weights: dict[str, list[float]],
) -> dict[str, Any]:
    """The best with each parameter where the partner differs taken from the partner
    with even odds (at least one taken, at least one kept): uniform crossover. Both are
    canonical, so they differ only where a parameter applies in one of them; one that
    the taken values make applicable comes from the partner where it applies there."""
    differing = [key for key in space.names if partner.get(key) != base.get(key)]
    taken = [key for key in differing if rng.random() < 0.5]
    if not taken:
        taken = [rng.choice(differing)]
    if len(taken) == len(differing):
        taken.remove(rng.choice(taken))
    crossed = dict(base) | {key: partner[key] for key in taken}
    if not space.card.search_space_conditions:
        return crossed
    theirs = space.applicable(partner)
    while follow := [
        key
        for key in space.applicable(crossed)
        if key in theirs and key not in taken and crossed.get(key) != partner.get(key)
    ]:
        crossed |= {key: partner[key] for key in follow}
        taken += follow
    return space.settle(rng, crossed, base, taken, weights)


ADVISED_AGAINST = 0.05
"""The weight of a value, relative to what the run's results give it, when papers advise
against that move from the best: down-weighted, not forbidden."""


JUMP_CANDIDATES = 8
"""How many random configurations a jump chooses the least tried one from."""


def start_from(memory: RunMemory, read: list[Known], primary: Subtask) -> Known:
    """The best known result, but the run's own best unless another lab's is ahead of it
    by at least `FOLLOW`: labs that all follow a marginally better result pile onto
    one plateau and stop exploring apart."""
    mine = memory.top
    best = _top([mine, *read] if mine is not None else read, primary)
    if mine is None or best.own:
        return best
    ahead = over_baseline(primary, best.score) - over_baseline(primary, mine.score)
    return best if ahead >= FOLLOW else mine


def _top(results: list["Known"], primary: Subtask) -> "Known":
    """The first of the best-scoring results."""
    best = results[0]
    for result in results[1:]:
        if better(primary, result.score, best.score):
            best = result
    return best


FOLLOW = 0.10
"""How far (fraction of the baseline→reference gap) another lab's result must be ahead
of the lab's own best to be followed. A small lead is often a plateau a little above
the baseline that a lab would get stuck on; a lab keeps its own line for those."""


def _read(
    published: list[dict[str, Any]], memory: RunMemory, primary: Subtask, space: Space
) -> list[Known]:
    """What the papers the run read report, in canonical form: their verified
    experiments (measured: the archive checked the attempt ran their configuration), and
    each paper's claimed best, to be measured before it is relied on (the archive checks
    a claim's number against its attempt, not that the attempt ran the paper's method),
    scored by what the grader measured when the archive verified the number (its
    `measured` mark: a claim written as a percentage is read as the fraction measured,
    `runstate.verification`), else by the number claimed. A configuration the run graded
    itself is known by its own score; a claim of a configuration a verified experiment
    gave is known once, as the experiment."""
    known = []
    for paper in published:
        for experiment in paper.get("experiments") or []:
            config = space.canonical({**space.starter, **experiment["config"]})
            value = (experiment.get("measured") or {}).get(primary.name)
            if experiment.get("verified") and value is not None:
                if config_key(config) not in memory.tried:
                    known.append(Known(value, config, True))
        claimed = [c for c in paper["claims"] if c["subtask"] == primary.name]
        config = space.canonical({**space.starter, **paper["method"]})
        if not claimed or not paper["method"] or config_key(config) in memory.tried:
            continue
        if any(k.config == config and k.measured for k in known):
            continue
        graded = claimed[0].get("measured") if claimed[0].get("verified") else None
        known.append(Known(claimed[0]["value"] if graded is None else graded, config, False))
    return known


def _value_weights(memory: RunMemory, space: dict[str, list[Any]]) -> dict[str, list[float]]:
    """Per parameter, a weight per value: high where the run's measured results with that
    value scored well, with a bonus for values measured rarely (never: the mean of all)."""
    measured = len(memory.own)
    overall = memory.total / measured if measured else 0.0
    weights: dict[str, list[float]] = {}
    for key, values in space.items():
        merits = []
        for value in values:
            total, count = memory.value_sums.get((key, value), (0.0, 0))
            mean = total / count if count else overall
            merits.append(mean + EXPLORE / math.sqrt(count + 1))
        top = max(merits)
        weights[key] = [math.exp((m - top) / TEMPERATURE) for m in merits]
    return weights


EXPLORE = 0.2
"""Bonus of a value never measured, in fractions of the baseline→reference gap."""
TEMPERATURE = 0.1
"""How sharply values with better results are preferred (same unit)."""


def _per_paper(state: RunState) -> int:
    attempts = state.started.budget.attempts
    if attempts is None:
        return DEFAULT_ATTEMPTS_PER_PAPER
    # Review rounds take their share: each revision is a round of experiments too.
    return max(1, attempts // (state.started.papers + state.started.review_rounds))


def _best_attempt(state: RunState, primary: Subtask) -> float | None:
    return best_of(primary.direction, (a.scores[primary.name] for a in state.attempts if a.scores))


def _published(state: RunState, archive: Archive) -> list[dict[str, Any]]:
    """The papers this run was shown in its current round (their submitted payloads)."""
    papers = []
    for paper_id in dict.fromkeys(state.retrieved):
        paper = archive.get(paper_id)
        if paper is not None:
            papers.append(paper)
    return papers
