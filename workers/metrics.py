"""System metrics of the processes that act: the recorder, lab steps, tasks, the reaper.

Counters and histograms only, counted at the seams where the work happens (never per
read model). Every label takes its values from a fixed set (the event catalogue, the
handlers' names, the policies, the outcomes below), so the series stay bounded
(docs/metrics.md lists each one).

In a prefork pool every child counts in its own process: `labrxiv worker
--metrics-port` sets `PROMETHEUS_MULTIPROC_DIR` before this module is imported, so these
objects write to memory-mapped files that the worker's main process sums at each scrape
(`workers.metrics_serve`). A child killed with SIGKILL leaves its file behind, and its
counts stay in the sum: that is the point. Without the variable (embedded mode, tests,
`labrxiv reactor`) they count in the process's own registry.
"""

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

from events import Event


@dataclass(frozen=True)
class Metrics:
    """The system metrics of this process (see the module's docstring)."""

    events_recorded: Any
    events_skipped: Any
    diverged_takes: Any
    batch_events: Any
    append_seconds: Any
    dead_letters: Any
    step_seconds: Any
    task_seconds: Any
    task_retries: Any
    task_redeliveries: Any
    reaped_steps: Any


_MAKING = threading.Lock()
"""Held while the metrics are made: `cache` alone let two threads' first uses make them
twice, and the second set is refused by the registry."""


def metrics() -> Metrics:
    """This process's metrics, made on first use: prometheus-client picks its value class
    (in memory, or files for a prefork pool) when it is first imported, so importing this
    module must not import it (`workers.metrics_serve.use_folder` comes first)."""
    with _MAKING:
        return _made()


@cache
def _made() -> Metrics:
    from prometheus_client import Counter, Histogram

    return Metrics(
        events_recorded=Counter(
            "labrxiv_events_recorded",
            "Events the recorder appended to the log, by event type (duplicates the store "
            "skipped are not counted here).",
            ["type"],
        ),
        events_skipped=Counter(
            "labrxiv_events_skipped",
            "Events the recorder sent to the store that it already held (a redelivered "
            "message), or that were part of a step's second take left out whole.",
        ),
        diverged_takes=Counter(
            "labrxiv_diverged_takes",
            "Second takes of a lab step that came out longer than the first, recorded one: "
            "left out whole (a step taken twice: a reaction sent again, the reaper). A take "
            "no longer than the first is skipped as a redelivery and not counted here.",
        ),
        batch_events=Histogram(
            "labrxiv_recorder_batch_events",
            "Events in one message the recorder read (valid or not).",
            buckets=(1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000),
        ),
        append_seconds=Histogram(
            "labrxiv_recorder_append_duration_seconds",
            "Seconds one append to the log took (one transaction).",
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        ),
        dead_letters=Counter(
            "labrxiv_dead_letters",
            "Dead letters written, by the kind of reason (`dead_letter_reason`).",
            ["reason"],
        ),
        step_seconds=Histogram(
            "labrxiv_step_duration_seconds",
            "Seconds one lab step took, by policy and outcome.",
            ["policy", "outcome"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
        ),
        task_seconds=Histogram(
            "labrxiv_task_duration_seconds",
            "Seconds one task (a handler run by either bus) took, by task and outcome.",
            ["task", "outcome"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
        ),
        task_retries=Counter(
            "labrxiv_task_retries",
            "Tasks put back on their queue to run again later, by task and why: `later` (the "
            "handler asked, e.g. a stream behind) or `transient` (database or broker away).",
            ["task", "reason"],
        ),
        task_redeliveries=Counter(
            "labrxiv_task_redeliveries",
            "Task messages delivered again by the broker (a worker died or its visibility "
            "timeout passed before the ack).",
            ["task"],
        ),
        reaped_steps=Counter(
            "labrxiv_reaper_resent_steps",
            "Steps of stalled runs the reaper sent again.",
        ),
    )


STEP_OUTCOMES = ("acted", "done", "budget", "error", "cancelled", "skipped", "later", "raised")
"""How a step ended: it published events and the run goes on (`acted`), it ended the run
(its `run.finished` reason), it had nothing to do (`skipped`: already taken, a stale
trigger or a finished run), it asked to be run later, or it raised (retried by its task)."""
TASK_OUTCOMES = ("done", "retried", "dead_lettered", "failed")

DEAD_LETTER_REASONS: tuple[tuple[str, str], ...] = (
    ("message is not valid Unicode", "not_unicode"),
    ("message of ", "too_large"),
    ("message is not JSON", "not_json"),
    ("message is not an object", "not_a_batch"),
    ("blob ", "bad_blob"),
    ("'blobs'", "bad_blob"),
    ("invalid event", "invalid_event"),
    ("duplicate id", "duplicate_id"),
    ("version conflict", "version_conflict"),
    ("wrong arguments", "wrong_arguments"),
    ("the handler raised", "handler_raised"),
)
"""Reason text prefix → the `reason` label. The texts carry details (sizes, paths, ids);
the label keeps only their kind, so the series stay bounded."""
UNDELIVERABLE = "undeliverable"
"""The `reason` of a message on a queue that was not a task the worker could run (the
consumer's reason, written by `record_dead_letter`)."""
REASON_LABELS = (*dict.fromkeys(label for _, label in DEAD_LETTER_REASONS), UNDELIVERABLE)
"""Every `reason` label value, `other` aside."""


def dead_letter_reason(text: str) -> str:
    """The `reason` label of a dead letter's reason text (`other` for one not listed)."""
    for prefix, label in DEAD_LETTER_REASONS:
        if text.startswith(prefix):
            return label
    return "other"


def count_dead_letter(text: str) -> None:
    """Count a dead letter written with reason `text`."""
    metrics().dead_letters.labels(dead_letter_reason(text)).inc()


def count_undeliverable() -> None:
    """Count a dead letter of a message that was not a task the worker could run."""
    metrics().dead_letters.labels(UNDELIVERABLE).inc()


def count_diverged(takes: int) -> None:
    """Count second takes of a step left out whole (`events.store.Diverged`)."""
    if takes:
        metrics().diverged_takes.inc(takes)


def count_recorded(appended: Sequence[Event], skipped: int) -> None:
    """Count what one append wrote (by type) and what it found already there."""
    by_type: dict[str, int] = {}
    for event in appended:
        by_type[event.type] = by_type.get(event.type, 0) + 1
    for kind, count in by_type.items():
        metrics().events_recorded.labels(kind).inc(count)
    if skipped:
        metrics().events_skipped.inc(skipped)


def policy_label(policy: str | None) -> str:
    """The `policy` label of a step: a policy the registry has, `unknown` (no run) or
    `other` (the label stays bounded even if a run names a policy this worker lacks)."""
    # Imported here: the recorder and the buses count through this module and need no policy.
    from workers.lab.policies import policy_names

    if policy is None:
        return "unknown"
    return policy if policy in policy_names() else "other"


@contextmanager
def timed_append() -> Iterator[None]:
    """Observe the seconds an append to the log took (also when it raised)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        metrics().append_seconds.observe(time.perf_counter() - started)


def observe_batch(events: int) -> None:
    """Observe the number of events in one message the recorder read."""
    metrics().batch_events.observe(events)


def observe_step(policy: str | None, outcome: str, started: float) -> None:
    """Observe one lab step of `policy` that began at `started` (`time.perf_counter()`)."""
    seconds = time.perf_counter() - started
    metrics().step_seconds.labels(policy_label(policy), outcome).observe(seconds)


def observe_task(task: str, outcome: str, started: float) -> None:
    """Observe one task run that began at `started` (`time.perf_counter()`)."""
    metrics().task_seconds.labels(task, outcome).observe(time.perf_counter() - started)


RETRY_REASONS = ("later", "transient")
"""Why a task is retried (`count_retry`)."""


def known_task(task: str) -> None:
    """Export 0 for a task's retry and redelivery series from the start, as Prometheus
    advises for label sets known in advance: a series that appears only at its first
    count leaves `rate()` and `increase()` with nothing to say until then, and dashboards
    and rules that read it show no data in a healthy run."""
    for reason in RETRY_REASONS:
        metrics().task_retries.labels(task, reason)
    metrics().task_redeliveries.labels(task)


def count_retry(task: str, reason: str) -> None:
    """Count a task put back on its queue (`later` or `transient`)."""
    metrics().task_retries.labels(task, reason).inc()


def count_redelivery(task: str) -> None:
    """Count a task message the broker delivered again."""
    metrics().task_redeliveries.labels(task).inc()


def count_reaped(steps: int) -> None:
    """Count steps of stalled runs sent again."""
    metrics().reaped_steps.inc(steps)
