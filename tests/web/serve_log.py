"""A small log for `labrxiv serve`'s tests: two campaigns on `continual-digits`, a paper
with one verified and one unverified claim, its reviews and decision, a paper citing
it from a lab that retrieved it, and a paper whose text holds markup and script.

`FINISHING` is what the archive campaign's lab does next: appended while a page is
open, it must show there without a reload.
"""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from events import Event
from events.ids import derived_id
from events.payloads import (
    CampaignFinished,
    CampaignStarted,
    Claim,
    ExperimentScored,
    PapersRetrieved,
    PaperSubmitted,
    Payload,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)
from events.payloads.review import PaperDecided, ReviewForm, ReviewSubmitted
from events.streams import review_stream

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TASK = "continual-digits"
ISOLATED = "aaaa11112222"
"""The isolated campaign: finished."""
ARCHIVE = "bbbb33334444"
"""The archive campaign: running; its lab read the isolated campaign's paper."""
HERDING = "p-1111aaaa0000"
"""Claims accuracy 0.8 (the grader's score of attempt 1: verified) and forgetting 0.3
(the grader measured 0.5: not verified). Reviewed and accepted."""
FINETUNE = "p-2222bbbb0000"
"""The archive lab's paper: cites HERDING, which it was shown."""
SCRIPTED = "p-3333cccc0000"
"""A paper whose title, abstract and body hold markup and script."""
SCRIPT = "<script>window.pwned = 1</script>"
IMAGE = '<img src="x" onerror="window.pwned = 2">'


def _events(
    stream: str,
    campaign: str | None,
    actor: str,
    payloads: Sequence[tuple[float, Payload]],
    first: int = 0,
) -> list[Event]:
    """The stream's events from version `first`, at T0 + their seconds."""
    return [
        Event(
            id=derived_id(f"{stream}:{version}", T0 + timedelta(seconds=seconds)),
            stream=stream,
            version=version,
            occurred_at=T0 + timedelta(seconds=seconds),
            correlation_id=campaign,
            actor="grader:digits" if payload.type == "experiment.scored" else actor,
            payload=payload,
        )
        for version, (seconds, payload) in enumerate(payloads, start=first)
    ]


def _scored(attempt: int, accuracy: float, forgetting: float, normalized: float) -> Payload:
    scores = {"final_accuracy": accuracy, "average_forgetting": forgetting}
    return ExperimentScored(
        attempt=attempt, subtask_scores=scores, score=accuracy, normalized_score=normalized
    )


def _claims(accuracy: float, forgetting: float) -> list[Claim]:
    return [
        Claim(subtask="final_accuracy", metric="accuracy", value=accuracy, attempt=1),
        Claim(subtask="average_forgetting", metric="forgetting", value=forgetting, attempt=1),
    ]


def _review(paper: str, campaign: str) -> list[Event]:
    form = ReviewForm(
        summary="Herding picks exemplars well; the forgetting claim is not what was measured.",
        strengths=["clear method"],
        weaknesses=["forgetting overstated"],
        questions=["why 0.3?"],
        soundness=3,
        presentation=3,
        contribution=2,
        rating=7,
        confidence=4,
        ethics_flag=False,
    )
    review = ReviewSubmitted(paper_id=paper, reviewer="grounded-0", kind="grounded", form=form)
    stream = review_stream(paper)
    first = _events(stream, campaign, "reviewer:grounded-0", [(7, review)])
    decided = PaperDecided(
        paper_id=paper,
        decision="accept",
        reason="mean rating 7.0 >= 6.0",
        reviews=[first[0].id],
        mean_rating=7.0,
    )
    return first + _events(stream, campaign, "meta-reviewer", [(8, decided)], first=1)


def serve_events() -> list[Event]:
    """The isolated campaign (finished, reviewed), then the archive campaign (running)."""
    isolated = _events(
        f"campaign-{ISOLATED}",
        ISOLATED,
        "labrxiv",
        [
            (0, CampaignStarted(task=TASK, labs=1, mode="isolated")),
            (9, CampaignFinished(reason="done")),
        ],
    )
    herding = PaperSubmitted(
        paper_id=HERDING,
        task=TASK,
        title="Herding exemplars",
        abstract="We pick exemplars by herding.",
        body="We pick exemplars by herding; NCM classifier.",
        claims=_claims(0.8, 0.3),
    )
    scripted = PaperSubmitted(
        paper_id=SCRIPTED,
        task=TASK,
        title=f"Exemplars {SCRIPT}",
        abstract=f"An abstract with {IMAGE} in it.",
        body=f"# Results\n\n{SCRIPT}\n\n{IMAGE}\n\nherding again.",
        claims=[Claim(subtask="final_accuracy", metric="accuracy", value=0.99, attempt=2)],
    )
    run_a = _events(
        f"run-{ISOLATED}-0",
        ISOLATED,
        "lab-0",
        [
            (0, RunStarted(task=TASK, lab="lab-0", policy="search")),
            (1, ToolInvoked(call_id="a1", tool="evaluate")),
            (3, ToolReturned(call_id="a1", tool="evaluate", exit_code=0, duration_s=2.0)),
            (4, _scored(1, 0.8, 0.5, 0.79)),
            (5, herding),
            (6, scripted),
            (8.5, RunFinished(reason="done", detail="2 papers written")),
        ],
    )
    archive = _events(
        f"campaign-{ARCHIVE}",
        ARCHIVE,
        "labrxiv",
        [(20, CampaignStarted(task=TASK, labs=1, mode="archive"))],
    )
    finetune = PaperSubmitted(
        paper_id=FINETUNE,
        task=TASK,
        title="Fine-tuning, gently",
        abstract="A smaller learning rate, after herding.",
        body="A smaller learning rate.",
        claims=_claims(0.6, 0.1),
        cited=[HERDING],
    )
    run_b = _events(
        f"run-{ARCHIVE}-0",
        ARCHIVE,
        "lab-0",
        [
            (20, RunStarted(task=TASK, lab="lab-0", policy="search", reads_archive=True)),
            (21, PapersRetrieved(query="herding", paper_ids=[HERDING])),
            (22, ToolInvoked(call_id="b1", tool="evaluate")),
            (25, ToolReturned(call_id="b1", tool="evaluate", exit_code=0, duration_s=3.0)),
            (26, _scored(1, 0.6, 0.1, 0.53)),
            (27, finetune),
        ],
    )
    events = isolated + run_a + _review(HERDING, ISOLATED) + archive + run_b
    return sorted(events, key=lambda e: e.occurred_at)


def finishing_events() -> list[Event]:
    """The archive campaign's lab scores better, finishes, and its campaign ends."""
    stream = f"run-{ARCHIVE}-0"
    later = _events(
        stream,
        ARCHIVE,
        "lab-0",
        [
            (30, ToolInvoked(call_id="b2", tool="evaluate")),
            (31, ToolReturned(call_id="b2", tool="evaluate", exit_code=0, duration_s=1.0)),
            (32, _scored(2, 0.9, 0.05, 0.88)),
            (33, RunFinished(reason="done", detail="1 paper written")),
        ],
        first=6,
    )
    ended = [(34, CampaignFinished(reason="done"))]
    return later + _events(f"campaign-{ARCHIVE}", ARCHIVE, "labrxiv", ended, first=1)
