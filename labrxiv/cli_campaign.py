"""`labrxiv campaign`: run N labs on a task, isolated or sharing the archive.

Exit codes: 0 the campaign finished and at least one run did not end in error; 1 every
run ended in error (nothing was measured: each run's detail is printed); 2 refused before
any run started (a bad option, an unknown task, a policy the task does not support,
labs cannot run on this machine); 3 the watch timed out before the campaign finished.
"""

import dataclasses
from datetime import timedelta
from pathlib import Path
from typing import Literal

import typer
from pydantic import ValidationError
from rich.markup import escape

from events.payloads import AgentConfig, LlmConfig, ReviewConfig
from labrxiv.campaigns import CampaignOutcome, run_campaign
from labrxiv.cli_bounds import (
    INT64_MAX,
    INT64_MIN,
    SEED_MAX,
    accept_rating_option,
    count_option,
    dollars_option,
    review_base_url_option,
    review_model_option,
)
from labrxiv.cli_checks import (
    budget_or_exit,
    http_url_or_exit,
    llm_config_or_exit,
    refuse_llm_options,
)
from labrxiv.cli_common import GymPath, StallSeconds, WatchTimeout, settings_or_exit, with_gym_path
from labrxiv.cli_errors import err, say_error
from labrxiv.cli_labs import (
    check_task,
    console,
    report_watch,
    require_sandbox,
    start_embedded,
)
from labrxiv.exit_codes import EXIT_INTERRUPTED
from labrxiv.interrupt import (
    Left,
    ctrl_c_between_ticks,
    say_stopped,
    settle_or_stop,
    stop_embedded,
)
from labrxiv.service_start import require_shared_database
from labrxiv.settings import Settings
from labrxiv.wiring import LABS_A_PROCESS, MAX_PROCESSES
from runstate.words import counted
from workers.agent.profile import AgentError, agent_config, profile_names
from workers.bus.processes import ChildDied
from workers.lab.campaign import CampaignPlan
from workers.lab.lease import Leases
from workers.lab.policies import model_settings, uses_model
from workers.llm.prices import PriceTable, recorded_prices, with_prices
from workers.reactions import REACTIONS
from workers.reactor import Reactor

TOOL_PROTOCOL = LlmConfig.model_fields["tool_protocol"].default
CONTEXT_TOKENS = LlmConfig.model_fields["context_tokens"].default
PHASE_CALLS = LlmConfig.model_fields["phase_calls"].default
"""`--tool-protocol`, `--context-tokens` and `--phase-calls` when not given: an llm lab's
defaults."""
CARDS = " (default: the task card's budget)"
"""The budgets a task card sets, said in their options' help: unset, the card's applies."""


def campaign(
    task: str = typer.Option(..., "--task", help="Task bundle id (see `labrxiv tasks list`)."),
    labs: int = typer.Option(3, "--labs", min=1, help="Labs running in parallel.", max=INT64_MAX),
    papers: int = typer.Option(2, "--papers", min=1, help="Papers each lab writes.", max=INT64_MAX),
    mode: str = typer.Option("archive", "--mode", help="isolated or archive."),
    seed: int = typer.Option(0, "--seed", help="Seed of the labs' policies.", max=SEED_MAX, min=0),
    attempts: int | None = typer.Option(
        None, "--attempts", min=1, help=f"Graded attempts per lab{CARDS}.", max=INT64_MAX
    ),
    wall_seconds: float | None = typer.Option(
        None, "--wall-seconds", help=f"Seconds per lab{CARDS}."
    ),
    policy: str = typer.Option("search", "--policy", help="The labs' policy."),
    timeout: WatchTimeout = 3600,
    model: str | None = typer.Option(None, "--model", help="llm labs: the model."),
    phase_model: list[str] = typer.Option(
        [],
        "--phase-model",
        help="llm labs: PHASE=MODEL (literature, plan, experiment, writeup, revise).",
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="llm labs: the endpoint."),
    temperature: float | None = typer.Option(None, "--temperature", help="llm labs."),
    tool_protocol: str = typer.Option(TOOL_PROTOCOL, "--tool-protocol", help="functions or text."),
    context_tokens: int = typer.Option(
        CONTEXT_TOKENS, "--context-tokens", help="The model's window.", max=INT64_MAX, min=1
    ),
    phase_calls: int = typer.Option(
        PHASE_CALLS,
        "--phase-calls",
        help="llm labs: model calls a phase may take before the lab moves on.",
        max=INT64_MAX,
        min=1,
    ),
    tokens: int | None = typer.Option(
        None, "--tokens", help="Model tokens per lab.", max=INT64_MAX, min=INT64_MIN
    ),
    dollars: float | None = typer.Option(None, "--dollars", help="Model dollars per lab."),
    steps: int | None = typer.Option(
        None, "--steps", help="Tool calls per lab (its steps budget).", max=INT64_MAX, min=INT64_MIN
    ),
    campaign_tokens: int | None = typer.Option(
        None, "--campaign-tokens", help="For all labs.", max=INT64_MAX, min=INT64_MIN
    ),
    campaign_dollars: float | None = typer.Option(None, "--campaign-dollars", help="All labs."),
    stall_seconds: StallSeconds = None,
    review: str | None = typer.Option(
        None,
        "--review",
        help="Review every paper and decide on it: grounded (from the log, offline) or llm "
        "(--review-model). The campaign then ends with its last decision (docs/review.md).",
    ),
    review_model: str | None = review_model_option("llm reviewers."),
    review_base_url: str | None = review_base_url_option("llm reviewers: the endpoint."),
    reviewer_tokens: int | None = count_option(
        "--reviewer-tokens", "Tokens for all the campaign's reviews."
    ),
    reviewer_dollars: float | None = dollars_option(
        "--reviewer-dollars", "Dollars for all the campaign's reviews."
    ),
    reviews: int = typer.Option(1, "--reviews", min=1, max=10, help="Reviews per paper."),
    accept_rating: float = accept_rating_option("Mean rating a paper needs to be accepted."),
    review_rounds: int = typer.Option(
        0,
        "--review-rounds",
        min=0,
        max=5,
        help="Revisions a lab may make of its last paper, answering its reviews (--review).",
    ),
    archive_reads: str = typer.Option(
        "all",
        "--archive-reads",
        help="Papers archive labs are shown: all, or accepted (needs --review).",
    ),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="agent labs: a profile (claude-code, codex, mini-swe-agent) or a command line.",
    ),
    agent_env: Path | None = typer.Option(
        None, "--agent-env", help="agent labs: the folder the agent is installed in."
    ),
    agent_reports: str | None = typer.Option(
        None, "--agent-reports", help="agent labs: functions, bash_blocks or none."
    ),
    processes: int | None = typer.Option(
        None,
        "--processes",
        min=1,
        max=MAX_PROCESSES,
        help="Embedded default: worker processes that take the labs' steps (default: one "
        f"per {LABS_A_PROCESS} labs, up to the machine's cores; agent labs: 1).",
    ),
    gym_path: GymPath = None,
) -> None:
    """Run a campaign and watch its labs until every run has finished."""

    if mode not in ("isolated", "archive"):
        console.print(f"[red]--mode must be isolated or archive, not {escape(repr(mode))}[/]")
        raise typer.Exit(2)
    if archive_reads not in ("all", "accepted"):
        console.print(
            f"[red]--archive-reads must be all or accepted, not {escape(repr(archive_reads))}[/]"
        )
        raise typer.Exit(2)
    if archive_reads == "accepted" and mode == "isolated":
        say_error("--archive-reads accepted: isolated labs read no archive (--mode archive)")
        raise typer.Exit(2)
    if archive_reads == "accepted" and review is None:
        console.print("[red]--archive-reads accepted needs --review (no paper is ever accepted)[/]")
        raise typer.Exit(2)
    settings: Settings = with_gym_path(settings_or_exit(), gym_path)
    require_shared_database(settings, "campaign")
    if processes is not None and not settings.embedded:
        say_error("--processes: only on the embedded default (workers are `labrxiv worker`s)")
        raise typer.Exit(2)
    if stall_seconds is not None:
        settings = settings.model_copy(update={"stall_seconds": stall_seconds})
    budget_or_exit(
        attempts=attempts, wall_seconds=wall_seconds, tokens=tokens, dollars=dollars, steps=steps
    )
    campaign_budget = budget_or_exit(
        "--campaign-", tokens=campaign_tokens, dollars=campaign_dollars
    )
    http_url_or_exit("--review-base-url", review_base_url)
    # Recorded in every run.started and the review settings: the workers price the runs
    # and the reviews by this command's table, whatever their own.
    prices = PriceTable.load(settings.prices)
    given = {
        "--model": ("model", model is not None),
        "--phase-model": ("phase_models", bool(phase_model)),
        "--base-url": ("base_url", base_url is not None),
        "--temperature": ("temperature", temperature is not None),
        "--tool-protocol": ("tool_protocol", tool_protocol != TOOL_PROTOCOL),
        "--context-tokens": ("context_tokens", context_tokens != CONTEXT_TOKENS),
        "--phase-calls": ("phase_calls", phase_calls != PHASE_CALLS),
    }
    refuse_llm_options(given, model_settings(policy), f"these are --policy {policy} labs")
    llm = None
    if uses_model(policy):
        llm = _llm_config(
            model, phase_model, base_url, temperature, tool_protocol, context_tokens, phase_calls
        )
        llm = with_prices(llm, prices)
    agent_settings = _agent(policy, agent, agent_env, agent_reports, llm)
    plan = CampaignPlan(
        task=task,
        labs=labs,
        papers=papers,
        mode=_mode(mode),
        seed=seed,
        attempts=attempts,
        wall_seconds=wall_seconds,
        policy=policy,
        tokens=tokens,
        dollars=dollars,
        steps=steps,
        campaign_budget=campaign_budget,
        llm=llm,
        agent=agent_settings,
        review=_review_config(
            review,
            ReviewConfig.model_construct(
                reviews=reviews,
                accept_rating=accept_rating,
                rounds=review_rounds,
                model=review_model,
                base_url=review_base_url,
                tokens=reviewer_tokens,
                dollars=reviewer_dollars,
            ),
            prices,
        ),
        archive_reads="accepted" if archive_reads == "accepted" else "all",
    )
    plan = dataclasses.replace(plan, card=check_task(settings, task, policy).budgets)
    if gym_path and not settings.embedded:
        err.print(
            "[dim]note: --gym-path is this command's: workers find bundles by their "
            "LABRXIV_GYM_PATH[/]",
            soft_wrap=True,
        )
    outcome, left = _run(settings, plan, timeout, processes)
    raise typer.Exit(report_watch(outcome, left))


def _review_config(
    reviewer: str | None, asked: ReviewConfig, prices: PriceTable
) -> ReviewConfig | None:
    """The campaign's review settings (`asked`: the options, unchecked), recording the
    reviewer model's price in `prices`; exit 2 with one line naming what is wrong."""
    if reviewer is None:
        if asked.rounds:
            console.print("[red]--review-rounds needs --review (nothing reviews the papers)[/]")
            raise typer.Exit(2)
        return None
    if reviewer not in ("grounded", "llm"):
        console.print(
            f"[red]--review {escape(reviewer)}: the reviewers are grounded and llm[/]",
            soft_wrap=True,
        )
        raise typer.Exit(2)
    try:
        config = ReviewConfig.model_validate({**asked.__dict__, "reviewer": reviewer})
    except ValidationError as exc:
        first = exc.errors()[0]
        console.print(
            f"[red]--review {escape(reviewer)}: {escape(first['msg'])}[/]", soft_wrap=True
        )
        raise typer.Exit(2) from None
    if config.model is None:
        return config
    found = recorded_prices(prices, [config.model], config.prices)
    return config.model_copy(update={"prices": found})


def _llm_config(
    model: str | None,
    phase_model: list[str],
    base_url: str | None,
    temperature: float | None,
    tool_protocol: str,
    context_tokens: int,
    phase_calls: int,
) -> LlmConfig:
    phases = {}
    for item in phase_model:
        phase, equals, name = item.partition("=")
        if not equals or not phase or not name:
            say_error(f"--phase-model takes PHASE=MODEL (literature=gpt-4o-mini), not {item!r}")
            raise typer.Exit(2)
        phases[phase] = name
    return llm_config_or_exit(
        {
            "model": model,
            "phase_models": phases,
            "base_url": http_url_or_exit("--base-url", base_url),
            "temperature": temperature,
            "tool_protocol": tool_protocol,
            "context_tokens": context_tokens,
            "phase_calls": phase_calls,
        }
    )


def _agent(
    policy: str,
    agent: str | None,
    env: Path | None,
    reports: str | None,
    llm: LlmConfig | None,
) -> AgentConfig | None:
    """What agent labs run; exit 2 with one line naming what is wrong."""
    if policy != "agent":
        given = [name for name, value in (("--agent", agent), ("--agent-env", env),
                 ("--agent-reports", reports)) if value is not None]  # fmt: skip
        if given:
            say_error(f"{', '.join(given)}: only for --policy agent labs")
            raise typer.Exit(2)
        return None
    if agent is None:
        say_error("--policy agent needs --agent: a profile (" + ", ".join(profile_names())
                  + ") or a command line")  # fmt: skip
        raise typer.Exit(2)
    assert llm is not None
    try:
        return agent_config(agent, llm.model, env, reports)
    except AgentError as exc:
        say_error(str(exc))
        raise typer.Exit(2) from None


def _mode(value: str) -> Literal["isolated", "archive"]:
    return "archive" if value == "archive" else "isolated"


def _run(
    settings: Settings, plan: CampaignPlan, timeout: float, processes: int | None = None
) -> tuple[CampaignOutcome, list[Left] | None]:
    from labrxiv.wiring import open_bus, open_runner, open_store

    if settings.embedded:
        plan = dataclasses.replace(plan, sandbox=require_sandbox(settings))
        system = start_embedded(settings, plan.labs, plan.agent is not None, processes)
        try:
            with ctrl_c_between_ticks():
                outcome = run_campaign(
                    system.bus,
                    system.store,
                    plan,
                    console,
                    timeout,
                    stall_seconds=settings.stall_seconds,
                    reactor=system.ctx.reactor,
                    leases=system.ctx.leases,
                )
                detail = f"--timeout {timeout:g}s in labrxiv campaign"
                return outcome, settle_or_stop(system, outcome.finished, detail, outcome.campaign)
        except (KeyboardInterrupt, ChildDied):
            # This process is the only worker: say which runs it leaves, and how to go on.
            console.print("stopping: the steps being taken end first (Ctrl-C again to quit now)")
            say_stopped(console, stop_embedded(system, "Ctrl-C in labrxiv campaign"))
            raise typer.Exit(EXIT_INTERRUPTED) from None
        finally:
            system.close()
    store = open_store(settings)
    bus = open_bus(settings)
    try:
        outcome = run_campaign(
            bus,
            store,
            plan,
            console,
            timeout,
            stall_seconds=settings.stall_seconds,
            reactor=Reactor(store, bus, REACTIONS),
            leases=Leases(store, ttl=settings.stall_seconds),
        )
        open_runner(settings, store).catch_up()
        return outcome, None
    except KeyboardInterrupt:
        console.print(
            "stopped watching: the workers go on with the campaign "
            "(`labrxiv campaigns`, `labrxiv runs --campaign ID`)"
        )
        raise typer.Exit(EXIT_INTERRUPTED) from None
    finally:
        bus.close()


def reap_command(
    stall_seconds: StallSeconds = None,
) -> None:
    """Send the next step again for every unfinished run that has stalled (lost messages)."""
    from labrxiv.reading import find_log, open_log
    from labrxiv.wiring import open_bus
    from workers.lab.reaper import Reaper, unfinished_runs

    settings = settings_or_exit()
    quiet = stall_seconds or settings.stall_seconds
    if settings.embedded:
        console.print("[red]reap sends steps to workers: set LABRXIV_REDIS_URL[/]")
        raise typer.Exit(2)
    # The log the runs are in (never a new, empty one), and a broker that answers: with
    # no log or Redis away, `reap` said "sent 0 lost steps again" and exited 0.
    store = open_log(find_log(settings).settings)
    bus = open_bus(settings)
    try:
        leases = Leases(store, ttl=settings.stall_seconds)
        sent = Reaper(bus, store, timedelta(seconds=quiet), leases).reap(unfinished_runs(store))
    finally:
        bus.close()
    console.print(f"sent {counted(sent, 'lost step')} again")
