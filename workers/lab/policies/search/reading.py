"""What the papers a search lab read say about changing a configuration: ablations and
no-gain results, as evidence for and against moves from the lab's best configuration.

Each paper's graded experiments (those the archive verified) are compared with the
paper's best one. An experiment that differs from it in one parameter is an ablation:
the change from the best scored so much lower, and, read back, the change to the best's
value from the ablated configuration helped by as much. An experiment that differs in
several parameters did not beat the best either (a "no gain over ..." paper reports
these around its best): weaker evidence against each of its changes.

A move (parameter=value) is advised against from a base when, in contexts that agree
with the base in every parameter that matters, one paper's ablation showed it hurt by
`HURT`, or two papers found no gain with it (each a drop of `PROGRESS` or more), and no
paper found it helped there. One unlucky result does not turn every lab away from what
works: a small drop reported once is not enough, and a move measured in another context
(a memory method tried without a memory) says nothing of it where that context differs.
A parameter matters unless `NEGLIGIBLE_AFTER` or more distinct ablations of it
all moved the score by less than `PROGRESS` (a seed, often).
"""

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from workers.gym.card import Subtask
from workers.gym.scoring import PROGRESS, over_baseline
from workers.lab.policies.search.memory import config_key

HURT = 0.10
"""A drop (fraction of the baseline→reference gap) one ablation must show to advise
against its move alone; a smaller one needs a second paper."""
NEGLIGIBLE_AFTER = 2
"""How many ablations of a parameter, all below `PROGRESS`, show that it does not matter."""


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """The parameters whose values differ between two configurations, sorted."""
    return sorted(key for key in a.keys() | b.keys() if a.get(key) != b.get(key))


@dataclass(frozen=True)
class Finding:
    """What a paper measured one set of changes to do."""

    context: dict[str, Any]
    """The configuration changed; its other parameters are the finding's context."""
    moves: dict[str, Any]
    """The changes made: parameter → new value."""
    gain: float
    """What they did to the primary score, in fractions of the baseline→reference gap."""
    paper: str
    """The paper that reports it."""
    ablation: bool
    """One parameter changed from the paper's best (not read back, not several changes)."""


def findings(
    published: list[dict[str, Any]],
    primary: Subtask,
    starter: dict[str, Any],
    canonical: Callable[[dict[str, Any]], dict[str, Any]] = dict,
) -> list[Finding]:
    """Every paper's ablations (both ways) and other experiments below its best; a
    measurement reported again (a lab lists its best in later papers) counted once.
    `canonical`: a configuration as the search space compares it (a parameter that does
    not apply set to the starter's value), so a change of such a parameter, which a
    paper by an llm or agent lab may hold, is no ablation."""
    found: dict[Hashable, Finding] = {}
    for paper in published:
        graded = _graded(paper, primary, starter, canonical)
        if len(graded) < 2:
            continue
        best, top = graded[0]
        for config, value in graded[1:]:
            if value > top:
                best, top = config, value
        for config, value in graded:
            keys = differences(best, config)
            if not keys:
                continue
            ways = [(best, config, value - top, len(keys) == 1)]
            if len(keys) == 1:
                ways.append((config, best, top - value, False))
            for context, changed, gain, ablation in ways:
                moves = {key: changed.get(key) for key in keys}
                key = (config_key(context), config_key(moves), gain)
                found.setdefault(key, Finding(context, moves, gain, paper["paper_id"], ablation))
    return list(found.values())


def _graded(
    paper: dict[str, Any],
    primary: Subtask,
    starter: dict[str, Any],
    canonical: Callable[[dict[str, Any]], dict[str, Any]],
) -> list[tuple[dict[str, Any], float]]:
    """The paper's verified experiments: configuration and primary score over the baseline."""
    graded = []
    for experiment in paper.get("experiments") or []:
        value = (experiment.get("measured") or {}).get(primary.name)
        if experiment.get("verified") and value is not None:
            config = canonical({**starter, **experiment["config"]})
            graded.append((config, over_baseline(primary, value)))
    return graded


@dataclass(frozen=True)
class Advice:
    """What the papers read advise about moves from a base configuration."""

    findings: list[Finding]
    ignored: frozenset[str]
    """Parameters ablations showed not to matter: a context may differ in them."""

    @classmethod
    def of(
        cls,
        published: list[dict[str, Any]],
        primary: Subtask,
        starter: dict[str, Any],
        canonical: Callable[[dict[str, Any]], dict[str, Any]] = dict,
    ) -> "Advice":
        """The advice of the papers `published` (`canonical`: as `findings` takes it)."""
        found = findings(published, primary, starter, canonical)
        spans: dict[str, list[float]] = {}
        for finding in found:
            if finding.ablation:
                (key,) = finding.moves
                spans.setdefault(key, []).append(abs(finding.gain))
        ignored = {
            key
            for key, gains in spans.items()
            if len(gains) >= NEGLIGIBLE_AFTER and max(gains) < PROGRESS
        }
        return cls(found, frozenset(ignored))

    def against(self, base: dict[str, Any], key: str, value: Any) -> bool:
        """Whether setting `key` to `value` in `base` is advised against (module docstring)."""
        if base.get(key) == value:
            return False  # no move
        applicable = [
            f
            for f in self.findings
            if key in f.moves and f.moves[key] == value and self._agrees(f, base)
        ]
        if any(f.gain >= PROGRESS for f in applicable):
            return False
        clear = any(len(f.moves) == 1 and f.gain <= -HURT for f in applicable)
        return clear or len({f.paper for f in applicable if f.gain <= -PROGRESS}) >= 2

    def refuted(self, base: dict[str, Any], candidate: dict[str, Any]) -> bool:
        """Whether `candidate` is `base` with one move (in the parameters that matter) that
        is advised against."""
        changed = [key for key in differences(base, candidate) if key not in self.ignored]
        return len(changed) == 1 and self.against(base, changed[0], candidate.get(changed[0]))

    def _agrees(self, finding: Finding, base: dict[str, Any]) -> bool:
        """Whether the finding's context agrees with `base` in every parameter that matters
        other than those it changed."""
        return all(
            key in finding.moves or key in self.ignored
            for key in differences(finding.context, base)
        )
