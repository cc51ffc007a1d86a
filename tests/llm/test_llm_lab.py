"""LLM labs end to end on the embedded system, against a local OpenAI-compatible server
with the real `openai` client: phases, tools, the ledger against what the server
reported, model failures, budgets, and the API key kept out of everything."""

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_server import FakeServer, Scripted, completion, rate_limited, server_error, usage
from sqlalchemy import select

from events import Event
from events.payloads import Budget, LlmConfig
from labrxiv.settings import load_settings
from labrxiv.wiring import Embedded, open_embedded
from projections.ledger import LEDGER
from workers.lab.campaign import CampaignPlan, start_campaign
from workers.lab.policies.llm.step import IDLE_ANSWERS

KEY = "sk-lab-test-key-0123456789abcdef"
GOOD_CONFIG = json.dumps(
    {
        "method": "replay",
        "replay_per_class": 20,
        "selection": "herding",
        "epochs": 10,
        "learning_rate": 0.1,
        "hidden_units": 64,
        "seed": 0,
    }
)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(models=("gpt-4o-mini",)) as running:
        yield running


@pytest.fixture
def system(
    tmp_path: Path, server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Embedded]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("LABRXIV_LLM_TIMEOUT", "3")
    embedded = open_embedded(load_settings(data_dir=tmp_path / "data"), threads=4)
    yield embedded
    embedded.close()


def _plan(labs: int = 1, **extra: object) -> CampaignPlan:
    options: dict[str, object] = {
        "task": "continual-digits",
        "labs": labs,
        "papers": 1,
        "mode": "isolated",
        "seed": 1,
        "attempts": 3,
        "policy": "llm",
        "llm": LlmConfig(model="gpt-4o-mini", temperature=0.0),
    }
    return CampaignPlan(**(options | extra))  # type: ignore[arg-type]


def _cycle(tokens: tuple[int, int] = (100, 20)) -> list[Scripted]:
    """A model that plans, runs one experiment and writes it up."""
    u = usage(*tokens, cached=10, reasoning=5)
    claims = json.dumps(
        {
            "title": "Replay with herding",
            "abstract": "Replay beats fine-tuning.",
            "body": "We replayed 20 exemplars per class.",
            "claims": [
                {"subtask": "final_accuracy", "metric": "accuracy", "value": 0.9, "attempt": 1}
            ],
            "method": json.loads(GOOD_CONFIG),
        }
    )
    return [
        completion(tool_calls=[("next_phase", '{"summary": "plan: replay"}')], usage=u),
        completion(
            tool_calls=[
                ("write_file", json.dumps({"path": "config.json", "content": GOOD_CONFIG}))
            ],
            usage=u,
        ),
        completion(tool_calls=[("evaluate", "{}")], usage=u),
        completion(tool_calls=[("next_phase", "{}")], usage=u),
        completion(tool_calls=[("submit_paper", claims)], usage=u),
    ]


def _run(system: Embedded, plan: CampaignPlan) -> list[list[Event]]:
    _campaign, runs = start_campaign(system.bus, plan)
    system.settle()
    assert not system.bus.failures
    return [system.store.read_stream(stream) for stream in runs]


def test_an_llm_lab_goes_through_its_phases_and_publishes_a_paper(
    system: Embedded, server: FakeServer
) -> None:
    server.queue(*_cycle())
    (events,) = _run(system, _plan())
    types = [e.type for e in events]
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    phases = [e.payload.phase for e in events if e.type == "phase.entered"]
    assert phases == ["plan", "experiment", "writeup"]
    assert types.count("model.called") == types.count("model.responded") == 5
    scored = [e for e in events if e.type == "experiment.scored"]
    assert len(scored) == 1 and scored[0].payload.score > 0.5
    assert types.count("paper.submitted") == 1
    # each subtask's direction is in the log, from the card, where scores and claims are
    directions = {
        "final_accuracy": "maximize",
        "average_incremental_accuracy": "maximize",
        "average_forgetting": "minimize",
    }
    assert scored[0].payload.directions == directions
    [paper] = [e.payload for e in events if e.type == "paper.submitted"]
    assert [c.direction for c in paper.claims] == ["maximize"]
    # the tool results went back to the model as tool messages
    last_request = server.completions()[-1].body
    tool_messages = [m for m in last_request["messages"] if m["role"] == "tool"]
    shown = [m["content"] for m in tool_messages if "attempt 1: final_accuracy=" in m["content"]]
    assert shown and "two significant digits" in shown[0], "the claim rule is stated"
    assert last_request["tools"] and {t["function"]["name"] for t in last_request["tools"]} == {
        "read_file",
        "submit_paper",
        "finish",
    }


def test_a_phase_change_is_a_call_that_succeeded(system: Embedded, server: FakeServer) -> None:
    """`next_phase` did what was asked: its result is a success, not a failed call that
    the trajectory marks red and every failure count counts."""
    server.queue(*_cycle())
    (events,) = _run(system, _plan())
    moves = [
        e.payload for e in events if e.type == "tool.returned" and e.payload.tool == "next_phase"
    ]
    assert [p.preview for p in moves] == ["entering phase experiment", "entering phase writeup"]
    assert [(p.exit_code, p.ran) for p in moves] == [(0, True), (0, True)]


def test_calls_after_one_that_ends_the_turn_are_answered_not_run(
    system: Embedded, server: FakeServer
) -> None:
    """An answer that changes phase and then asks for more: every call of it is answered
    in the next request (the fake server refuses one that is not, as OpenAI's API does)."""
    first, *rest = _cycle()
    plan_and_more = completion(
        tool_calls=[("next_phase", "{}"), ("bash", '{"command": "ls"}'), ("evaluate", "{}")],
        usage=usage(100, 20),
    )
    server.queue(plan_and_more, *rest)
    (events,) = _run(system, _plan())
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    told = [e.payload for e in events if e.type == "tool.returned" and not e.payload.ran]
    skipped = [p for p in told if p.preview.startswith("not run")]
    assert [(p.tool, p.preview) for p in skipped] == [
        ("bash", "not run: the run entered phase experiment before it"),
        ("evaluate", "not run: the run entered phase experiment before it"),
    ]
    assert sum(e.type == "experiment.scored" for e in events) == 1, "the skipped one did not run"


def test_the_ledger_equals_what_the_server_reported(system: Embedded, server: FakeServer) -> None:
    server.queue(*_cycle(tokens=(1000, 200)))
    _run(system, _plan())
    with system.store.engine.connect() as conn:
        rows = conn.execute(select(LEDGER).where(LEDGER.c.kind == "model")).mappings().all()
    assert len(rows) == 5
    for row in rows:
        assert (row["input_tokens"], row["cached_input_tokens"]) == (1000, 10)
        assert (row["output_tokens"], row["reasoning_tokens"]) == (200, 5)
        assert row["cost_known"] is True
        # gpt-4o-mini at its table price, cached input at the cached price, no double count
        price = system.ctx.labs.gateway(None).prices.price_of("gpt-4o-mini")
        expected = (
            990 * price.input_per_mtok
            + 10 * price.cached_input_per_mtok
            + 200 * price.output_per_mtok
        ) / 1e6
        assert row["cost_usd"] == pytest.approx(expected)


def test_model_failures_and_bad_tool_calls_are_recorded_and_told(
    system: Embedded, server: FakeServer
) -> None:
    u = usage(50, 10)
    server.queue(
        rate_limited(retry_after=0.1),
        server_error(500),
        completion(tool_calls=[("read_file", '{"path": "config.json"')], usage=u),
        completion(tool_calls=[("teleport", "{}")], usage=u),
        completion(text="I will think about it.", usage=None),
        *_cycle(),
    )
    (events,) = _run(system, _plan())
    assert events[-1].payload.reason == "done"
    failed = [e.payload for e in events if e.type == "model.failed"]
    assert [f.error for f in failed] == ["rate_limited", "server_error"]
    assert failed[0].retry_after_s == pytest.approx(0.1)
    told = [
        e.payload.preview for e in events if e.type == "tool.returned" and e.payload.exit_code == 2
    ]
    assert any("not valid JSON" in t for t in told)
    assert any("unknown tool 'teleport'" in t for t in told)
    responded = [e.payload for e in events if e.type == "model.responded"]
    assert any(r.usage is None and r.cost_known is False for r in responded)
    nudges = [
        m for m in server.completions()[-1].body["messages"] if "Continue: call one" in str(m)
    ]
    assert nudges


def test_a_model_that_keeps_failing_ends_the_run_with_a_reason(
    system: Embedded, server: FakeServer
) -> None:
    server.queue(*[server_error(503)] * 6)
    (events,) = _run(system, _plan())
    assert events[-1].payload.reason == "error"
    assert "failed 4 times" in events[-1].payload.detail


def _no_choice() -> Scripted:
    """A completion with no choice in it (`"choices": []`), as a broken server sends."""
    answer = completion("x", usage=usage(50, 0))
    assert isinstance(answer.body, dict)
    return Scripted(body={**answer.body, "choices": []})


@pytest.mark.parametrize(
    ("answer", "last"),
    [
        (
            completion("I would rather just talk about it.", usage=usage(50, 10)),
            "the last answer: 'I would rather just talk about it.'",
        ),
        (
            completion(tool_calls=[("teleport", "{}")], usage=usage(50, 10)),
            "the last answer: 'teleport({})'; its tool calls were told: teleport: error: unknown"
            " tool 'teleport'",
        ),
        (
            completion(tool_calls=[("bash", "{not json")], usage=usage(50, 10)),
            "its tool calls were told: bash: error: ",
        ),
        (_no_choice(), "the last answer: empty (no text, no tool call; finish reason None)"),
    ],
    ids=["talks", "unknown tool", "bad arguments", "no choice"],
)
def test_a_model_that_never_runs_a_tool_ends_its_run_with_a_reason(
    system: Embedded, server: FakeServer, answer: Scripted, last: str
) -> None:
    """With no step, token, dollar or time budget, nothing else would end the run: the
    model would be called without end (a wrong tool protocol, a model that only talks).
    The ending says what the last answer was: a server that sent completions with no
    choice in them ended runs with "answered 20 times in a row without running a tool"
    and nothing more (found running an llm lab against a broken endpoint)."""
    server.default = answer
    (events,) = _run(system, _plan())
    answers = [e for e in events if e.type == "model.responded"]
    assert len(answers) == IDLE_ANSWERS
    assert events[-1].payload.reason == "error"
    detail = events[-1].payload.detail
    assert f"answered {IDLE_ANSWERS} times in a row without running a tool" in detail
    assert last in detail, detail


def test_a_campaign_budget_ends_every_run_within_one_call(
    system: Embedded, server: FakeServer
) -> None:
    server.default = completion(
        tool_calls=[("read_file", '{"path": "config.json"}')], usage=usage(300, 50)
    )
    plan = _plan(labs=3, campaign_budget=Budget(tokens=5000))
    runs = _run(system, plan)
    total = 0
    for events in runs:
        assert events[-1].payload.reason == "budget"
        total += sum(
            e.payload.usage.input_tokens + e.payload.usage.output_tokens
            for e in events
            if e.type == "model.responded"
        )
    assert 5000 <= total < 5000 + 3 * 350  # each lab may make at most its one call in flight


def test_the_api_key_appears_nowhere(
    system: Embedded, server: FakeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server.queue(server_error(500), *_cycle())
    _run(system, _plan())
    assert server.completions()[0].headers["authorization"] == f"Bearer {KEY}"
    everything = [json.dumps(r.payload) for r in system.store.iter_records()]
    with system.store.engine.connect() as conn:
        everything += [
            bytes(b).decode(errors="replace")
            for b in conn.execute(
                select(__import__("events.tables").tables.BlobRow.__table__.c.data)
            ).scalars()
        ]
    everything.append(caplog.text)
    assert not any(KEY in text for text in everything)


def test_a_model_without_function_calling_works_through_the_text_protocol(
    system: Embedded, server: FakeServer
) -> None:
    u = usage(80, 10)

    def block(name: str, arguments: dict[str, object]) -> Scripted:
        call = json.dumps({"name": name, "arguments": arguments})
        return completion(text=f"Let me do that.\n<tool>{call}</tool>", usage=u)

    server.queue(
        block("next_phase", {"summary": "replay"}),
        block("write_file", {"path": "config.json", "content": GOOD_CONFIG}),
        completion(text="<tool>{not json</tool>", usage=u),
        block("evaluate", {}),
        block("next_phase", {}),
        block(
            "submit_paper",
            {"title": "Replay", "abstract": "Replay helps.", "body": "We replayed."},
        ),
    )
    config = LlmConfig(model="gpt-4o-mini", tool_protocol="text")
    (events,) = _run(system, _plan(llm=config))
    assert events[-1].payload.reason == "done"
    assert [e.payload.phase for e in events if e.type == "phase.entered"] == [
        "plan",
        "experiment",
        "writeup",
    ]
    assert any(e.type == "experiment.scored" for e in events)
    told = [
        e.payload.preview for e in events if e.type == "tool.returned" and e.payload.exit_code == 2
    ]
    assert any("not JSON" in t for t in told)
    requests = [r.body for r in server.completions()]
    assert all("tools" not in body for body in requests)
    assert "<tool>" in requests[0]["messages"][0]["content"]
    assert any(
        m["role"] == "user" and m["content"].startswith("Result of evaluate")
        for m in requests[-1]["messages"]
    )


def test_a_lab_may_finish_early_and_a_refused_evaluate_is_no_attempt(
    system: Embedded, server: FakeServer
) -> None:
    """`finish` ends an llm run before its papers (the impatience detector's case; the
    model could not call it before); an `evaluate` the phase does not offer is refused
    and costs no attempt: the next real one is attempt 1 and the budget of 1 allows it."""
    u = usage(100, 20)
    server.queue(
        completion(tool_calls=[("evaluate", "{}")], usage=u),  # in the plan phase
        completion(tool_calls=[("next_phase", "{}")], usage=u),
        completion(
            tool_calls=[
                ("write_file", json.dumps({"path": "config.json", "content": GOOD_CONFIG}))
            ],
            usage=u,
        ),
        completion(tool_calls=[("evaluate", "{}")], usage=u),
        completion(tool_calls=[("finish", '{"summary": "good enough"}')], usage=u),
    )
    (events,) = _run(system, _plan(attempts=1))
    refused = [e for e in events if e.type == "tool.returned" and e.payload.tool == "evaluate"]
    assert [r.payload.ran for r in refused] == [False, True]
    scored = [e.payload.attempt for e in events if e.type == "experiment.scored"]
    assert scored == [1]
    assert events[-1].type == "run.finished" and events[-1].payload.reason == "done"
    assert "good enough" in events[-1].payload.detail
    assert not any(e.type == "paper.submitted" for e in events)
