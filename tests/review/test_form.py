"""The review form (ICLR 2024) is refused at the door when a field is missing, out of its
range or not a whole number: never clamped."""

from uuid import uuid4

import pytest
from pydantic import ValidationError

from events import Event
from events.ids import utcnow
from events.payloads import PaperDecided, ReviewForm, ReviewSubmitted

GOOD = {
    "summary": "s",
    "strengths": ["a"],
    "weaknesses": [],
    "questions": [],
    "soundness": 3,
    "presentation": 2,
    "contribution": 4,
    "rating": 6,
    "confidence": 5,
    "ethics_flag": False,
}


def test_a_whole_form_is_taken() -> None:
    assert ReviewForm.model_validate(GOOD).rating == 6


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("soundness", 0),
        ("soundness", 5),
        ("presentation", 7),
        ("contribution", -1),
        ("rating", 11),
        ("rating", 0),
        ("confidence", 6),
        ("rating", 6.5),
        ("rating", "6"),
        ("soundness", 3.0),
        ("ethics_flag", "no"),
        ("summary", ""),
    ],
)
def test_a_field_out_of_range_or_of_the_wrong_type_is_refused_by_name(
    field: str, value: object
) -> None:
    with pytest.raises(ValidationError) as caught:
        ReviewForm.model_validate({**GOOD, field: value})
    assert [e["loc"][0] for e in caught.value.errors()] == [field]


@pytest.mark.parametrize("field", sorted(GOOD))
def test_a_missing_field_is_refused_by_name(field: str) -> None:
    data = {k: v for k, v in GOOD.items() if k != field}
    with pytest.raises(ValidationError) as caught:
        ReviewForm.model_validate(data)
    assert caught.value.errors()[0]["loc"] == (field,)


def test_a_review_event_from_the_wire_names_the_wrong_field_of_its_form() -> None:
    """What the recorder validates: the whole event, from JSON-shaped data."""
    review = {
        "type": "review.submitted",
        "paper_id": "p-1",
        "reviewer": "grounded-0",
        "kind": "grounded",
        "form": {**GOOD, "rating": 12},
    }
    data = {
        "id": str(uuid4()),
        "stream": "review-p-1",
        "version": 0,
        "occurred_at": utcnow().isoformat(),
        "payload": review,
    }
    with pytest.raises(ValidationError) as caught:
        Event.model_validate(data)
    assert caught.value.errors()[0]["loc"][-2:] == ("form", "rating")
    data["payload"] = {**review, "form": GOOD}
    assert isinstance(Event.model_validate(data).payload, ReviewSubmitted)


def test_a_decision_needs_its_reviews() -> None:
    with pytest.raises(ValidationError, match="reviews"):
        PaperDecided(paper_id="p-1", decision="accept", reason="r", reviews=[], mean_rating=6)
    with pytest.raises(ValidationError, match="decision"):
        PaperDecided.model_validate(
            {
                "paper_id": "p",
                "decision": "maybe",
                "reason": "r",
                "reviews": [str(uuid4())],
                "mean_rating": 6,
            }
        )
