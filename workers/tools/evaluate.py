"""The evaluate tool: one scored attempt, graded by the task's trusted grader."""

from events.payloads import ExperimentScored, IntegrityViolation
from workers.gym.grading import GradingFailed, grade, protected_digests
from workers.gym.scoring import normalized
from workers.tools.base import ToolError, ToolResult, tool
from workers.tools.env import ToolEnv


@tool
def evaluate(env: ToolEnv) -> ToolResult:
    """Run the solution on the task's data and score it with the task's grader.

    Each call is one attempt of the run's budget. The scores are recorded by the
    grader, not by the lab.
    """
    if env.protected and protected_digests(env.bundle) != env.protected:
        violation = IntegrityViolation(
            kind="tampered_grader", detail="the grader or hidden data changed since the run began"
        )
        return ToolResult("refused: the grader was tampered with", 126, events=[violation])
    attempt = env.run.attempts + 1
    try:
        result = grade(env.sandbox, env.card, env.bundle)
    except GradingFailed as exc:
        raise ToolError(f"attempt {attempt} failed: {exc}") from None
    primary = env.card.subtask(env.card.primary)
    score = result.scores[primary.name]
    scored = ExperimentScored(
        attempt=attempt,
        subtask_scores=result.scores,
        score=score,
        normalized_score=round(normalized(primary, score), 6),
        grader=f"{env.card.id}/{' '.join(env.card.grader.command)}",
        grader_usage=result.usage,
    )
    table = ", ".join(f"{k}={v:.4f}" for k, v in result.scores.items())
    return ToolResult(f"attempt {attempt}: {table}", events=[scored])
