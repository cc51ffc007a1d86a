"""The evaluate tool: one scored attempt, graded by the task's trusted grader."""

from events.payloads import ExperimentScored, IntegrityViolation
from events.payloads.model import Price, Usage
from runstate.claims import RULE, shown
from workers.gym.grading import GradingFailed, grade, protected_digests
from workers.gym.scoring import normalized
from workers.llm.prices import cost_usd
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
    price, cost = _grading_cost(env, result.usage, result.model)
    scored = ExperimentScored(
        attempt=attempt,
        subtask_scores=result.scores,
        score=score,
        directions={s.name: s.direction for s in env.card.subtasks},
        normalized_score=round(normalized(primary, score), 6),
        baseline_normalized=round(normalized(primary, primary.baseline), 6),
        grader=f"{env.card.id}/{' '.join(env.card.grader.command)}",
        grader_usage=result.usage,
        grader_model=result.model if result.usage else None,
        grader_price=price,
        grader_cost_usd=cost,
    )
    table = ", ".join(f"{k}={shown(v)}" for k, v in result.scores.items())
    return ToolResult(f"attempt {attempt}: {table}\n{RULE}", events=[scored])


def _grading_cost(
    env: ToolEnv, usage: dict[str, int] | None, model: str | None
) -> tuple[Price | None, float | None]:
    """The price of the grader's model and the grading's cost; None where unknown."""
    if not usage or model is None or env.prices is None:
        return None, None
    price = env.prices().price_of(model)
    if price is None or usage.get("without_usage", 0):
        return price, None  # some answers reported no usage: the cost is not known
    tokens = Usage(
        input_tokens=usage.get("input_tokens", 0),
        cached_input_tokens=usage.get("cached_input_tokens", 0),
        output_tokens=usage.get("output_tokens", 0),
    )
    return price, cost_usd(tokens, price)
