"""Rich renderings of the archive, ledger and curve read models, for the CLI."""

from collections.abc import Mapping, Sequence
from typing import Any

import orjson
from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from labrxiv.money import dollars_cell
from projections.archive import PaperDetail, PaperSummary
from projections.archive_search import SearchHit
from projections.archive_top import RankedPaper
from projections.ledger import LedgerTotals
from projections.reviews import PaperDecision, Review


def _headline(claims: Sequence[dict[str, Any]]) -> str:
    if not claims:
        return "-"
    first = claims[0]
    return f"{first['subtask']}={first['value']:.4f}"


def _when(paper: PaperSummary) -> str:
    return f"{paper.submitted_at:%Y-%m-%d %H:%M:%S}"


def papers_table(
    papers: Sequence[PaperSummary],
    verified: Mapping[str, Sequence[bool]],
    title: str = "papers",
    decisions: Mapping[str, PaperDecision] | None = None,
) -> Table:
    """The archive listing: one line per paper, in submission order, with whether the log
    verifies its headline claim (`verified[paper id][i]`: claim i); with `decisions`,
    each paper's decision and mean rating (`-`: not reviewed, or not yet)."""
    names = ["paper", "task", "campaign", "lab", "v", "submitted", "headline claim", "verified"]
    names += ["decision", "rating"] if decisions is not None else []
    table = _paper_table(title, names)
    for p in papers:
        cells = [p.paper_id, p.task, p.campaign or "-", p.lab or "-", str(p.version)]
        marks = verified.get(p.paper_id) or []
        cells += [_when(p), _headline(p.claims), _mark(marks[0]) if marks else "-"]
        if decisions is not None:
            decided = decisions.get(p.paper_id)
            cells += [_decision(decided), f"{decided.mean_rating:.1f}" if decided else "-"]
        table.add_row(*cells, escape(p.title))
    return table


def _paper_table(title: str, names: Sequence[str]) -> Table:
    """A table of papers with the columns `names` and then the paper's title; a narrow
    terminal folds its cells, never cuts them."""
    table = Table(title=title)
    for name in (*names, "title"):
        table.add_column(name, overflow="fold")
    return table


def _mark(verified: bool) -> str:
    return "yes" if verified else "[red]NO[/]"


def _decision(decided: PaperDecision | None) -> str:
    if decided is None:
        return "-"
    return "[green]accept[/]" if decided.decision == "accept" else "[red]reject[/]"


def reviews_view(reviews: Sequence[Review], decided: PaperDecision | None) -> RenderableType:
    """A paper's reviews (the ICLR form) and its decision."""
    if not reviews:
        return Text("reviews: none")
    scores = Table(title=f"reviews ({len(reviews)})")
    for name in ("reviewer", "soundness", "presentation", "contribution", "rating"):
        scores.add_column(name)
    scores.add_column("confidence")
    scores.add_column("ethics")
    parts: list[RenderableType] = [scores]
    for r in reviews:
        who = r.reviewer + (f" ({r.model})" if r.model else "")
        scores.add_row(
            escape(who),
            f"{r.soundness}/4",
            f"{r.presentation}/4",
            f"{r.contribution}/4",
            f"{r.rating}/10",
            f"{r.confidence}/5",
            "[red]FLAG[/]" if r.ethics_flag else "-",
        )
        lines = [f"[bold]{escape(r.reviewer)}[/]: {escape(r.summary)}"]
        for heading, items in (
            ("strengths", r.strengths),
            ("weaknesses", r.weaknesses),
            ("questions", r.questions),
        ):
            lines += (
                [f"  {heading}:"] + [f"    - {escape(item)}" for item in items] if items else []
            )
        parts.append(Text.from_markup("\n".join(lines)))
    if decided is not None:
        parts.append(Text.from_markup(f"decision: {_decision(decided)} ({escape(decided.reason)})"))
    else:
        parts.append(Text("decision: not yet"))
    return Group(*parts)


def search_table(hits: Sequence[SearchHit], query: str) -> Table:
    """Search hits, best first, with their BM25 scores."""
    names = ("#", "score", "paper", "lab", "campaign", "headline claim")
    table = _paper_table(f"papers matching {escape(query)!r}", names)
    for rank, hit in enumerate(hits, start=1):
        p = hit.paper
        table.add_row(
            str(rank),
            f"{hit.score:.3f}",
            p.paper_id,
            p.lab or "-",
            p.campaign or "-",
            _headline(p.claims),
            escape(p.title),
        )
    return table


def top_table(ranked: Sequence[RankedPaper], task: str) -> Table:
    """Papers ranked by a claim, each marked with whether the log verifies it."""
    names = ("#", "paper", "lab", "campaign", "subtask", "value", "verified")
    table = _paper_table(f"top papers on {escape(task)}", names)
    for rank, item in enumerate(ranked, start=1):
        p = item.paper
        table.add_row(
            str(rank),
            p.paper_id,
            p.lab or "-",
            p.campaign or "-",
            item.subtask,
            f"{item.value:.4f}",
            _mark(item.verified),
            escape(p.title),
        )
    return table


def paper_view(
    detail: PaperDetail,
    verified: list[bool] | None = None,
    reviews: RenderableType | None = None,
) -> RenderableType:
    """A paper in full: metadata, claims, method, lineage both ways, its reviews and
    decision (`reviews_view`), then the body.

    `verified[i]`: whether claim i is the grader's score of the attempt it names."""
    p = detail.paper
    version = f"version {p.version}" + (f", revises {p.revises}" if p.revises else "")
    header: list[RenderableType] = [
        Text(p.title, style="bold"),
        Text(f"{p.paper_id} · {p.task} · {version}"),
        Text(
            f"lab {p.lab or '-'} · run {p.run} (paper {detail.number_in_run} of the run)"
            f" · campaign {p.campaign or '-'} · submitted {_when(p)}"
        ),
        Rule("abstract"),
        Text(detail.abstract),
    ]
    claims = Table(title="claims")
    for name in ("subtask", "metric", "value", "attempt", "verified"):
        claims.add_column(name)
    for index, claim in enumerate(p.claims):
        attempt = claim.get("attempt")
        checked = "-" if verified is None else _mark(verified[index])
        claims.add_row(
            claim["subtask"],
            claim["metric"],
            f"{claim['value']:.4f}",
            "-" if attempt is None else str(attempt),
            checked,
        )
    method = orjson.dumps(detail.method, option=orjson.OPT_SORT_KEYS).decode()
    lineage = Table(title="lineage")
    for name in ("relation", "paper", "lab", "title"):
        lineage.add_column(name, overflow="fold")
    labs = {cited.paper_id: cited.lab for cited in detail.cited}
    for cited_id, title in detail.cites:
        lab = labs.get(cited_id) or "-"
        lineage.add_row("cites", cited_id, lab, escape(title or "(not in the archive)"))
    for other in detail.cited_by:
        lineage.add_row("cited by", other.paper_id, other.lab or "-", escape(other.title))
    for other in detail.revisions:
        lineage.add_row("revised by", other.paper_id, other.lab or "-", escape(other.title))
    retrieved = Table(title=f"retrieved {len(detail.retrievals)} time(s)")
    for name in ("at", "run", "lab", "rank", "query"):
        retrieved.add_column(name, overflow="fold")
    for r in detail.retrievals:
        retrieved.add_row(
            f"{r.at:%Y-%m-%d %H:%M:%S}", r.run, r.lab or "-", str(r.rank), escape(r.query)
        )
    return Group(
        *header,
        claims,
        Text(f"method: {method}"),
        lineage,
        retrieved,
        *([Rule("reviews"), reviews] if reviews is not None else []),
        Rule("body"),
        Markdown(detail.body),
    )


def ledger_table(
    totals: Sequence[LedgerTotals], by: str, campaigns: Sequence[str | None] | None = None
) -> Table:
    """Roll-ups of the ledger, one line per run, lab or campaign; `campaigns[i]`: the
    campaign of row i, shown first (a lab's name is only unique within its campaign)."""
    table = Table(title=f"ledger by {by}")
    if campaigns is not None:
        table.add_column("campaign", overflow="fold")
    for name in (by, "calls", "tool", "model", "grader model", "compute s"):
        table.add_column(name, overflow="fold")
    for name in ("input tok", "cached", "output", "reasoning", "tokens", "dollars", "unknown $"):
        table.add_column(name, justify="right")
    for index, t in enumerate(totals):
        first = [] if campaigns is None else [campaigns[index] or "-"]
        table.add_row(
            *first,
            t.key or "-",
            str(t.calls),
            str(t.tool_calls),
            str(t.model_calls),
            str(t.grader_calls),
            f"{t.compute_seconds:.1f}",
            f"{t.input_tokens:,}",
            f"{t.cached_input_tokens:,}",
            f"{t.output_tokens:,}",
            f"{t.reasoning_tokens:,}",
            f"{t.tokens:,}",
            dollars_cell(t.dollars, t.unknown_cost_calls, t.priced_calls),
            str(t.unknown_cost_calls),
        )
    return table
