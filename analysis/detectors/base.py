"""What every detector shares: it reads the run once (`view.read_run`) and reports what
it saw with the ids of the events that prove it."""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from uuid import UUID

from analysis.detectors.view import DetectorView, read_run
from analysis.finding import Finding, Mode, Severity
from events.recorded import Fact

Seen = tuple[Severity, str, Iterable[UUID | None]]
"""What a detector saw: severity, a one-sentence summary with the numbers, and its proof."""

Find = Callable[[DetectorView], Iterable[Seen]]


@dataclass(frozen=True)
class ViewDetector:
    """A detector: a pure function of a run's events (`analysis.finding.Detector`),
    written on the run's view so that `detect` reads a run once for all of them."""

    name: str
    mode: Mode
    find: Find

    def __call__(self, events: Sequence[Fact]) -> list[Finding]:
        return self.on(read_run(events))

    def on(self, run: DetectorView) -> list[Finding]:
        """The findings in a run already read."""
        return [self._finding(*seen) for seen in self.find(run)]

    def _finding(self, severity: Severity, summary: str, ids: Iterable[UUID | None]) -> Finding:
        proof = tuple(dict.fromkeys(i for i in ids if i is not None))
        if not proof:  # a finding nobody can check is a bug of the detector
            raise ValueError(f"{self.name}: a finding must cite at least one event")
        return Finding(self.mode, self.name, severity, summary, proof)


def detector(name: str, mode: Mode) -> Callable[[Find], ViewDetector]:
    """Declare `find` (a run's view → what it saw) as the detector `name` of `mode`."""

    def wrap(find: Find) -> ViewDetector:
        return ViewDetector(name, mode, find)

    return wrap
