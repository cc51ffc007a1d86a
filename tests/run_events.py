"""A run's first event, built for tests that append straight into the log (no reaction,
no step sent)."""

from events import Event
from events.ids import new_id, utcnow
from events.payloads import Budget, RunStarted


def run_started(stream: str, campaign: str | None = None) -> Event:
    """`run.started` of a `search` run on continual-digits of one paper and one attempt."""
    return Event(
        id=new_id(),
        stream=stream,
        version=0,
        occurred_at=utcnow(),
        correlation_id=campaign,
        actor="lab-0",
        payload=RunStarted(
            task="continual-digits",
            lab="lab-0",
            policy="search",
            budget=Budget(attempts=1),
            papers=1,
        ),
    )
