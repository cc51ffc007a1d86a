"""What a search lab's revision says it did: a gain only where the revision's own work
found it (a revision of a paper whose round found nothing better presents the lab's
best, measured before the paper under review: it was once told as the revision's gain)."""

import uuid
from types import SimpleNamespace
from typing import Any

from workers.lab.policies.search.paper import revision


def _revised(claimed_attempt: int) -> str:
    primary = SimpleNamespace(name="final_accuracy")
    bundle = SimpleNamespace(
        card=SimpleNamespace(primary="final_accuracy", subtask=lambda _n: primary)
    )
    old = SimpleNamespace(
        paper_id="p-old", claims=[SimpleNamespace(subtask="final_accuracy", value=0.80)]
    )
    received = SimpleNamespace(
        decision="reject", mean_rating=4.0, weaknesses=["too few attempts"], reviews=[uuid.uuid4()]
    )
    since = [SimpleNamespace(number=7), SimpleNamespace(number=8)]  # the revision's work
    state = SimpleNamespace(attempts_since_paper=lambda: since)
    paper: dict[str, Any] = {
        "title": "a round's paper",
        "body": "results",
        "claims": [
            {
                "subtask": "final_accuracy",
                "metric": "accuracy",
                "value": 0.9,
                "attempt": claimed_attempt,
            }
        ],
    }
    revised = revision(paper, SimpleNamespace(paper=old, received=received), state, bundle)  # type: ignore[arg-type]
    assert revised["revises"] == "p-old" and revised["title"] == "Revised: a round's paper"
    return str(revised["body"])


def test_a_gain_the_revisions_work_found_is_told_as_one() -> None:
    assert "final_accuracy went from 0.8000 to 0.9000." in _revised(claimed_attempt=8)


def test_a_best_from_before_the_paper_is_not_told_as_the_revisions_gain() -> None:
    body = _revised(claimed_attempt=3)
    assert "went from" not in body
    assert "None of them beat our best, final_accuracy = 0.9000 (attempt 3)" in body
