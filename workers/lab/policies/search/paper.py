"""Writing a paper from what a run measured: every number comes from a graded attempt.

A paper names only the settings that apply (`TaskCard.settings`): its title, `method`,
results table and best configuration leave out a parameter that had no effect in the
configuration; its experiments report each attempt's whole configuration, as the run
wrote it, which is what the archive checks them against."""

from typing import Any

from runstate import Attempt, RunState
from workers.gym.bundle import Bundle
from workers.gym.card import Subtask, TaskCard
from workers.gym.scoring import PROGRESS, better, over_baseline
from workers.lab.policies.search.reading import differences
from workers.lab.reviews import Revise


def write_paper(
    state: RunState, bundle: Bundle, published: list[dict[str, Any]], revising: bool = False
) -> dict[str, Any]:
    """The `submit_paper` arguments for the round the run just finished.

    A round that did not beat the run's best reported before writes what it found (its
    own best, claimed as measured, and that the earlier best stands), not the earlier best
    again: restated, it was a second paper with the same title and claims, listed twice in
    `labrxiv papers top`. A revision (`revising`) presents the run's best, as the version
    of the paper under review that answers it."""
    card = bundle.card
    primary = card.subtask(card.primary)
    scored = [a for a in state.attempts if a.scores is not None]
    best = _best(scored, primary)
    round_attempts = list(state.attempts_since_paper())
    earlier = _best([a for a in scored if a not in round_attempts], primary)
    before = None if earlier is None else earlier.scores[primary.name]  # type: ignore[index]
    cited = [
        p["paper_id"]
        for p in published
        if best and (_same_method(p["method"], best.config, card) or _led(p, primary, before))
    ]
    number = len(state.papers) + 1
    if best is not None and best not in round_attempts and state.papers and not revising:
        return _no_gain(state, bundle, best, round_attempts, scored, cited)
    if best is None:
        title = f"{card.title}: no configuration scored ({state.lab}, report {number})"
        abstract = "Every attempt of this round failed to produce scores."
        claims: list[dict[str, Any]] = []
        method: dict[str, Any] = {}
    else:
        scores = best.scores
        assert scores is not None  # the best of the scored attempts
        value = scores[primary.name]
        changed = _changes(card.settings(best.config), bundle.starter_config())
        title = f"{card.title}: {primary.name} {value:.4f} with {changed or 'the baseline setup'}"
        abstract = (
            f"We searched the task's configuration space with {len(state.attempts)} graded "
            f"attempts. Our best configuration reaches {primary.name} = {value:.4f} "
            f"(baseline {primary.baseline}, SOTA {primary.sota})."
            + (f" It starts from {', '.join(cited)}." if cited else "")
        )
        claims = _claims(best, card.subtasks)
        method = card.settings(best.config)
    body = _body(card, round_attempts, scored, best, cited)
    return {
        "title": title[:300],
        "abstract": abstract,
        "body": body,
        "claims": claims,
        "method": method,
        "experiments": _experiments(best, round_attempts, scored),
        "cited": cited,
    }


def _no_gain(
    state: RunState,
    bundle: Bundle,
    best: Attempt,
    round_attempts: list[Attempt],
    scored: list[Attempt],
    cited: list[str],
) -> dict[str, Any]:
    """A round's paper when the round did not beat `best` (the run's, reported before):
    its claims are the round's own best attempt's scores, graded (none if nothing of the
    round scored); the earlier best is named in the title and kept among the experiments."""
    card = bundle.card
    primary = card.subtask(card.primary)
    stands = best.scores[primary.name]  # type: ignore[index]
    found = _best([a for a in round_attempts if a.scores is not None], primary)
    tried = len(round_attempts)
    title = (
        f"{card.title}: no gain over {primary.name} {stands:.4f} in {tried} more attempt"
        f"{'' if tried == 1 else 's'} ({state.lab}, report {len(state.papers) + 1})"
    )
    if found is None:
        outcome = "None of them produced scores."
        claims: list[dict[str, Any]] = []
        method: dict[str, Any] = {}
    else:
        scores = found.scores
        assert scores is not None
        outcome = f"The round's best reached {primary.name} = {scores[primary.name]:.4f}."
        claims = _claims(found, card.subtasks)
        method = card.settings(found.config)
    abstract = (
        f"We tried {tried} more configuration{'' if tried == 1 else 's'} around our best "
        f"(attempt {best.number}, {primary.name} = {stands:.4f}); none beat it. {outcome}"
        + (f" It starts from {', '.join(cited)}." if cited else "")
    )
    return {
        "title": title[:300],
        "abstract": abstract,
        "body": _body(card, round_attempts, scored, best, cited),
        "claims": claims,
        "method": method,
        "experiments": _experiments(best, round_attempts, scored),
        "cited": cited,
    }


def _experiments(
    best: Attempt | None, round_attempts: list[Attempt], scored: list[Attempt]
) -> list[dict[str, Any]]:
    """A paper's structured experiments: the best (if from an earlier round), its
    ablations from earlier rounds, and the round's scored attempts."""
    earlier = [] if best is None or best in round_attempts else [best]
    earlier += [a for a in ablations(best, scored) if a not in round_attempts]
    return [
        {"attempt": a.number, "config": a.config, "scores": a.scores}
        for a in earlier + round_attempts
        if a.scores is not None
    ]


def ablations(best: Attempt | None, scored: list[Attempt]) -> list[Attempt]:
    """The graded attempts that differ from the best in one parameter, in attempt order:
    what each single change to the best configuration did."""
    if best is None:
        return []
    return [
        a for a in scored if a.scores is not None and len(differences(best.config, a.config)) == 1
    ]


def revision(
    paper: dict[str, Any], revising: Revise, state: RunState, bundle: Bundle
) -> dict[str, Any]:
    """`paper` (the round's `submit_paper` arguments) as the new version of the paper
    under review: it names what it revises and the reviews it answers, and says how."""
    old, received = revising.paper, revising.received
    primary = bundle.card.subtask(bundle.card.primary)
    before = next((c.value for c in old.claims if c.subtask == primary.name), None)
    now = next((c["value"] for c in paper["claims"] if c["subtask"] == primary.name), None)
    done = len(state.attempts_since_paper())
    claimed = next((c["attempt"] for c in paper["claims"] if c["subtask"] == primary.name), None)
    new_work = {a.number for a in state.attempts_since_paper()}
    if before is not None and now is not None and claimed in new_work:
        outcome = f"{primary.name} went from {before:.4f} to {now:.4f}."
    elif now is not None:  # the reviewed paper said a round found nothing better: nor did this
        outcome = (
            f"None of them beat our best, {primary.name} = {now:.4f} (attempt {claimed}), "
            "which this version reports."
        )
    else:
        outcome = "Every number below is the grader's."
    answer = [
        "## Response to the reviews",
        f"The reviews of {old.paper_id} ({received.decision}, mean rating "
        f"{received.mean_rating:.1f}) named these weaknesses:",
        "\n".join(f"- {w}" for w in received.weaknesses) or "- none",
        f"We answered with work: {done} more graded attempt(s) from our best configuration. "
        + outcome,
    ]
    return {
        **paper,
        "title": ("Revised: " + paper["title"])[:300],
        "body": paper["body"] + "\n\n" + "\n\n".join(answer),
        "revises": old.paper_id,
        "answers": [str(i) for i in received.reviews],
    }


def _claims(attempt: Attempt, subtasks: list[Subtask]) -> list[dict[str, Any]]:
    """A paper's claims: the grader's scores of `attempt`, one a subtask."""
    scores = attempt.scores
    assert scores is not None  # a scored attempt
    return [
        {"subtask": s.name, "metric": s.metric, "value": scores[s.name], "attempt": attempt.number}
        for s in subtasks
    ]


def _best(scored: list[Attempt], primary: Subtask) -> Attempt | None:
    best: Attempt | None = None
    for attempt in scored:
        value = attempt.scores[primary.name]  # type: ignore[index]
        if best is None or better(primary, value, best.scores[primary.name]):  # type: ignore[index]
            best = attempt
    return best


def _led(paper: dict[str, Any], primary: Subtask, before: float | None) -> bool:
    """Whether the paper's verified result was ahead of everything the run had measured
    before this round by `PROGRESS`: then the round's moves started from it."""
    values = [
        c["measured"] for c in paper["claims"] if c["subtask"] == primary.name and c.get("verified")
    ]
    if not values or not paper["method"]:
        return False
    return (
        before is None
        or over_baseline(primary, values[0]) >= over_baseline(primary, before) + PROGRESS
    )


def _changes(config: dict[str, Any], starter: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(config.items()) if starter.get(k) != v)


def _same_method(method: dict[str, Any], config: dict[str, Any], card: TaskCard) -> bool:
    """Whether `config` sets every setting of `method` that applies in `config`."""
    shown = card.settings(config)
    return bool(method) and all(
        config.get(k) == v for k, v in method.items() if k in shown or k not in config
    )


def _shown(config: dict[str, Any], card: TaskCard) -> str:
    """The settings of `config` that apply, as a paper lists them."""
    return ", ".join(f"{k}={v}" for k, v in sorted(card.settings(config).items()))


def _body(
    card: TaskCard,
    round_attempts: list[Attempt],
    scored: list[Attempt],
    best: Attempt | None,
    cited: list[str],
) -> str:
    goal, subtasks = card.goal, card.subtasks
    header = "| attempt | configuration | " + " | ".join(s.name for s in subtasks) + " |"
    rule = "|---|---|" + "---|" * len(subtasks)
    rows = []
    for attempt in round_attempts:
        cells = [f"{attempt.scores[s.name]:.4f}" if attempt.scores else "failed" for s in subtasks]
        rows.append(
            f"| {attempt.number} | {_shown(attempt.config, card)} | " + " | ".join(cells) + " |"
        )
    parts = [
        "## Goal",
        goal.strip(),
        "## Method",
        "Local search (the labrxiv `search` baseline agent): each configuration changes one "
        "or two parameters of the best configuration known so far"
        + (", starting from the cited papers' published configurations." if cited else "."),
        "## Results (this round; scores from the task's grader)",
        "\n".join([header, rule, *rows]),  # one block: blank lines would split the table
    ]
    if best is not None:
        parts += ["## Best configuration", f"Attempt {best.number}: {_shown(best.config, card)}"]
        parts += ["## Ablations", _ablations_table(best, scored, card)]
    parts += [f"Scored attempts in the whole run: {len(scored)}."]
    return "\n\n".join(parts)


def _ablations_table(best: Attempt, scored: list[Attempt], card: TaskCard) -> str:
    """The best configuration's ablations: per graded attempt that changed one of its
    parameters, the change (with the settings it makes apply: `model: logreg → knn (with
    n_neighbors=15)`) and each score with its difference from the best's."""
    subtasks = card.subtasks
    found = ablations(best, scored)
    if not found:
        return "No graded attempt differs from the best configuration in one parameter."
    header = "| attempt | change | " + " | ".join(s.name for s in subtasks) + " |"
    rule = "|---|---|" + "---|" * len(subtasks)
    rows = []
    for attempt in found:
        (key,) = differences(best.config, attempt.config)
        change = f"{key}: {best.config.get(key)} → {attempt.config.get(key)}"
        before = card.settings(best.config)
        brought = {
            k: v for k, v in sorted(card.settings(attempt.config).items()) if k not in before
        }
        if brought:
            change += " (with " + ", ".join(f"{k}={v}" for k, v in brought.items()) + ")"
        cells = [
            f"{attempt.scores[s.name]:.4f} ({attempt.scores[s.name] - best.scores[s.name]:+.4f})"  # type: ignore[index]
            for s in subtasks
        ]
        rows.append(f"| {attempt.number} | {change} | " + " | ".join(cells) + " |")
    lead = f"Single changes to the best configuration (attempt {best.number}), graded:"
    return "\n".join([lead, "", header, rule, *rows])
