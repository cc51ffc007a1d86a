"""Stream names and the ids of the events in them: the one place either is made.

A stream is named `<kind>-<id>`: the kind says what the stream is about, the id which
one. The names are the log's addresses, read back from disk, so they never change
shape. Every other module asks this one for a name (`run_stream`, `campaign_stream`…),
for the kind or id of a name (`stream_kind`, `stream_id`), and for the id of the event
at a stream's version (`event_id_at`), which a producer that may run twice derives so
the log keeps one copy.
"""

import re
import uuid
from datetime import datetime
from typing import Literal, get_args

from events.ids import derived_id

StreamKind = Literal["run", "campaign", "review", "revieweval", "inspect"]
"""A lab run's stream (a fork's too), a campaign's own events, a paper's reviews and
decision, a reviewer evaluation's model calls, an LLM inspection's."""

KINDS: tuple[StreamKind, ...] = get_args(StreamKind)
"""Every kind of stream labrxiv writes."""

STREAM_PATTERN = r"^[a-z][a-z0-9_]*-[A-Za-z0-9_.:-]{1,160}$"
"""A well-formed stream name (the log accepts kinds beyond `KINDS`: hand-made logs)."""
_STREAM_RE = re.compile(STREAM_PATTERN)


def stream_prefix(kind: StreamKind) -> str:
    """What every stream of `kind` begins with: `run-` for `run`."""
    return f"{kind}-"


ENDS = frozenset({"run.finished"})
"""Event types after which their stream takes no more events: a run ends once."""

RUN_PREFIX = stream_prefix("run")
CAMPAIGN_PREFIX = stream_prefix("campaign")


def run_stream(run_id: str) -> str:
    """The stream of the run `run_id` names (`<campaign>-<lab index>`)."""
    return RUN_PREFIX + run_id


def lab_run_stream(campaign: str, lab: int) -> str:
    """The stream of the run of lab number `lab` of `campaign` (a fork's lab is 0)."""
    return run_stream(f"{campaign}-{lab}")


def campaign_stream(campaign: str) -> str:
    """The stream of a campaign's own events (started, interrupted, finished)."""
    return CAMPAIGN_PREFIX + campaign


def review_stream(paper_id: str) -> str:
    """The stream of a paper's reviews and decision."""
    return stream_prefix("review") + paper_id


def review_eval_stream(evaluation: str) -> str:
    """The stream of a reviewer evaluation's model calls."""
    return stream_prefix("revieweval") + evaluation


def inspect_stream(inspection: str) -> str:
    """The stream of an LLM inspection of a run."""
    return stream_prefix("inspect") + inspection


def stream_kind(stream: str) -> str:
    """The kind of a stream name: `run` for `run-1234`."""
    return stream.split("-", 1)[0]


def stream_id(stream: str) -> str:
    """What a stream name says after its kind: `c1-0` for `run-c1-0`."""
    return stream.split("-", 1)[-1]


def is_stream(name: str) -> bool:
    """Whether `name` is a well-formed stream name."""
    return bool(_STREAM_RE.match(name))


def event_id_at(stream: str, version: int, at: datetime) -> uuid.UUID:
    """The id of the event at `version` of `stream`, time-ordered at `at`: the same for
    every producer that writes that version from the same `at`."""
    return derived_id(f"{stream}:{version}", at)
