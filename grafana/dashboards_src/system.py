"""System: queues, the recorder, projections, steps, dead letters and retries."""

from grafanalib.core import Dashboard, Stat, TimeSeries

from grafana.dashboards_src.common import PROMETHEUS, RATE, prom
from grafana.dashboards_src.common import dashboard as layout


def quantile(q: float, histogram: str, by: str = "") -> str:
    """The `q` quantile of a histogram over the rate window, by `by` labels (if any)."""
    labels = ", ".join(["le", *filter(None, [by])])
    return f"histogram_quantile({q}, sum by ({labels}) (rate({histogram}_bucket[{RATE}])))"


def series(title: str, unit: str, *targets: tuple[str, str], description: str = "") -> TimeSeries:
    """A time series panel on Prometheus, one target per (expression, legend)."""
    refs = "ABCDEFGH"
    return TimeSeries(
        title=title,
        description=description,
        dataSource=PROMETHEUS,
        targets=[prom(expr, legend, refs[i]) for i, (expr, legend) in enumerate(targets)],
        unit=unit,
    )


def dashboard() -> Dashboard:
    """The System dashboard."""
    return layout(
        "labrxiv: System",
        "labrxiv-system",
        "Queue depth, recorder throughput and latency, projection lag, step latency, "
        "dead letters, retries.",
        [
            (
                series(
                    "Queue depth",
                    "short",
                    ("sum by (queue) (labrxiv_queue_messages)", "{{queue}} waiting"),
                    ("sum(labrxiv_queue_unacked_messages)", "unacked"),
                    description="From Redis, by the exporter.",
                ),
                12,
            ),
            (
                series(
                    "Projection lag",
                    "s",
                    ("max by (projector) (labrxiv_projection_lag_seconds)", "{{projector}}"),
                    description="Age of the oldest event a projector has not applied; 0 when "
                    "caught up.",
                ),
                12,
            ),
            (
                series(
                    "Recorder throughput",
                    "ops",
                    (
                        f"sum by (type) (rate(labrxiv_events_recorded_total[{RATE}]))",
                        "{{type}}",
                    ),
                    (f"sum(rate(labrxiv_events_skipped_total[{RATE}]))", "skipped (redelivered)"),
                    description="Events appended per second, by type.",
                ),
                12,
            ),
            (
                series(
                    "Recorder append latency",
                    "s",
                    (quantile(0.5, "labrxiv_recorder_append_duration_seconds"), "p50"),
                    (quantile(0.95, "labrxiv_recorder_append_duration_seconds"), "p95"),
                    (
                        f"sum(rate(labrxiv_recorder_append_duration_seconds_sum[{RATE}]))"
                        f" / sum(rate(labrxiv_recorder_append_duration_seconds_count[{RATE}]))",
                        "mean",
                    ),
                ),
                12,
            ),
            (
                series(
                    "Step latency",
                    "s",
                    (quantile(0.5, "labrxiv_step_duration_seconds", "policy"), "p50 {{policy}}"),
                    (quantile(0.95, "labrxiv_step_duration_seconds", "policy"), "p95 {{policy}}"),
                ),
                12,
            ),
            (
                series(
                    "Projection lag (events)",
                    "short",
                    ("max by (projector) (labrxiv_projection_lag_events)", "{{projector}}"),
                ),
                12,
            ),
            (
                series(
                    "Dead letters",
                    "short",
                    (
                        f"sum by (reason) (increase(labrxiv_dead_letters_total[{RATE}]))",
                        "{{reason}}",
                    ),
                    description="Full reasons: `labrxiv events dead`.",
                ),
                8,
            ),
            (
                series(
                    "Retries and redeliveries",
                    "short",
                    (
                        f"sum by (task, reason) (increase(labrxiv_task_retries_total[{RATE}]))",
                        "retry {{task}} {{reason}}",
                    ),
                    (
                        f"sum by (task) (increase(labrxiv_task_redeliveries_total[{RATE}]))",
                        "redelivered {{task}}",
                    ),
                    (
                        f"sum(increase(labrxiv_reaper_resent_steps_total[{RATE}]))",
                        "reaper resent steps",
                    ),
                ),
                8,
            ),
            (
                series(
                    "Task latency p95",
                    "s",
                    (quantile(0.95, "labrxiv_task_duration_seconds", "task"), "{{task}}"),
                ),
                8,
            ),
            (
                Stat(
                    title="Log head",
                    description="Position of the last event in the log.",
                    dataSource=PROMETHEUS,
                    targets=[prom("max(labrxiv_log_head_position)")],
                    format="short",
                ),
                8,
            ),
            (
                series(
                    "Recorder batch size p95",
                    "short",
                    (quantile(0.95, "labrxiv_recorder_batch_events"), "p95 events per message"),
                ),
                16,
            ),
        ],
    )
