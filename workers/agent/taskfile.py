"""TASK.md: what an agent lab is told, written into its workspace from the task card."""

from runstate import RunState
from runstate.claims import RULE
from workers.gym.card import TaskCard
from workers.lab.policies.llm.context import brief

TASK_FILE = "TASK.md"


def task_text(card: TaskCard, state: RunState, reviews: str = "") -> str:
    """The task as an agent reads it: the card's brief, the budgets, the `lab` command,
    the claim rule; `reviews`: the reviews a revision answers."""
    budget = state.started.budget
    limits = [
        f"- {name}: {getattr(budget, name):g}"
        for name in ("attempts", "wall_seconds", "tokens", "dollars", "steps")
        if getattr(budget, name) is not None
    ]
    archive = (
        "- `lab archive search QUERY...` — papers other labs published on this task, best "
        "matches first, with their claims (verified or not)\n"
        "- `lab archive read PAPER_ID` — one paper in full\n"
        if state.started.reads_archive
        else "(This run does not read the shared archive: you work alone.)\n"
    )
    papers = state.started.papers
    text = (
        f"{brief(card)}\n\n"
        "## How you work here\n"
        "Your model endpoint is `$OPENAI_BASE_URL` (OpenAI-compatible); every call is "
        "recorded and counts against the budgets below. You have no other network. The "
        "`lab` command (on your PATH; `lab --help`) is how you reach the lab:\n\n"
        "- `lab evaluate` — run the solution and score it with the task's grader: one "
        "attempt of your budget; the scores are the grader's, recorded for you\n"
        f"{archive}"
        "- `lab submit PAPER.md --claims CLAIMS.json` — publish a paper (markdown, its "
        "first `# ` heading is the title); CLAIMS.json is a JSON list of "
        '`{"subtask": ..., "metric": ..., "value": ..., "attempt": N}`, the numbers it '
        "reports and the attempt that measured each\n"
        "- `lab budget` — what is left of your budgets\n"
        "- `lab finish SUMMARY` — end the run\n\n"
        f"Write {papers} paper{'s' if papers != 1 else ''}, then {_then(state)} {RULE}\n\n"
        "## Budgets\n" + ("\n".join(limits) if limits else "- none") + "\n"
    )
    if reviews:
        text += f"\n## Reviews of your paper\n{reviews}\n"
    return text


def _then(state: RunState) -> str:
    """How the agent ends its work: `lab finish`, or, where its paper is reviewed and it
    may revise it, by ending its process (it is started again with the reviews)."""
    rounds = state.started.review_rounds
    if not rounds:
        return "finish (`lab finish`)."
    return (
        "end your process without `lab finish`: reviewers read your last paper, and you "
        f"are started again with their reviews in TASK.md to revise it (up to {rounds} "
        "time" + ("s" if rounds != 1 else "") + "; `lab finish` ends the run at once)."
    )
