"""The research cycle's explicit phases, the tools each allows, and what the lab is told."""

import functools

import orjson

from events.payloads.model import Phase
from runstate.claims import RULE
from workers.tools.invoke import (
    TOOLS,  # the registry with every tool declared (invoke imports them)
)

ORDER: tuple[Phase, ...] = ("literature", "plan", "experiment", "writeup")

NEXT_PHASE = "next_phase"
"""A control tool every phase but the write-up offers: move on to the next phase."""

TOOLS_BY_PHASE: dict[Phase, tuple[str, ...]] = {
    "literature": ("search_archive", "read_paper", NEXT_PHASE),
    "plan": ("read_file", "search_files", NEXT_PHASE),
    "experiment": (
        "bash",
        "python",
        "read_file",
        "write_file",
        "apply_patch",
        "search_files",
        "evaluate",
        NEXT_PHASE,
        "finish",
    ),
    "writeup": ("read_file", "submit_paper", "finish"),
}
# Revising is experimenting again, then submitting the new version (no next_phase: the
# phase ends with the submission, or goes on to a write-up when its calls run out).
TOOLS_BY_PHASE["revise"] = (
    *(t for t in TOOLS_BY_PHASE["experiment"] if t not in (NEXT_PHASE, "finish")),
    "submit_paper",
    "finish",
)

INSTRUCTIONS: dict[Phase, str] = {
    "literature": (
        "Phase: literature review. Search the shared archive for papers on this task and "
        "read the most relevant ones. Note the methods and the numbers they claim. Call "
        "next_phase when you know what has been tried."
    ),
    "plan": (
        "Phase: plan. Look at the workspace and write, in a few lines, what you will try "
        "and why, building on what you read. Call next_phase to start experimenting."
    ),
    "experiment": (
        "Phase: experiments. Change the workspace (config.json, the solution) and call "
        "evaluate to score an attempt with the task's grader; each evaluate is one "
        "attempt of your budget. Call next_phase when you have a result worth reporting, or "
        "finish to end the run for good (the budget left is then given up)."
    ),
    "writeup": (
        "Phase: write-up. Submit a paper with submit_paper: a title, an abstract, a "
        "markdown body (method, a results table, discussion), the configuration you "
        "used as `method`, and `claims` listing every number you report as "
        "{subtask, metric, value, attempt} where attempt is the evaluate attempt that "
        "measured it; each claim is checked against what the grader measured. "
        + RULE
        + " Cite the archive ids you built on. The run ends once its papers are in; finish "
        "ends it before that."
    ),
    "revise": (
        "Phase: revise. Your last paper was reviewed; the reviews are below. Answer them "
        "with work: run the experiments the weaknesses call for (each evaluate is one "
        "attempt of your budget), then submit the new version with submit_paper, giving "
        "`revises` (the paper's id) and every number as a claim with the attempt that "
        "measured it, and a section that answers each weakness. " + RULE + " finish ends the run."
    ),
}


def first_phase(reads_archive: bool) -> Phase:
    """Labs that may read the archive start with the literature; others with a plan."""
    return "literature" if reads_archive else "plan"


def after(phase: Phase, reads_archive: bool) -> Phase:
    """The phase that follows `phase` (the write-up is followed by a new cycle; a revision
    whose calls ran out goes to a write-up)."""
    if phase == "writeup":
        return first_phase(reads_archive)
    if phase == "revise":
        return "writeup"
    return ORDER[ORDER.index(phase) + 1]


def next_phase_schema() -> dict[str, object]:
    """The function declaration of the `next_phase` control tool."""
    return {
        "type": "function",
        "function": {
            "name": NEXT_PHASE,
            "description": "Finish the current phase of the research cycle and start the next.",
            "parameters": {
                "type": "object",
                "properties": {"summary": {"type": "string", "description": "What you found."}},
                "additionalProperties": False,
            },
        },
    }


def tool_schemas(phase: Phase) -> list[dict[str, object]]:
    """The function declarations the model sees in `phase` (a fresh copy each time)."""
    schemas: list[dict[str, object]] = orjson.loads(_schemas(phase))
    return schemas


@functools.cache
def _schemas(phase: Phase) -> bytes:
    """Built once per phase: pydantic's JSON schema generation is slow, and every model
    call declares the tools again."""
    return orjson.dumps(
        [
            next_phase_schema() if name == NEXT_PHASE else TOOLS[name].schema()
            for name in TOOLS_BY_PHASE[phase]
        ]
    )
