"""Parallel-experiment trouble: experiments that tread on each other's results, and
results credited to the wrong configuration (docs/analysis.md, "Parallel-experiment
trouble"; ResearchGym's "difficulty coordinating parallel experiments", MAST FM-2.6,
reasoning–action mismatch).

- `concurrent_runs`: one call that starts the same program twice or more in the
  background, in one workspace, so they write the same outputs;
- `overwritten_result`: a result one experiment wrote is overwritten, unread, by another
  experiment with different content, and then read: what is read is not what the first
  experiment produced;
- `config_mismatch`: a paper credits an attempt to a configuration other than the one the
  attempt was scored with.
"""

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from analysis.detectors.base import Seen, detector
from analysis.detectors.view import Call, DetectorView
from events.payloads import ExperimentScored, PaperSubmitted
from events.recorded import Fact
from runstate.best import best_scored

BACKGROUND = re.compile(r"(?<![&|>])&(?![&>])")
"""A single `&` ending a job (not `&&`, `2>&1` or `&>`)."""
SEPARATOR = re.compile(r"(?<![&|>])&(?![&>])|;|\n")
PROGRAM = re.compile(r"\b(?:python3?|bash|sh)\s+(?:-\S+\s+)*([\w./-]+\.(?:py|sh))")
"""A script a job runs."""
RUNS_CODE = re.compile(r"\bpython3?\b")
POPEN = re.compile(r"\bPopen\(")
POOL = re.compile(r"\b(?:ProcessPoolExecutor|multiprocessing\.Pool|Pool)\(")
LOOP = re.compile(r"^\s*(?:for|while)\b.*:\s*$")
COMPREHENSION = re.compile(r"\bPopen\(.*\bfor\b.*\bin\b")
"""Python that starts processes side by side."""
CONFIG = "config.json"
"""The configuration file the tasks' solutions read (the name `runstate` folds too)."""


@detector("concurrent_runs", "parallel_trouble")
def concurrent_runs(run: DetectorView) -> Iterator[Seen]:
    """Each call that started one program twice or more at once and wrote files."""
    for call in run.calls:
        if not call.written:
            continue
        if call.tool == "bash":
            programs = background_programs(call.text)
            twice = sorted({p for p in programs if programs.count(p) > 1})
            started = f"ran {', '.join(twice)} {programs.count(twice[0])} times" if twice else ""
        elif call.tool == "python":
            started = "started processes without waiting for each" if spawns(call.text) else ""
        else:
            continue
        if started:
            shown = ", ".join(sorted(call.written)[:3])
            yield (
                "medium",
                (
                    f"one {call.tool} call {started} at once in one workspace; they wrote "
                    f"{len(call.written)} files ({shown}…) between them"
                ),
                call.ids,
            )


def background_programs(command: str) -> list[str]:
    """The scripts a shell command starts in the background, one entry per job."""
    programs: list[str] = []
    start = 0
    for separator in SEPARATOR.finditer(command + "\n"):
        job = command[start : separator.start()]
        start = separator.end()
        if BACKGROUND.fullmatch(separator.group()):
            programs += PROGRAM.findall(job)[-1:]
    return programs


def spawns(code: str) -> bool:
    """Whether Python code starts processes that run side by side: `Popen` twice, or in a
    loop or comprehension, or a pool of processes."""
    if POOL.search(code):
        return True
    lines = code.splitlines()
    starts = [i for i, line in enumerate(lines) if POPEN.search(line)]
    return len(starts) > 1 or any(_in_loop(lines, i) for i in starts)


def _in_loop(lines: list[str], index: int) -> bool:
    """Whether line `index` repeats: it holds a comprehension, or the nearest less
    indented line above it opens a loop."""
    line = lines[index]
    if COMPREHENSION.search(line):
        return True
    indent = len(line) - len(line.lstrip())
    for above in reversed(lines[:index]):
        if above.strip() and len(above) - len(above.lstrip()) < indent:
            return LOOP.match(above) is not None
    return False


@dataclass
class _Written:
    """The last content of a path, who wrote it, and what happened to the one before."""

    call: Call
    sha256: str | None
    read: bool = False
    clobbered: Call | None = None
    """The experiment whose unread result this write replaced."""


@detector("overwritten_result", "parallel_trouble")
def overwritten_result(run: DetectorView) -> Iterator[Seen]:
    """Each read of a result that another experiment overwrote before it was read."""
    files: dict[str, _Written] = {}
    for call in run.calls:
        hit = [(p, w) for p, w in files.items() if w.clobbered is not None and reads(call, p)]
        for path, written in files.items():
            if reads(call, path):
                written.read = True
        if hit:
            path, written = hit[0]
            assert written.clobbered is not None
            paths = ", ".join(p for p, _ in hit[:3])
            yield (
                "medium",
                (
                    f"{call.tool} read {paths} after call {written.call.index} overwrote what "
                    f"call {written.clobbered.index} had written there, unread"
                ),
                (*written.clobbered.ids, *written.call.ids, call.invoked),
            )
            for _, overwritten in hit:
                overwritten.clobbered = None
        if not experiment(call):
            continue
        for path, sha256 in call.written.items():
            before = files.get(path)
            clobbered = None
            if before is not None and not before.read and _differ(before.sha256, sha256):
                clobbered = before.call
            files[path] = _Written(call, sha256, clobbered=clobbered)


def experiment(call: Call) -> bool:
    """Whether a call runs an experiment (code that produces results)."""
    if call.tool in ("evaluate", "python"):
        return True
    return call.tool == "bash" and RUNS_CODE.search(call.text) is not None


def reads(call: Call, path: str) -> bool:
    """Whether a call reads `path`: `read_file` of it, or code naming it."""
    if call.tool == "read_file":
        return str(call.args.get("path", "")).removeprefix("./") == path
    return call.tool in ("bash", "python") and path in call.text


def _differ(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a != b


@detector("config_mismatch", "parallel_trouble")
def config_mismatch(run: DetectorView) -> Iterator[Seen]:
    """Each attempt a paper credits to a configuration it was not scored with."""
    papers = run.of(PaperSubmitted)
    scored_with = configs_scored(run) if papers else {}
    for event in papers:
        paper = event.payload
        if not isinstance(paper, PaperSubmitted):
            continue
        credited = [(e.attempt, e.config, "its experiments table") for e in paper.experiments]
        cited = _best_cited(run, event)
        if cited is not None and paper.method:
            credited.append((cited, paper.method, "its method"))
        for attempt, config, where in credited:
            actual = scored_with.get(attempt)
            differing = _differences(config, actual) if actual else []
            if differing:
                scored = run.scored_attempt(attempt)
                yield (
                    "high",
                    (
                        f"paper {paper.paper_id} credits attempt {attempt} to a configuration "
                        f"({where}) that differs from the one it was scored with: "
                        + ", ".join(differing[:4])
                    ),
                    (event.id, scored.id if scored else None, *_config_writes(run, attempt)),
                )


def configs_scored(run: DetectorView) -> dict[int, dict[str, Any]]:
    """The configuration each evaluated attempt ran, by attempt, where the log shows it:
    the content of the last `write_file` of config.json, unless another call changed the
    file after it (then it is unknown)."""
    config: dict[str, Any] | None = None
    written: str | None = None
    """The sha256 of the content `config` was parsed from."""
    scored: dict[int, dict[str, Any]] = {}
    attempt = 0
    for call in run.calls:
        unseen = call.changed_before[0]
        if CONFIG in unseen and unseen[CONFIG] != written:
            config = None  # an agent changed it by a call labrxiv did not see
        if call.tool == "write_file" and call.args.get("path") == CONFIG:
            content = call.args.get("content")
            config = _parse(content)
            written = _sha256(content)
        elif CONFIG in call.written and call.tool != "evaluate":
            config = None  # changed by code or a patch: its content is not in the log
        if call.tool == "evaluate":
            attempt += 1  # every evaluation is an attempt, scored or not (`runstate`)
            if config is not None:
                scored[attempt] = config
    return scored


def _config_writes(run: DetectorView, attempt: int) -> list[UUID]:
    """The config.json write the attempt ran with (the last before its evaluation)."""
    last: UUID | None = None
    evaluations = 0
    for call in run.calls:
        if call.tool == "write_file" and call.args.get("path") == CONFIG:
            last = call.invoked
        if call.tool == "evaluate":
            evaluations += 1
            if evaluations == attempt:
                return [last] if last else []
    return []


def _best_cited(run: DetectorView, paper: Fact) -> int | None:
    """The best-scoring attempt the paper's claims cite of those graded before it (what
    its `method` describes), ranked by `runstate.best`."""
    assert isinstance(paper.payload, PaperSubmitted)
    graded = run.graded[paper.id]
    cited = {c.attempt for c in paper.payload.claims if c.attempt is not None}
    scored = []
    for attempt in sorted(a for a in cited if a in graded):
        event = run.scored_attempt(attempt, before=paper.id)
        if event is not None and isinstance(event.payload, ExperimentScored):
            scored.append(event.payload.model_dump(mode="json"))
    best = best_scored(scored)
    return None if best is None else int(best["attempt"])


def _differences(reported: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """`key: reported≠actual` for every key both give a different value."""
    return [
        f"{key}: {reported[key]!r}≠{actual[key]!r}"
        for key in sorted(reported.keys() & actual.keys())
        if reported[key] != actual[key]
    ]


def _sha256(content: Any) -> str | None:
    return hashlib.sha256(content.encode()).hexdigest() if isinstance(content, str) else None


def _parse(content: Any) -> dict[str, Any] | None:
    try:
        value = json.loads(content) if isinstance(content, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
