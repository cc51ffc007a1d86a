"""Archive tools: search the shared archive, read a paper, submit one."""

import hashlib
import json
from typing import Annotated, Any

from pydantic import Field, ValidationError

from events.payloads import Claim, Experiment, PapersRetrieved, PaperSubmitted
from workers.tools.base import ToolError, ToolResult, unwatched_tool
from workers.tools.env import ToolEnv


@unwatched_tool
def search_archive(
    env: ToolEnv,
    query: Annotated[str, Field(description="What to look for.")],
    k: Annotated[int, Field(ge=1, le=20, description="How many papers.")] = 5,
) -> ToolResult:
    """Search the shared archive of papers on this task (those of this campaign's labs);
    best matches first."""
    if not env.run.reads_archive:
        raise ToolError("this run does not read the archive (isolated mode)")
    hits = env.archive.search(env.run.scope, query, k)
    lines = [
        f"{h.paper_id} [{h.lab}] {h.title}\n  claims: "
        + ", ".join(_claim(c) for c in h.claims)
        + f"\n  method: {json.dumps(h.method, sort_keys=True)}"
        for h in hits
    ]
    retrieved = PapersRetrieved(query=query, paper_ids=[h.paper_id for h in hits])
    return ToolResult("\n".join(lines) or "no papers yet", events=[retrieved])


@unwatched_tool
def read_paper(
    env: ToolEnv, paper_id: Annotated[str, Field(description="The paper's archive id.")]
) -> ToolResult:
    """Read a paper of the archive in full."""
    if not env.run.reads_archive:
        raise ToolError("this run does not read the archive (isolated mode)")
    paper = env.archive.get(paper_id)
    if paper is None:
        raise ToolError(f"no paper {paper_id}")
    if env.run.accepted_only and not env.archive.accepted(paper_id):
        raise ToolError(f"paper {paper_id} is not accepted: this run reads accepted papers only")
    text = f"# {paper['title']}\n\n{paper['abstract']}\n\n{paper['body']}"
    return ToolResult(
        text, events=[PapersRetrieved(query=f"read {paper_id}", paper_ids=[paper_id])]
    )


@unwatched_tool
def submit_paper(
    env: ToolEnv,
    title: Annotated[str, Field(min_length=1, max_length=300)],
    abstract: Annotated[str, Field(max_length=5000)],
    body: Annotated[str, Field(description="Markdown: method, results table, discussion.")],
    claims: Annotated[
        list[dict[str, Any]],
        Field(description="Numbers reported: [{subtask, metric, value, attempt}]."),
    ] = [],  # noqa: B006 - a pydantic field default, copied per call
    method: Annotated[dict[str, Any], Field(description="The configuration used.")] = {},  # noqa: B006
    experiments: Annotated[
        list[dict[str, Any]],
        Field(description="Graded attempts reported: [{attempt, config, scores}]."),
    ] = [],  # noqa: B006
    cited: Annotated[list[str], Field(description="Archive ids the paper builds on.")] = [],  # noqa: B006
    revises: Annotated[
        str | None, Field(description="Your earlier paper this is a new version of.")
    ] = None,
    answers: Annotated[
        list[str], Field(description="The review ids (of that paper) this version answers.")
    ] = [],  # noqa: B006
) -> ToolResult:
    """Publish a paper to the shared archive (or a new version of your own paper)."""
    if revises is not None:
        earlier = env.archive.get(revises)
        if earlier is None or earlier.get("run") != env.run.stream:
            raise ToolError(f"{revises} is not a paper of this run: only your own are revised")
        if not answers:  # the reviews it answers: those of the paper it revises
            reviewed = env.archive.reviews(revises)
            answers = [str(i) for i in reviewed.reviews] if reviewed is not None else []
    seed = f"{env.run.stream}:paper:{env.run.papers}"  # the same on a redelivered step
    paper_id = "p-" + hashlib.sha256(seed.encode()).hexdigest()[:12]
    try:
        paper = PaperSubmitted(
            paper_id=paper_id,
            task=env.run.task,
            title=title,
            abstract=abstract,
            body=body,
            method=method,
            claims=[_directed(Claim.model_validate(c), env) for c in claims],
            experiments=[Experiment.model_validate(e) for e in experiments],
            cited=cited,
            revises=revises,
            answers=answers,
        )
    except ValidationError as exc:
        raise ToolError(f"the paper is malformed: {exc.errors()[0]['msg']}") from None
    return ToolResult(f"submitted {paper_id}", events=[paper])


def _directed(claim: Claim, env: ToolEnv) -> Claim:
    """The claim with its subtask's direction as the card says (whatever the lab wrote)."""
    found = [s.direction for s in env.card.subtasks if s.name == claim.subtask]
    return claim.model_copy(update={"direction": found[0] if found else None})


def _claim(claim: dict[str, Any]) -> str:
    mark = "verified" if claim.get("verified") else "not verified"
    return f"{claim['subtask']}={claim['value']} ({mark})"
