"""Every run's behaviour from one pass over a log (or a campaign's part of it).

Runs interleave in the log (a campaign's labs work in parallel), so a tally is kept per
run that has started and not finished; a run's figures are given, and its tally dropped,
at its `run.finished`. Memory is bounded by the runs open at once, never by the log.
"""

from collections.abc import Iterable, Iterator

from analysis.figures import Behaviour
from analysis.tally import BehaviourTally, Record
from events.streams import RUN_PREFIX


def behaviours(records: Iterable[Record]) -> Iterator[Behaviour]:
    """The behaviour of each run in `records` (position order): finished runs as they
    finish, then the runs still open at the end of `records`, oldest first. Events of
    other streams (campaigns) are skipped, and so is a run whose `run.started` is not in
    `records` (a read that starts after it)."""
    open_runs: dict[str, BehaviourTally] = {}
    for record in records:
        stream = record.stream
        if not stream.startswith(RUN_PREFIX):
            continue
        tally = open_runs.get(stream)
        if tally is None:
            if record.version != 0:
                continue
            tally = open_runs[stream] = BehaviourTally(stream)
        tally.add(record)
        if record.type == "run.finished":
            del open_runs[stream]
            yield tally.result()
    for tally in open_runs.values():
        yield tally.result()
