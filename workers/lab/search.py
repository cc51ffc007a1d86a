"""The `search` policy: an offline researcher, a baseline agent (not a stand-in for an LLM).

It works in rounds, one paper per round: (archive mode) search the archive and start
from the best published configuration; run experiments by writing `config.json`
within the task's declared search space and calling `evaluate`; write a paper with
the numbers the grader measured; repeat; finish. Local search: each new
configuration changes one or two parameters of the best one known. Deterministic
for a given seed.
"""

import json
import random
from typing import Any

from workers.gym.bundle import Bundle
from workers.gym.card import Subtask
from workers.gym.scoring import better
from workers.lab.paper import write_paper
from workers.lab.policy import Action
from workers.lab.state import RunState
from workers.tools.env import Archive

DEFAULT_ATTEMPTS_PER_PAPER = 4


class SearchPolicy:
    """Local search over the task's search space, reading and writing the archive."""

    name = "search"

    def decide(self, state: RunState, bundle: Bundle, archive: Archive) -> Action:
        """The next action of the round the run is in."""
        target = state.started.papers
        if len(state.papers) >= target:
            best = _best_attempt(state, bundle.card.subtask(bundle.card.primary))
            summary = f"{len(state.papers)} papers; best {bundle.card.primary} = {best}"
            return Action("finish", {"summary": summary})
        if state.pending_tool == "write_file":
            return Action("evaluate")
        done = state.attempts_since_paper()
        if state.started.reads_archive and not state.searched_since_paper:
            query = f"{bundle.card.title} {bundle.card.primary} best configuration"
            return Action("search_archive", {"query": query, "k": 5})
        if len(done) < _per_paper(state):
            config = self._next_config(state, bundle, archive)
            return Action(
                "write_file", {"path": "config.json", "content": json.dumps(config, sort_keys=True)}
            )
        return Action("submit_paper", write_paper(state, bundle, _published(state, archive)))

    def _next_config(self, state: RunState, bundle: Bundle, archive: Archive) -> dict[str, Any]:
        primary = bundle.card.subtask(bundle.card.primary)
        starter = dict(bundle.starter_config())
        candidates = [
            (a.scores[primary.name], a.config) for a in state.attempts if a.scores is not None
        ]
        for paper in _published(state, archive):
            claimed = [c["value"] for c in paper["claims"] if c["subtask"] == primary.name]
            if claimed and paper["method"]:
                candidates.append((claimed[0], {**starter, **paper["method"]}))
        if not candidates:
            return starter
        best_score, best = candidates[0]
        for score, config in candidates[1:]:
            if better(primary, score, best_score):
                best_score, best = score, config
        tried = [a.config for a in state.attempts]
        if best not in tried:
            return best  # reproduce the best published configuration first
        rng = random.Random(f"{state.started.seed}:{state.lab}:{len(state.attempts)}")
        space = bundle.card.search_space
        stuck = _attempts_without_progress(state, primary)
        for _ in range(50):
            # Small moves around the best while they pay; each attempt that does not
            # improve widens the next move (parameters interact: replay size matters
            # only when the method replays), and a fifth of the moves are jumps.
            candidate = dict(best)
            moves = min(len(space), 1 + stuck + rng.choice([0, 0, 1]))
            if rng.random() < 0.2:
                moves = len(space)
            for key in rng.sample(sorted(space), k=moves):
                candidate[key] = rng.choice(space[key])
            if candidate not in tried:
                return candidate
        return {key: rng.choice(values) for key, values in space.items()} | {
            k: v for k, v in starter.items() if k not in space
        }


def _attempts_without_progress(state: RunState, primary: Subtask) -> int:
    """How many of the latest scored attempts did not beat the best before them."""
    best: float | None = None
    stuck = 0
    for attempt in state.attempts:
        if attempt.scores is None:
            stuck += 1
            continue
        value = attempt.scores[primary.name]
        if best is None or better(primary, value, best):
            best, stuck = value, 0
        else:
            stuck += 1
    return stuck


def _per_paper(state: RunState) -> int:
    attempts = state.started.budget.attempts
    if attempts is None:
        return DEFAULT_ATTEMPTS_PER_PAPER
    return max(1, attempts // state.started.papers)


def _best_attempt(state: RunState, primary: Subtask) -> float | None:
    scores = [a.scores[primary.name] for a in state.attempts if a.scores]
    if not scores:
        return None
    return max(scores) if primary.direction == "maximize" else min(scores)


def _published(state: RunState, archive: Archive) -> list[dict[str, Any]]:
    """The papers this run was shown in its current round (their submitted payloads)."""
    papers = []
    for paper_id in dict.fromkeys(state.retrieved):
        paper = archive.get(paper_id)
        if paper is not None:
            papers.append(paper)
    return papers
