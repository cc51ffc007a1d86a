"""The gateway with the real openai client over HTTP against the scripted local server."""

import itertools
import socket
from collections.abc import Callable
from decimal import Decimal

import openai
import orjson
import pytest
from fake_server import FakeServer, Received, Scripted, completion, error, hang, usage
from fake_server import rate_limited as rate_limited_reply
from fake_server import server_error as server_error_reply
from llm_support import API_KEY, Sleeps, call_until_done, problems

from events.blobs import blob_ref
from events.payloads import ModelCalled, ModelFailed, ModelResponded, Payload
from workers.llm import Gateway, ModelRequest, PreparedCall, PriceTable
from workers.tools.invoke import TOOLS

MakeGateway = Callable[..., Gateway]

TOOL_SCHEMAS = [TOOLS[name].schema() for name in ("bash", "read_file", "finish")]


def ask(model: str = "fake-model", request_id: str = "run-1:7", **kwargs: object) -> ModelRequest:
    messages = [
        {"role": "system", "content": "You are a researcher."},
        {"role": "user", "content": "Improve the baseline."},
    ]
    return ModelRequest(request_id, model, messages, tools=TOOL_SCHEMAS, **kwargs)  # type: ignore[arg-type]


def recorder() -> tuple[list[Payload], dict[str, bytes], Callable[..., None]]:
    events: list[Payload] = []
    blobs: dict[str, bytes] = {}

    def record(payload: Payload, new_blobs: dict[str, bytes]) -> None:
        events.append(payload)
        blobs.update(new_blobs)

    return events, blobs, record


def test_tool_calls_are_parsed(server: FakeServer, make_gateway: MakeGateway) -> None:
    server.queue(
        completion(
            text="Let me look.",
            tool_calls=[("bash", '{"command": "ls -la"}'), ("read_file", '{"path": "a.txt"}')],
            usage=usage(120, 30),
        )
    )
    gateway = make_gateway()
    prepared = gateway.prepare(ask(temperature=0.2, phase="experiment"))
    outcome = gateway.send(prepared)

    assert isinstance(outcome.event, ModelResponded)
    reply = outcome.reply
    assert reply is not None and problems(reply) == ()
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("bash", {"command": "ls -la"}),
        ("read_file", {"path": "a.txt"}),
    ]
    assert reply.text == "Let me look." and reply.finish_reason == "tool_calls"
    assert reply.message["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": '{"command": "ls -la"}',
    }
    assert outcome.event.tool_calls == 2 and outcome.event.finish_reason == "tool_calls"
    assert outcome.retry_in_s is None
    # What arrived: our body, our key, the declared tools.
    (received,) = server.completions()
    assert received.headers["authorization"] == f"Bearer {API_KEY}"
    assert received.body == prepared.body
    assert received.body["tools"] == TOOL_SCHEMAS and received.body["temperature"] == 0.2
    assert prepared.called.phase == "experiment" and prepared.called.messages == 2


def test_text_only_answer(server: FakeServer, make_gateway: MakeGateway) -> None:
    server.queue(completion(text="The method works.", usage=usage(50, 5)))
    gateway = make_gateway()
    outcome = gateway.send(gateway.prepare(ask()))
    assert isinstance(outcome.event, ModelResponded)
    assert outcome.reply is not None and outcome.reply.tool_calls == ()
    assert outcome.reply.text == "The method works."
    assert outcome.event.preview == "The method works." and outcome.event.tool_calls == 0
    assert outcome.event.finish_reason == "stop" and outcome.event.model == "fake-model"
    assert outcome.reply.message == {"role": "assistant", "content": "The method works."}


def test_usage_with_cached_and_reasoning_tokens_is_recorded_exactly_and_priced_once(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    server.queue(
        completion(
            text="ok",
            usage=usage(2000, 800, cached=1500, reasoning=500),
            model="gpt-4o-mini-2024-07-18",
        )
    )
    gateway = make_gateway()
    outcome = gateway.send(gateway.prepare(ask(model="gpt-4o-mini")))
    event = outcome.event
    assert isinstance(event, ModelResponded)
    assert event.usage is not None
    assert event.usage.model_dump() == {
        "input_tokens": 2000,
        "cached_input_tokens": 1500,
        "cache_creation_input_tokens": 0,
        "output_tokens": 800,
        "reasoning_tokens": 500,
    }
    assert event.model == "gpt-4o-mini-2024-07-18"
    assert event.price == PriceTable.load().price_of("gpt-4o-mini")
    assert event.price is not None and event.price.source == "builtin:gpt-4o-mini"
    # By hand, at $0.15 / $0.075 / $0.60 per 1M: 500 uncached + 1500 cached input, 800 output
    # (the 500 reasoning tokens are inside the 800 and cost nothing more).
    by_hand = (500 * Decimal("0.15") + 1500 * Decimal("0.075") + 800 * Decimal("0.60")) / 1_000_000
    assert by_hand == Decimal("0.0006675")
    assert event.cost_known is True
    assert event.cost_usd == pytest.approx(float(by_hand), abs=1e-15)


def test_missing_usage_gives_an_unknown_cost(server: FakeServer, make_gateway: MakeGateway) -> None:
    server.queue(completion(text="ok", usage=None, model="gpt-4o"))
    gateway = make_gateway()
    event = gateway.send(gateway.prepare(ask(model="gpt-4o"))).event
    assert isinstance(event, ModelResponded)
    assert event.usage is None and event.cost_usd is None and event.cost_known is False
    assert event.price is not None  # the price was known; the tokens were not


def test_unreadable_usage_keeps_the_answer_with_usage_unknown(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    server.queue(completion(text="ok", usage={"prompt_tokens": -3, "completion_tokens": "many"}))
    gateway = make_gateway()
    outcome = gateway.send(gateway.prepare(ask(model="gpt-4o")))
    assert isinstance(outcome.event, ModelResponded) and outcome.event.usage is None
    assert outcome.event.cost_known is False and outcome.reply is not None


def test_unpriced_model_gives_an_unknown_cost_not_zero(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    server.queue(completion(text="ok", usage=usage(10, 2)))  # details left out, as vLLM does
    gateway = make_gateway()
    event = gateway.send(gateway.prepare(ask(model="llama-3.1-8b"))).event
    assert isinstance(event, ModelResponded)
    assert event.usage is not None and event.usage.input_tokens == 10
    assert (event.usage.cached_input_tokens, event.usage.reasoning_tokens) == (0, 0)
    assert event.price is None and event.cost_usd is None and event.cost_known is False


def test_429_with_retry_after_is_recorded_then_retried_after_the_asked_wait(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    server.queue(rate_limited_reply(retry_after=2), completion(text="ok", usage=usage(5, 1)))
    events, _, record = recorder()
    outcome = call_until_done(make_gateway(), ask(), record, sleeps)

    assert [e.type for e in events] == [
        "model.called",
        "model.failed",
        "model.called",
        "model.responded",
    ]
    failed = events[1]
    assert isinstance(failed, ModelFailed)
    assert (failed.error, failed.status_code, failed.retry_after_s) == ("rate_limited", 429, 2.0)
    assert failed.will_retry is True and failed.call_id == "run-1:7/1"
    assert [e.attempt for e in events if isinstance(e, ModelCalled)] == [1, 2]
    assert {e.request_id for e in events if isinstance(e, ModelCalled)} == {"run-1:7"}
    assert sleeps == [2.0]
    assert outcome.event is events[-1] and outcome.reply is not None
    assert len(server.completions()) == 2


def test_retry_after_is_capped(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    server.queue(rate_limited_reply(retry_after=3600), completion(text="ok"))
    call_until_done(make_gateway(max_retry_after_s=10), ask(), recorder()[2], sleeps)
    assert sleeps == [10.0]


def test_500_is_retried_with_backoff(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    server.queue(server_error_reply(500), server_error_reply(503), completion(text="ok"))
    events, _, record = recorder()
    outcome = call_until_done(make_gateway(backoff_base=0.5), ask(), record, sleeps)
    failures = [e for e in events if isinstance(e, ModelFailed)]
    assert [(f.error, f.status_code, f.will_retry) for f in failures] == [
        ("server_error", 500, True),
        ("server_error", 503, True),
    ]
    assert isinstance(outcome.event, ModelResponded)
    # Full jitter: attempt n waits a uniform draw in [0, 0.5 * 2^n].
    assert len(sleeps) == 2 and 0 <= sleeps[0] <= 1.0 and 0 <= sleeps[1] <= 2.0


def test_a_hang_past_the_timeout_is_a_timeout_failure(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    server.queue(hang())
    gateway = make_gateway(timeout=0.3, max_attempts=1)
    outcome = gateway.send(gateway.prepare(ask()))
    event = outcome.event
    assert isinstance(event, ModelFailed)
    assert (event.error, event.status_code, event.will_retry) == ("timeout", None, False)
    assert 0.3 <= event.latency_s < 5
    assert outcome.retry_in_s is None and outcome.reply is None
    assert len(server.completions()) == 1  # it did reach the server


def test_an_answer_trickling_in_past_the_timeout_is_a_timeout_failure(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    """The client's timeout bounds each wait for bytes: a server sending a byte every
    0.1 s held a call with a 0.5 s timeout for as long as its body took (found from
    outside: 740 s recorded as a success). The timeout bounds the whole call."""
    server.queue(Scripted(body=completion(text="x" * 200).body, trickle_s=0.1))
    gateway = make_gateway(timeout=0.5, max_attempts=1)
    outcome = gateway.send(gateway.prepare(ask()))
    event = outcome.event
    assert isinstance(event, ModelFailed), event
    assert (event.error, event.will_retry) == ("timeout", False)
    assert event.latency_s < 3  # the body takes 30 s or more


def test_a_timeout_is_retried(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    server.queue(hang(), completion(text="late but fine"))
    events, _, record = recorder()
    outcome = call_until_done(make_gateway(timeout=0.3), ask(), record, sleeps)
    assert [getattr(e, "error", None) for e in events if e.type == "model.failed"] == ["timeout"]
    assert outcome.reply is not None and outcome.reply.text == "late but fine"


def test_malformed_arguments_and_unknown_tools_are_problems_to_tell_the_model(
    server: FakeServer, make_gateway: MakeGateway
) -> None:
    server.queue(
        completion(
            tool_calls=[
                ("bash", '{"command": "ls"'),  # cut off
                ("teleport", '{"to": "the answers"}'),
                ("read_file", '["a.txt"]'),
                ("finish", ""),  # no arguments at all: an empty object
            ],
            usage=usage(10, 10),
        )
    )
    gateway = make_gateway()
    outcome = gateway.send(gateway.prepare(ask()))
    assert isinstance(outcome.event, ModelResponded) and outcome.event.tool_calls == 4
    reply = outcome.reply
    assert reply is not None
    bad_json, unknown, not_object = problems(reply)
    assert bad_json.name == "bash" and bad_json.arguments is None
    assert bad_json.problem is not None and "not valid JSON" in bad_json.problem
    assert unknown.problem is not None and "unknown tool 'teleport'" in unknown.problem
    assert "bash" in unknown.problem  # the model is told which tools there are
    assert not_object.problem == "arguments for read_file must be a JSON object"
    assert reply.tool_calls[3].arguments == {} and reply.tool_calls[3].problem is None
    assert bad_json.problem_message() == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": f"error: {bad_json.problem}",
    }


def test_after_max_attempts_the_last_failure_says_no_retry(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    server.queue(*[server_error_reply() for _ in range(3)])
    events, _, record = recorder()
    outcome = call_until_done(make_gateway(max_attempts=3), ask(), record, sleeps)
    failures = [e for e in events if isinstance(e, ModelFailed)]
    assert [f.will_retry for f in failures] == [True, True, False]
    assert outcome.event == failures[-1] and outcome.retry_in_s is None
    assert len(sleeps) == 2 and len(server.completions()) == 3
    assert [e.call_id for e in failures] == ["run-1:7/1", "run-1:7/2", "run-1:7/3"]


@pytest.mark.parametrize(
    ("status", "kind"), [(400, "bad_request"), (422, "bad_request"), (401, "auth"), (403, "auth")]
)
def test_rejections_are_not_retried(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps, status: int, kind: str
) -> None:
    server.queue(error(status, "no"))
    events, _, record = recorder()
    outcome = call_until_done(make_gateway(), ask(), record, sleeps)
    assert isinstance(outcome.event, ModelFailed)
    assert (outcome.event.error, outcome.event.status_code) == (kind, status)
    assert outcome.event.will_retry is False and sleeps == [] and len(events) == 2


def test_connection_refused_is_a_connection_failure(
    make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    gateway = make_gateway(base_url=f"http://127.0.0.1:{port}/v1", max_attempts=2)
    events, _, record = recorder()
    outcome = call_until_done(gateway, ask(), record, sleeps)
    failures = [e for e in events if isinstance(e, ModelFailed)]
    assert [(f.error, f.will_retry) for f in failures] == [
        ("connection", True),
        ("connection", False),
    ]
    assert outcome.event == failures[-1]
    assert gateway.provider == f"127.0.0.1:{port}"
    # Where it went and why it got no answer: the SDK says only "Connection error."
    assert f"(POST http://127.0.0.1:{port}/v1/chat/completions: ConnectError:" in (
        outcome.event.detail
    )
    assert "refused" in outcome.event.detail


@pytest.mark.parametrize(
    "answer",
    [
        Scripted(body="<html>502 bad gateway</html>"),
        Scripted(body={"error": {"message": "overloaded"}}),  # an error sent as a 200
        Scripted(body={"object": "chat.completion", "choices": [{"index": 0}]}),
    ],
    ids=["html", "error-as-200", "no-message"],
)
def test_a_body_that_is_no_completion_is_a_failure_not_a_crash(
    server: FakeServer, make_gateway: MakeGateway, answer: Scripted
) -> None:
    server.queue(answer)
    gateway = make_gateway(max_attempts=1)
    event = gateway.send(gateway.prepare(ask())).event
    assert isinstance(event, ModelFailed)
    assert (event.error, event.status_code, event.will_retry) == ("other", 200, False)
    assert "MalformedResponse" in event.detail


def test_each_call_is_recorded_before_its_request_is_sent(
    server: FakeServer, make_gateway: MakeGateway, sleeps: Sleeps
) -> None:
    """Write-ahead: when a request reaches the server, its `model.called` is already recorded."""
    events, _, record = recorder()
    seen: list[list[str]] = []

    def answer(received: Received) -> Scripted:
        seen.append([e.type for e in events])
        return completion(text="ok") if len(seen) > 1 else server_error_reply()

    server.default = answer
    call_until_done(make_gateway(), ask(), record, sleeps)
    assert seen == [["model.called"], ["model.called", "model.failed", "model.called"]]


def test_prepare_is_pure_and_a_recorded_call_can_be_restored(make_gateway: MakeGateway) -> None:
    gateway = make_gateway()
    first, again = gateway.prepare(ask(), attempt=2), gateway.prepare(ask(), attempt=2)
    assert first == again
    assert first.called.call_id == "run-1:7/2" and first.called.attempt == 2
    ((key, data),) = first.blobs.items()
    assert first.called.request == blob_ref(data) and key == blob_ref(data).sha256
    assert orjson.loads(data) == first.body
    assert PreparedCall.restore(first.called, data) == first
    with pytest.raises(ValueError):
        PreparedCall.restore(first.called, data + b" ")


def test_latency_is_measured_per_call(server: FakeServer, make_gateway: MakeGateway) -> None:
    server.queue(completion(text="slow", delay_s=0.2))
    ticks = itertools.chain([100.0], itertools.repeat(100.75))  # the start, then any read
    gateway = make_gateway(clock=lambda: next(ticks))
    event = gateway.send(gateway.prepare(ask())).event
    assert isinstance(event, ModelResponded) and event.latency_s == 0.75


def test_the_server_lists_models_to_the_real_client(server: FakeServer) -> None:
    client = openai.OpenAI(base_url=server.url, api_key="any", max_retries=0)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    client.close()
