"""Support for the read commands' tests as a newcomer runs them: a small log of two campaigns.

`two_campaigns` is what a first hour looks at: an isolated campaign and an archive
campaign on the built-in `continual-digits` task (so its task card is found), each
with one lab called `lab-0` (the same name in both: the ledger must keep them apart),
and ids that share a prefix (so a short prefix can be ambiguous).
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from events import Event, EventStore
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

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
TASK = "continual-digits"
ISOLATED = "aaaa11112222"
"""The isolated campaign: finished."""
ARCHIVE = "aaaa33334444"
"""The archive campaign: still running; its lab read the isolated campaign's paper."""
HERDING = "p-1111aaaa0000"
"""The isolated lab's paper: higher accuracy, but more forgetting."""
FINETUNE = "p-2222bbbb0000"
"""The archive lab's paper: lower accuracy, less forgetting (better: forgetting is minimized)."""


@dataclass(frozen=True)
class Said:
    """What one CLI command did."""

    code: int
    out: str
    """stdout and stderr, as a terminal shows them."""
    stdout: str
    exception: BaseException | None

    @property
    def text(self) -> str:
        """`out` with whitespace collapsed, so a message wrapped by rich still matches."""
        return " ".join(self.out.split())


Cli = Callable[..., Said]


def _events(
    stream: str, campaign: str, actor: str, payloads: list[tuple[float, Payload]]
) -> list[Event]:
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
        for version, (seconds, payload) in enumerate(payloads)
    ]


def _paper(paper_id: str, title: str, body: str, accuracy: float, forgetting: float) -> Payload:
    return PaperSubmitted(
        paper_id=paper_id,
        task=TASK,
        title=title,
        abstract=title,
        body=body,
        claims=[
            Claim(subtask="final_accuracy", metric="accuracy", value=accuracy, attempt=1),
            Claim(subtask="average_forgetting", metric="forgetting", value=forgetting, attempt=1),
        ],
    )


def _scored(accuracy: float, forgetting: float, normalized: float) -> Payload:
    scores = {"final_accuracy": accuracy, "average_forgetting": forgetting}
    return ExperimentScored(
        attempt=1, subtask_scores=scores, score=accuracy, normalized_score=normalized
    )


def two_campaigns_events() -> list[Event]:
    """The isolated campaign (finished), then the archive campaign (running)."""
    isolated = _events(
        f"campaign-{ISOLATED}",
        ISOLATED,
        "labrxiv",
        [
            (0, CampaignStarted(task=TASK, labs=1, mode="isolated")),
            (9, CampaignFinished(reason="done")),
        ],
    )
    run_a = _events(
        f"run-{ISOLATED}-0",
        ISOLATED,
        "lab-0",
        [
            (0, RunStarted(task=TASK, lab="lab-0", policy="search")),
            (1, ToolInvoked(call_id="a1", tool="evaluate")),
            (3, ToolReturned(call_id="a1", tool="evaluate", exit_code=0, duration_s=2.0)),
            (4, _scored(0.8, 0.5, 0.79)),
            (
                5,
                _paper(
                    HERDING, "Herding exemplars", "We pick exemplars by herding; NCM.", 0.8, 0.5
                ),
            ),
            (8, RunFinished(reason="done", detail="1 paper written")),
        ],
    )
    archive = _events(
        f"campaign-{ARCHIVE}",
        ARCHIVE,
        "labrxiv",
        [(20, CampaignStarted(task=TASK, labs=1, mode="archive"))],
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
            (26, _scored(0.6, 0.1, 0.53)),
            (27, _paper(FINETUNE, "Fine-tuning, gently", "A smaller learning rate.", 0.6, 0.1)),
        ],
    )
    return sorted(isolated + run_a + archive + run_b, key=lambda e: e.occurred_at)


def scored_in(log: Path) -> int:
    """How many attempts the SQLite log at `log` holds scored (0 before it exists), for
    tests that stop a command once it has measured something."""
    try:
        store = EventStore.from_url(f"sqlite:///{log}", create=False)
        return len(store.read_records(types=["experiment.scored"]))
    except Exception:  # not created yet
        return 0
