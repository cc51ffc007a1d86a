"""`labrxiv fork RUN --at K`: a new run that starts from a recorded run's first K steps
(no model or tool call made again) and goes on live with other settings: "would a
stronger model have recovered from here?"."""

import typer

from events import EventStore
from events.payloads import LlmConfig
from events.streams import RUN_PREFIX
from labrxiv.cli_bounds import INT64_MAX, count_option
from labrxiv.cli_checks import (
    budget_or_exit,
    http_url_or_exit,
    llm_config_or_exit,
    refuse_llm_options,
)
from labrxiv.cli_common import (
    GymPath,
    WatchTimeout,
    open_found_log,
    settings_or_exit,
    with_gym_path,
)
from labrxiv.cli_errors import say_error
from labrxiv.cli_labs import check_task, console, require_sandbox
from labrxiv.cli_resume import Watched, follow
from labrxiv.errors import ShellError
from labrxiv.lookup import pick_prefixed
from labrxiv.service_start import require_shared_database
from workers.bus.base import Bus
from workers.lab.campaign import CampaignPlan
from workers.lab.fork import ForkError, fork_budget, fork_point, start_fork, used_up_at
from workers.lab.policies import model_settings, uses_model
from workers.llm.prices import PriceTable, with_prices


def fork(
    run: str = typer.Argument(..., help="The run to fork: run-<campaign>-<lab> or a prefix."),
    at: int = typer.Option(
        ..., "--at", min=0, help="The last step the fork keeps (replay's).", max=INT64_MAX
    ),
    policy: str | None = typer.Option(None, "--policy", help="The fork's policy (the run's)."),
    model: str | None = typer.Option(None, "--model", help="llm: the fork's model."),
    base_url: str | None = typer.Option(None, "--base-url", help="llm: the fork's endpoint."),
    temperature: float | None = typer.Option(None, "--temperature", help="llm."),
    seed: int | None = typer.Option(
        None, "--seed", help="The fork's seed (the run's).", max=INT64_MAX, min=0
    ),
    attempts: int | None = count_option("--attempts", "Attempts budget."),
    tokens: int | None = count_option("--tokens", "Model tokens budget."),
    dollars: float | None = typer.Option(None, "--dollars", help="Model dollars budget."),
    steps: int | None = count_option("--steps", "Steps budget: tool calls."),
    wall_seconds: float | None = typer.Option(None, "--wall-seconds", help="Time budget."),
    timeout: WatchTimeout = 3600,
    gym_path: GymPath = None,
) -> None:
    """Fork a run after its step K and run the fork with the given settings.

    The fork inherits the run's events up to the end of step K (its attempts, papers,
    conversation, spend) and its workspace as it was then, rebuilt from the log; budgets
    count the inherited part too (unset ones are the run's). An agent run's fork starts
    its agent again on the starter workspace, its parent's calls up to step K answered
    from the log (docs/agents.md, "Fork"). Exit codes as `campaign`'s."""
    require_shared_database(settings_or_exit(), "fork")
    settings, store = open_found_log(with_gym_path(settings_or_exit(), gym_path))
    runs = {r.stream for r in store.iter_records(types=["run.started"])}
    stream = pick_prefixed("run", RUN_PREFIX, run, runs, "labrxiv runs lists them")
    try:
        point, parent, _ = fork_point(store, stream, at)
    except ForkError as exc:
        raise ShellError(str(exc)) from None
    chosen = policy or parent.policy
    check_task(settings, parent.task, chosen)
    llm = _llm(parent.llm, chosen, model, base_url, temperature)
    if llm is not None:  # the parent's recorded prices first, then this command's table
        llm = with_prices(llm, PriceTable.load(settings.prices))
    given = budget_or_exit(
        attempts=attempts, tokens=tokens, dollars=dollars, steps=steps, wall_seconds=wall_seconds
    )
    budget, source = fork_budget(parent, given)
    spent = used_up_at(store, point, budget)
    if spent is not None:
        name = spent.budget.replace("_", " ")
        limit = (
            f"--{spent.budget.replace('_', '-')} {spent.limit:g}"
            if getattr(given, spent.budget) is not None
            else f"the run's {name} limit, {spent.limit:g},"
        )
        say_error(
            f"{limit}: the fork inherits {spent.used:g} {name} by step {at}; "
            "give a larger limit or an earlier step"
        )
        raise typer.Exit(2)
    started = store.read_records(types=["campaign.started"], correlation=_campaign(store, stream))
    mode = started[0].payload["mode"] if started else "isolated"
    sandbox = require_sandbox(settings) if settings.embedded else None

    def act(bus: Bus) -> Watched:
        campaign, fork_stream = start_fork(
            bus, point, parent, mode, chosen, llm, (budget, source), seed, sandbox
        )
        console.print(f"{fork_stream}: a fork of {stream} after step {at}")
        plan = CampaignPlan(
            task=parent.task,
            labs=1,
            papers=parent.papers,
            mode="archive" if mode == "archive" else "isolated",
            seed=parent.seed if seed is None else seed,
            attempts=budget.attempts,
            policy=chosen,
        )
        return Watched(campaign, [fork_stream], plan)

    title = f"fork of {stream} after step {at}"
    raise typer.Exit(follow(settings, store, act, timeout, title, working=(1, chosen == "agent")))


def _campaign(store: EventStore, stream: str) -> str | None:
    """The campaign of the run (its first event's correlation id)."""
    first = store.read_records(stream=stream, limit=1)
    return first[0].correlation_id if first else None


def _llm(
    parent: LlmConfig | None,
    policy: str,
    model: str | None,
    base_url: str | None,
    temperature: float | None,
) -> LlmConfig | None:
    """The fork's model settings: the run's, with what was given instead."""
    given = {
        "--model": ("model", model is not None),
        "--base-url": ("base_url", base_url is not None),
        "--temperature": ("temperature", temperature is not None),
    }
    refuse_llm_options(given, model_settings(policy), f"this fork is a --policy {policy} run")
    if not uses_model(policy):
        return None
    if parent is None and model is None:
        say_error("an llm fork of a run that had no model needs --model")
        raise typer.Exit(2)
    changes = {
        key: value
        for key, value in (
            ("model", model),
            ("base_url", http_url_or_exit("--base-url", base_url)),
            ("temperature", temperature),
        )
        if value is not None
    }
    inherited = parent.model_dump() if parent is not None else {}
    return llm_config_or_exit({**inherited, **changes})
