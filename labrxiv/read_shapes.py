"""The JSON shapes of the read side, one rule each: the CLI's `--json` and `labrxiv
serve`'s `/api/v1` build them here, so the two never disagree."""

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import orjson
from sqlalchemy import Connection

from labrxiv.run_detail import RunDetail
from projections.archive import ClaimMark, PaperDetail, PaperSummary, claim_marks
from projections.curves import CurvePoint, PaperPoint
from projections.reviews import PaperDecision, Review, decisions_of
from projections.runs import RunView

JSON = dict[str, Any]


def json_bytes(value: object, indent: bool = True) -> bytes:
    """`value` as JSON (dataclasses, datetimes and UUIDs included), as the CLI prints it."""
    option = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(value, option=option, default=str)


@dataclass(frozen=True)
class Marks:
    """What the log says of a list of papers: each claim's mark and each decision."""

    claims: dict[str, list[ClaimMark]]
    decisions: dict[str, PaperDecision]

    def verified(self, paper_id: str) -> list[bool]:
        """Whether each claim of the paper is the grader's score of the attempt it names."""
        return [mark.verified for mark in self.claims.get(paper_id, [])]


def marks_of(conn: Connection, paper_ids: Sequence[str]) -> Marks:
    """The claims' marks and the decisions of `paper_ids`."""
    return Marks(claim_marks(conn, paper_ids), decisions_of(conn, paper_ids))


def decided_json(decided: PaperDecision | None) -> JSON | None:
    """A decision, or None for a paper not decided (not reviewed, or not yet)."""
    return None if decided is None else asdict(decided)


def papers_json(papers: Sequence[PaperSummary], marks: Marks) -> list[JSON]:
    """`papers list --json`: each paper with its claims' marks and its decision."""
    return [
        asdict(p)
        | {
            "verified": marks.verified(p.paper_id),
            "decision": decided_json(marks.decisions.get(p.paper_id)),
        }
        for p in papers
    ]


def paper_json(
    detail: PaperDetail,
    verified: list[bool],
    reviews: Sequence[Review],
    decided: PaperDecision | None,
) -> JSON:
    """`papers show --json`: the paper in full, its claims' marks, reviews and decision."""
    return asdict(detail) | {
        "verified": verified,
        "reviews": [r.model_dump() for r in reviews],
        "decision": decided_json(decided),
    }


def run_json(run: RunView, mode: str | None) -> JSON:
    """A row of `runs --json`: the runs read model's row with its campaign's mode."""
    return run.model_dump() | {"mode": mode}


def runs_json(runs: Sequence[RunView], modes: Mapping[str, str | None]) -> list[JSON]:
    """`runs --json`."""
    return [run_json(r, modes.get(r.campaign or "")) for r in runs]


def run_show_json(run: RunView, mode: str | None, detail: RunDetail) -> JSON:
    """`runs show --json`: the run's row, then its events by type, attempts and papers."""
    return {"run": run_json(run, mode), **asdict(detail)}


def curves_json(
    points: Sequence[CurvePoint], papers: Sequence[PaperPoint], modes: Mapping[str, str | None]
) -> JSON:
    """`curves --json` (without the files written): each point with its campaign's mode."""
    return {
        "points": [p.model_dump() | {"mode": modes.get(p.campaign or "")} for p in points],
        "papers": [p.model_dump() | {"mode": modes.get(p.campaign or "")} for p in papers],
    }
