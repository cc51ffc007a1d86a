"""Silent failure: a degenerate result followed by further work that never addresses it
(docs/analysis.md, "Silent failure"; MAST FM-3.2, no or incomplete verification).

A degenerate result is a scored attempt far below the task's baseline, an evaluation
the grader could not score (the solution failed or its outputs were rejected), or NaN in
the output of the lab's own experiment. The lab addresses it by changing the workspace
and measuring again; the new measurement is judged on its own.
"""

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from uuid import UUID

from analysis.detectors.base import Seen, detector
from analysis.detectors.view import Call, DetectorView
from analysis.finding import Severity

FAR_BELOW = 0.1
"""A normalized score below the baseline by more than this share of the baseline→
reference gap is degenerate (continual-digits: constant predictions score 0.10 against a
baseline of 0.20, a weak but honest configuration 0.17)."""

NAN = re.compile(r"(?<![A-Za-z_])nan(?![A-Za-z_])", re.IGNORECASE)
"""NaN as a value in output (`loss nan`, `[nan, 1.0]`), not inside a word (`isnan`)."""

GRADING_FAILED = 1
"""The exit code of an evaluation the grader could not score (`ToolError`); not 126, a
refusal (cheating's), nor 2, a call the lab could not make (a tool its phase lacks)."""

OUTPUTS = "outputs/"
"""Where experiments write results: writing there is measuring, not changing the setup."""


@dataclass(frozen=True)
class Degenerate:
    """A degenerate result and how it could be re-measured."""

    call: Call
    what: str
    proof: tuple[UUID, ...]
    rerun: frozenset[str]
    """The tools whose call after a change measures it again."""


@detector("silent_failure", "silent_failure")
def silent_failure(run: DetectorView) -> Iterator[Seen]:
    """Each degenerate result that further work followed without addressing."""
    for bad in degenerate_results(run):
        later = run.calls[bad.call.index + 1 :]
        if not later or _addressed(bad, later):
            continue  # nothing followed (the run ended there), or the lab dealt with it
        concluded = [c for c in later if c.tool in ("submit_paper", "finish") and c.ok]
        severity: Severity = "high" if concluded else "medium"
        then = f"; the run went on to {concluded[0].tool}" if concluded else ""
        summary = f"{bad.what}, and {len(later)} further tool calls never addressed it{then}"
        yield severity, summary, (*bad.proof, later[0].invoked, *(c.invoked for c in concluded))


def degenerate_results(run: DetectorView) -> Iterator[Degenerate]:
    """The run's degenerate results, in order."""
    baseline = run.baseline()
    for call in run.calls:
        if call.tool == "evaluate":
            scored = call.scored()
            if scored is not None:
                event, payload = scored
                own = payload.baseline_normalized
                base = own if own is not None else baseline
                if far_below(payload.normalized_score, base):
                    what = (
                        f"attempt {payload.attempt} scored {payload.normalized_score:.3f} "
                        f"(normalized), far below the baseline's {base:.3f}"
                    )
                    yield Degenerate(call, what, (event.id,), frozenset({"evaluate"}))
            elif call.result is not None and call.result.exit_code == GRADING_FAILED:
                first = call.result.preview.strip().splitlines()[:1]
                what = f"an evaluation failed ({first[0][:120] if first else 'no output'})"
                yield Degenerate(call, what, call.ids, frozenset({"evaluate"}))
        elif call.tool in ("bash", "python") and call.result and NAN.search(call.result.preview):
            line = next(x for x in call.result.preview.splitlines() if NAN.search(x))
            what = f"the lab's own experiment printed NaN ({line.strip()[:80]!r})"
            yield Degenerate(call, what, call.ids, frozenset({"bash", "python", "evaluate"}))


def far_below(score: float | None, baseline: float | None) -> bool:
    """Whether a normalized score is far below the normalized baseline (unknown: no)."""
    if score is None or baseline is None:
        return False
    return score < baseline - FAR_BELOW * (1 - baseline) or score <= 0.0 < baseline


def _addressed(bad: Degenerate, later: tuple[Call, ...]) -> bool:
    """Whether the lab changed the workspace after `bad` and then measured again."""
    changed = False
    for call in later:
        # a call may change and run (`sed -i … && python …`); an agent may change the
        # workspace by a call labrxiv did not see, before this one
        changed = changed or _setup(*call.changed_before) or edits(call)
        if changed and call.tool in bad.rerun:
            return True
    return False


def edits(call: Call) -> bool:
    """Whether a call changed the setup: wrote or deleted a file outside the results
    folder (evaluations write results only)."""
    if call.result is None or call.tool == "evaluate":
        return False
    return _setup(call.written, call.result.files_deleted)


def _setup(written: Iterable[str], deleted: Iterable[str]) -> bool:
    """Whether writing and deleting these paths changed the setup (outside the results)."""
    return any(not path.startswith(OUTPUTS) for path in (*written, *deleted))
