"""Small hand-built run streams for the detectors' unit tests: a run's events as a lab
step would record them (each step's events caused by the event before it)."""

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from events import Event
from events.ids import new_id
from events.payloads import (
    Budget,
    ExperimentScored,
    FileDigest,
    LlmConfig,
    Payload,
    RunFinished,
    RunStarted,
    ToolInvoked,
    ToolReturned,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


class RunLog:
    """A run's stream, built step by step."""

    def __init__(self, budget: Budget | None = None, llm: LlmConfig | None = None) -> None:
        started = RunStarted(
            task="t", lab="lab-0", policy="llm", budget=budget or Budget(attempts=4), llm=llm
        )
        self.events = [
            Event(id=new_id(), stream="run-t-0", version=0, occurred_at=T0, payload=started)
        ]
        self.calls = 0
        self.attempts = 0

    def step(self, *payloads: Payload, seconds: float = 1.0) -> list[Event]:
        """One lab step recording `payloads`, `seconds` after the last event."""
        cause = self.events[-1].id
        at = self.events[-1].occurred_at + timedelta(seconds=seconds)
        made = [
            Event(
                id=new_id(),
                stream="run-t-0",
                version=len(self.events) + i,
                occurred_at=at,
                causation_id=cause,
                payload=payload,
            )
            for i, payload in enumerate(payloads)
        ]
        self.events += made
        return made

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        exit_code: int = 0,
        preview: str = "",
        written: Sequence[tuple[str, str]] = (),
        deleted: Sequence[str] = (),
        duration_s: float = 0.1,
        then: Sequence[Payload] = (),
    ) -> list[Event]:
        """A step with one tool call: `written` as (path, sha256) pairs, `then` what it
        caused."""
        self.calls += 1
        call_id = f"c{self.calls}"
        return self.step(
            ToolInvoked(call_id=call_id, tool=tool, args=args or {}),
            ToolReturned(
                call_id=call_id,
                tool=tool,
                exit_code=exit_code,
                duration_s=duration_s,
                preview=preview,
                files_written=[FileDigest(path=p, sha256=sha) for p, sha in written],
                files_deleted=list(deleted),
            ),
            *then,
        )

    def evaluate(
        self, normalized: float | None, baseline: float = 0.2, **scores: float
    ) -> list[Event]:
        """An evaluation: scored (`normalized` given) or failed (None)."""
        self.attempts += 1
        if normalized is None:
            return self.call(
                "evaluate", exit_code=1, preview=f"error: attempt {self.attempts} failed"
            )
        scored = ExperimentScored(
            attempt=self.attempts,
            subtask_scores=scores or {"accuracy": normalized},
            score=normalized,
            normalized_score=normalized,
            baseline_normalized=baseline,
        )
        return self.call("evaluate", preview=f"attempt {self.attempts}", then=[scored])

    def finish(self, reason: str = "done") -> list[Event]:
        return self.step(RunFinished(reason=reason))  # type: ignore[arg-type]


def sha(text: str) -> str:
    """A stand-in content hash (64 hex digits) named by `text`."""
    return (text.encode().hex() * 64)[:64]
