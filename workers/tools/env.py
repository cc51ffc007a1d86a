"""What a tool may use: the run's sandbox, its task bundle, the archive, and what the run did."""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from uuid import UUID

from workers.gym.card import TaskCard
from workers.llm.prices import PriceTable
from workers.sandbox.base import Sandbox


@dataclass(frozen=True)
class PaperHit:
    """A paper as retrieval shows it."""

    paper_id: str
    title: str
    abstract: str
    lab: str
    method: dict[str, Any]
    """The configuration the paper's best result used."""
    claims: list[dict[str, Any]]
    """The numbers the paper reports: [{subtask, metric, value, attempt, verified}];
    `verified` says the author's run has a graded attempt that measured the value."""
    experiments: list[dict[str, Any]] = field(default_factory=list)
    """The graded attempts it reports: [{attempt, config, scores, verified}]."""


@dataclass(frozen=True)
class PaperReviews:
    """A paper's reviews and the decision on it, as its lab reads them."""

    decision: Literal["accept", "reject"] | None
    """None: the review stopped before a decision (`stopped` says why)."""
    reviews: tuple[UUID, ...]
    """The `review.submitted` events."""
    weaknesses: tuple[str, ...]
    mean_rating: float | None
    stopped: str | None = None


@dataclass(frozen=True)
class ArchiveScope:
    """The papers of the archive a run may read: those on `task`."""

    task: str
    campaign: str | None = None
    """Only those this campaign's labs wrote (what an archive-mode lab reads)."""
    accepted_only: bool = False
    """Only those their reviewers accepted by now (`paper.decided`)."""


class Archive(Protocol):
    """The shared preprint archive, as labs read it."""

    def search(self, scope: ArchiveScope, query: str, k: int) -> list[PaperHit]:
        """The `k` papers in `scope` that best match `query`."""

    def get(self, paper_id: str) -> dict[str, Any] | None:
        """A paper's full submitted payload, its claims marked `verified` as in `PaperHit`."""

    def accepted(self, paper_id: str) -> bool:
        """Whether the paper's reviewers accepted it (False: rejected or not decided yet)."""

    def reviews(self, paper_id: str) -> PaperReviews | None:
        """The paper's reviews and decision; None until it is decided (or its review
        stopped: then `decision` is None and `stopped` says why)."""


@dataclass
class ToolRun:
    """What tools need to know about the run they act for."""

    stream: str
    lab: str
    task: str
    campaign: str | None
    reads_archive: bool
    attempts: int
    """Scored or failed evaluations so far."""
    papers: int = 0
    accepted_only: bool = False
    """Shown only papers its campaign's reviewers accepted."""

    @property
    def scope(self) -> ArchiveScope:
        """The papers of the archive this run may read."""
        return ArchiveScope(self.task, self.campaign, self.accepted_only)


@dataclass
class ToolEnv:
    """Everything a tool call may touch."""

    sandbox: Sandbox
    card: TaskCard
    bundle: Path
    archive: Archive
    run: ToolRun
    protected: dict[str, str] = field(default_factory=dict)
    """sha256 of every grader and hidden file at the run's start, by bundle-relative path."""
    prices: Callable[[], PriceTable] | None = None
    """The price table, for graders that call a model (None: their cost is unknown)."""
