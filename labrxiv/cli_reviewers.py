"""`labrxiv reviewers eval`: how well a reviewer agrees with human reviewers, and how well
a campaign's reviews follow the papers' measured scores (docs/review.md, "Reviewer
calibration"). Reads files and the log; writes nothing."""

from pathlib import Path

import typer
from rich.table import Table

from analysis.correlation import correlate
from analysis.reviewer_eval import (
    BadLines,
    Evaluation,
    Figure,
    HumanPaper,
    Prediction,
    evaluate,
    read_lines,
)
from events.payloads import ReviewConfig
from labrxiv.cli_bounds import (
    INT64_MAX,
    accept_rating_option,
    count_option,
    dollars_option,
    review_base_url_option,
    review_model_option,
)
from labrxiv.cli_common import AsJson, emit_json, read_runner
from labrxiv.cli_errors import say_error
from labrxiv.cli_group import command_group
from labrxiv.console import console
from labrxiv.errors import NotFound
from labrxiv.lookup import resolve_campaign
from labrxiv.reviewer_run import run_reviewer
from projections.reviews import REVIEWS
from workers.review.evidence import gather, measured_score

reviewers_app = command_group("Reviewers: how well they agree with people and with the log.")


@reviewers_app.command("eval")
def reviewers_eval(
    data: Path | None = typer.Option(
        None, "--data", help="JSONL of papers with human reviews (docs/review.md)."
    ),
    predictions: Path | None = typer.Option(
        None, "--predictions", help="JSONL of the reviewer's rating (and decision) per paper."
    ),
    review_model: str | None = review_model_option(
        "Instead of --predictions: run the llm reviewer on each paper's text (recorded)."
    ),
    review_base_url: str | None = review_base_url_option("Its endpoint."),
    reviewer_tokens: int | None = count_option(
        "--reviewer-tokens", "Stop reviewing past these tokens."
    ),
    reviewer_dollars: float | None = dollars_option(
        "--reviewer-dollars", "Stop reviewing past these dollars."
    ),
    campaign: str | None = typer.Option(
        None, "--campaign", help="Also: its reviews' ratings against its papers' measured scores."
    ),
    accept_rating: float = accept_rating_option(
        "A prediction without a decision accepts at this rating."
    ),
    resamples: int = typer.Option(
        1000, "--resamples", min=10, help="Bootstrap resamples.", max=INT64_MAX
    ),
    seed: int = typer.Option(0, "--seed", help="The bootstrap's seed.", max=INT64_MAX, min=0),
    as_json: AsJson = False,
) -> None:
    """A reviewer against human reviews (--data with --predictions): MAE and MSE, the same
    against each human held out (proxy), Spearman, decision accuracy and macro-F1, pairwise
    ordering, each with a bootstrap interval; and, with --campaign, the correlation of a
    campaign's review ratings with its papers' measured scores."""
    if data is None and campaign is None:
        say_error("give --data and --predictions, or --campaign (or both)")
        raise typer.Exit(2)
    if data is not None and (predictions is None) == (review_model is None):
        say_error("--data goes with --predictions (a reviewer's answers) or --review-model")
        raise typer.Exit(2)
    if data is None and (predictions is not None or review_model is not None):
        say_error("--predictions and --review-model go with --data")
        raise typer.Exit(2)
    out: dict[str, object] = {}
    if data is not None:
        try:
            humans = read_lines(str(data), _read(data), HumanPaper)
            if predictions is not None:
                said = read_lines(str(predictions), _read(predictions), Prediction)
        except BadLines as exc:
            say_error(str(exc))
            raise typer.Exit(1) from None
        if review_model is not None:
            config = ReviewConfig(
                reviewer="llm",
                model=review_model,
                base_url=review_base_url,
                tokens=reviewer_tokens,
                dollars=reviewer_dollars,
            )
            said, stopped, stream = run_reviewer(humans, config)
            out["reviewed_in"] = stream
            if stopped is not None:
                say_error(f"reviewing stopped: {stopped}")
        result = evaluate(humans, said, accept_rating, resamples, seed)
        if not result.papers:
            if predictions is not None:
                say_error(f"no paper of {data} has a prediction in {predictions}")
            else:  # every review failed: why is in the log, beside each call
                say_error(
                    f"the reviewer gave no valid review of any paper of {data}; its calls "
                    f"and why each failed are in the log: labrxiv events tail --stream "
                    f"{out['reviewed_in']}"
                )
            raise typer.Exit(1)
        out["humans"] = result
    if campaign is not None:
        out["campaign"] = _campaign_correlation(campaign, resamples, seed)
    if as_json:
        emit_json(out)
        return
    if "humans" in out:
        _print_evaluation(out["humans"])  # type: ignore[arg-type]
    if "reviewed_in" in out:
        console.print(f"the reviewer's calls and reviews are in the log: {out['reviewed_in']}")
    if "campaign" in out:
        console.print(out["campaign"]["line"])  # type: ignore[index]


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise NotFound(f"cannot read {path}: {exc.strerror}") from None


def _campaign_correlation(campaign: str, resamples: int, seed: int) -> dict[str, object]:
    runner = read_runner()
    runner.catch_up()
    store = runner.store
    with store.engine.connect() as conn:
        campaign = resolve_campaign(store, conn, campaign) or campaign
        ratings: dict[str, list[int]] = {}
        query = REVIEWS.select().where(REVIEWS.c.campaign == campaign)
        for row in conn.execute(query).mappings():
            ratings.setdefault(row["paper_id"], []).append(row["rating"])
    if not ratings:
        raise NotFound(f"campaign {campaign} has no reviewed paper")
    measured: dict[str, float] = {}
    for record in store.iter_records(types=["paper.submitted"], correlation=campaign):
        paper_id = record.payload["paper_id"]
        if paper_id in ratings and paper_id not in measured:
            evidence = gather(store, store.read_stream(record.stream), record.version)
            score = measured_score(evidence.paper, evidence.graded)
            if score is not None:
                measured[paper_id] = score
    ids = sorted(measured)
    mean = [sum(ratings[i]) / len(ratings[i]) for i in ids]
    found = correlate("rating", "measured score", mean, [measured[i] for i in ids], resamples, seed)
    rho = found.spearman
    line = f"campaign {campaign}: review rating against measured score over {found.n} papers: " + (
        f"Spearman {rho.value:.3f} (95% CI {rho.low:.3f} to {rho.high:.3f})"
        if rho is not None and rho.low is not None and rho.high is not None
        else f"no correlation ({found.note})"
    )
    return {"correlation": found, "line": line}


def _print_evaluation(result: Evaluation) -> None:
    table = Table(title=f"reviewer against human reviews ({result.papers} papers)")
    for name in ("figure", "value", "95% interval", "over"):
        table.add_column(name)
    rows = [
        ("MAE (mean human rating)", result.mae),
        ("MSE (mean human rating)", result.mse),
        ("proxy MAE (each human held out)", result.proxy_mae),
        ("proxy MSE (each human held out)", result.proxy_mse),
        ("humans' own proxy MAE", result.human_proxy_mae),
        ("humans' own proxy MSE", result.human_proxy_mse),
        ("Spearman (mean human rating)", result.spearman),
        ("decision accuracy", result.decision_accuracy),
        ("decision macro-F1", result.decision_macro_f1),
        ("pairwise ordering accuracy", result.pairwise_accuracy),
    ]
    for name, figure in rows:
        table.add_row(name, _value(figure.value), _interval(figure), str(figure.n))
    console.print(table)
    if result.missing:
        console.print(f"{len(result.missing)} paper(s) with no prediction left out")


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _interval(figure: Figure) -> str:
    if figure.low is None or figure.high is None:
        return "-"
    return f"{figure.low:.4f} to {figure.high:.4f}"
