"""The attributes of labrxiv's spans and span events, by the GenAI semantic conventions'
names where they have one, under `labrxiv.` where they have none."""

from datetime import datetime

from events.payloads import (
    ExperimentScored,
    ModelCalled,
    ModelFailed,
    ModelResponded,
    RunFinished,
    RunStarted,
    ToolInvoked,
)
from events.spend import spend_of_payload
from projections.exports.otel_span import Attribute, SpanEvent


def run_attributes(
    started: RunStarted, run: str, campaign: str | None, finished: RunFinished
) -> dict[str, Attribute]:
    """A run's `invoke_agent` attributes."""
    attributes: dict[str, Attribute] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": started.lab,
        "gen_ai.agent.name": started.lab,
        "gen_ai.conversation.id": run,
        "labrxiv.run": run,
        "labrxiv.task": started.task,
        "labrxiv.policy": started.policy,
        "labrxiv.finish_reason": finished.reason,
    }
    if started.llm is not None:
        attributes["gen_ai.request.model"] = started.llm.model
    if campaign is not None:
        attributes["labrxiv.campaign"] = campaign
    if started.forked_from is not None:
        attributes["labrxiv.forked_from"] = started.forked_from.run
    return attributes


def call_attributes(run: str, asked: ModelCalled | ToolInvoked) -> dict[str, Attribute]:
    """A model or tool call's attributes, from the event that opened it (`run`: its run's
    stream)."""
    attributes: dict[str, Attribute] = {"gen_ai.conversation.id": run}
    if isinstance(asked, ModelCalled):
        host, _, port = asked.provider.rpartition(":")
        attributes |= {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": asked.model,
            "gen_ai.provider.name": asked.provider,
            "server.address": host if port.isdigit() else asked.provider,
            "labrxiv.call_id": asked.call_id,
            "labrxiv.request_id": asked.request_id,
            "labrxiv.attempt": asked.attempt,
        }
        if port.isdigit():
            attributes["server.port"] = int(port)
        if asked.phase is not None:
            attributes["labrxiv.phase"] = asked.phase
    else:
        attributes |= {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": asked.tool,
            "gen_ai.tool.call.id": asked.call_id,
            "gen_ai.tool.type": "function",
            "labrxiv.reported": asked.reported,
        }
    return attributes


def outcome_attributes(answer: ModelResponded | ModelFailed) -> dict[str, Attribute]:
    """What a model call's outcome adds: the answering model, finish reasons and tokens as
    `events.spend` counts them (none when the provider reported no usage); a failure's
    `error.type`."""
    if isinstance(answer, ModelFailed):
        return {"error.type": answer.error}
    attributes: dict[str, Attribute] = {"gen_ai.response.model": answer.model}
    if answer.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = (answer.finish_reason,)
    spend = spend_of_payload(answer)
    if answer.usage is not None and spend is not None:
        attributes["gen_ai.usage.input_tokens"] = spend.input_tokens
        attributes["gen_ai.usage.output_tokens"] = spend.output_tokens
        attributes["gen_ai.usage.cache_read.input_tokens"] = spend.cached_input_tokens
        creation = answer.usage.cache_creation_input_tokens
        attributes["gen_ai.usage.cache_creation.input_tokens"] = creation
        attributes["gen_ai.usage.reasoning.output_tokens"] = spend.reasoning_tokens
    if answer.cost_usd is not None and answer.cost_known:
        attributes["labrxiv.cost_usd"] = answer.cost_usd
    return attributes


def evaluation_event(scored: ExperimentScored, at: datetime) -> SpanEvent:
    """A grader's score as the conventions' evaluation event."""
    scores = sorted(scored.subtask_scores.items())
    subtasks = ", ".join(f"{name} {value:g}" for name, value in scores)
    attributes: dict[str, Attribute] = {
        "gen_ai.evaluation.name": scored.grader,
        "gen_ai.evaluation.score.value": scored.score,
        "gen_ai.evaluation.explanation": f"attempt {scored.attempt}: {subtasks}",
        "labrxiv.attempt": scored.attempt,
    }
    if scored.normalized_score is not None:
        attributes["labrxiv.normalized_score"] = scored.normalized_score
    if scored.grader_model is not None:
        attributes["gen_ai.request.model"] = scored.grader_model
    for name, value in sorted((scored.grader_usage or {}).items()):
        attributes[f"labrxiv.grader_usage.{name}"] = value
    return SpanEvent("gen_ai.evaluation.result", at, attributes)
