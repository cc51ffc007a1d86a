"""Context-length trouble (docs/analysis.md, "Context-length trouble"; MAST FM-1.3, step
repetition, and FM-1.4, loss of conversation history).

- `near_window`: model calls whose input filled the model's context window (nearly);
- `truncations`: the conversation cut again and again, or cut after it had outgrown the
  window itself;
- `repetition`: the same action (tool and arguments) taken again and again while
  nothing it depends on changed: a lab that forgot it already did it.
"""

from collections.abc import Iterator
from uuid import UUID

from analysis.detectors.base import Seen, detector
from analysis.detectors.view import Call, DetectorView
from analysis.finding import Severity
from events.payloads import ContextTruncated, ModelResponded

NEAR = 0.9
"""An input of this share of the window or more is near it."""
OFTEN = 3
"""This many calls near the window, or truncations, make it a habit (medium), not a blip."""
OUTGROWN = 0.95
"""A conversation this share of the window or more before it was cut had outgrown it: the
rule cuts at 3/4 of the window, so it got there in one step."""
REPEATS = 4
"""The same action this many times with nothing changed in between is repetition."""


@detector("near_window", "context_trouble")
def near_window(run: DetectorView) -> Iterator[Seen]:
    """Model calls whose input was near the model's context window."""
    window = _window(run)
    if window is None:
        return
    near: list[tuple[UUID, int]] = []
    for event in run.of(ModelResponded):
        answer = event.payload
        if isinstance(answer, ModelResponded) and answer.usage is not None:
            if answer.usage.input_tokens >= NEAR * window:
                near.append((event.id, answer.usage.input_tokens))
    if near:
        top = max(tokens for _, tokens in near)
        severity: Severity = "medium" if len(near) >= OFTEN else "low"
        summary = (
            f"{len(near)} model calls sent at least {NEAR:.0%} of the {window}-token window "
            f"(up to {top} input tokens)"
        )
        yield severity, summary, [event_id for event_id, _ in near]


@detector("truncations", "context_trouble")
def truncations(run: DetectorView) -> Iterator[Seen]:
    """Truncations that became a habit, or that came after the window was outgrown."""
    window = _window(run)
    cuts = run.of(ContextTruncated)
    outgrown = [
        e for e in cuts if window is not None and e.payload.tokens_before >= OUTGROWN * window
    ]
    if len(cuts) >= OFTEN or outgrown:
        dropped = sum(e.payload.dropped_messages for e in cuts)
        peak = max(e.payload.tokens_before for e in cuts)
        summary = (
            f"the conversation was cut {len(cuts)} times ({dropped} messages dropped in all; "
            f"at most {peak} tokens before a cut, of a {window or '?'}-token window)"
        )
        yield "medium", summary, [e.id for e in cuts]


@detector("repetition", "context_trouble")
def repetition(run: DetectorView) -> Iterator[Seen]:
    """Each streak of one action taken `REPEATS` times or more with nothing it depends on
    changed in between (a file read: that file; any other action: the workspace)."""
    reads: dict[str, dict[str, list[Call]]] = {}
    """Streaks of `read_file` calls, by the path they read, then by action."""
    others: dict[str, list[Call]] = {}
    found: list[list[Call]] = []
    digests: dict[str, str | None] = {}
    for call in run.calls:
        path = _read_path(call)
        streaks = others if path is None else reads.setdefault(path, {})
        streaks.setdefault(call.action, []).append(call)
        changed = _changes(call, digests)
        if not changed:
            continue
        # A change ends every streak that depends on it (each is judged once, whole).
        ended = [others] + [reads.pop(p) for p in changed if p in reads]
        found += [s for streaks in ended for s in streaks.values() if len(s) >= REPEATS]
        others = {}
    for streaks in (others, *reads.values()):
        found += [s for s in streaks.values() if len(s) >= REPEATS]
    for streak in sorted(found, key=lambda s: s[0].index):
        first = streak[0]
        summary = f"{first.tool} {first.text[:80]!r} was repeated {len(streak)} times unchanged"
        yield "medium", summary, [call.invoked for call in streak]


def _read_path(call: Call) -> str | None:
    """The file a `read_file` call reads (what its repetition depends on)."""
    if call.tool != "read_file":
        return None
    return str(call.args.get("path", "")).removeprefix("./")


def _changes(call: Call, digests: dict[str, str | None]) -> set[str]:
    """The paths whose content changed with the call (written with new content, or
    deleted), by it or, in an agent's run, unseen before it; keeping `digests` up to date."""
    unseen_written, unseen_deleted = call.changed_before
    deleted = call.result.files_deleted if call.result else []
    changed: set[str] = set()
    for written, gone in ((unseen_written, unseen_deleted), (call.written, deleted)):
        for path, sha256 in written.items():
            if path not in digests or digests[path] != sha256 or sha256 is None:
                changed.add(path)
            digests[path] = sha256
        for path in gone:
            changed.add(path)
            digests.pop(path, None)
    return changed


def _window(run: DetectorView) -> int | None:
    llm = run.start.llm
    return llm.context_tokens if llm is not None else None
