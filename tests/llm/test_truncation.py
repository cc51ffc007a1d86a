"""The context truncation rule: the oldest exchanges are dropped until the rest fits,
the latest is always kept; computed from prefix sums of sizes measured once, it drops
exactly what re-measuring after every drop (the rule as first written) dropped."""

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.lab.policies.llm.context import KEPT_CHARS, _cut
from workers.lab.policies.llm.truncation import Cumulative, first_kept


def naive(head: int, sizes: list[int], limit: int) -> int:
    """Drop the oldest group while more than one is left and the estimate is over."""
    kept = list(sizes)
    dropped = 0
    while len(kept) > 1 and (head + sum(kept)) // 4 > limit:
        kept.pop(0)
        dropped += 1
    return dropped


def prefix(sizes: list[int]) -> list[int]:
    return [0, *itertools.accumulate(sizes)]


@given(
    head=st.integers(0, 5000),
    sizes=st.lists(st.integers(1, 3000), max_size=80),
    limit=st.integers(0, 20000),
    cached=st.integers(0, 80),
)
def test_prefix_sums_drop_what_remeasuring_drops(
    head: int, sizes: list[int], limit: int, cached: int
) -> None:
    sums = prefix(sizes)
    cached = min(cached, len(sizes))
    # Any split between the cached sums and this call's tail gives the same answer.
    view = Cumulative(sums[: cached + 1] + [-1] * 3, cached + 1, sums[cached + 1 :])
    assert list(view) == sums
    assert first_kept(view, head, limit) == naive(head, sizes, limit)


def test_nothing_is_dropped_when_it_fits_and_the_latest_is_always_kept() -> None:
    assert first_kept(prefix([100, 100]), 100, 75) == 0, "300 chars are 75 tokens"
    assert first_kept(prefix([100, 100]), 100, 74) == 1
    assert first_kept(prefix([100, 100, 10_000]), 100, 10) == 2, "only the latest is left"
    assert first_kept(prefix([]), 10_000, 1) == 0


# The rule applied by `build` to a run's folded conversation.

from datetime import UTC, datetime, timedelta  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402
from llm_support import unpriced_answer  # noqa: E402

from events import Event  # noqa: E402
from events.ids import new_id  # noqa: E402
from events.payloads import LlmConfig, PhaseEntered, RunStarted  # noqa: E402
from runstate import Exchange, fold  # noqa: E402
from workers.gym.bundle import load_bundle  # noqa: E402
from workers.lab.policies.llm import context  # noqa: E402
from workers.lab.policies.llm.context import build, group_messages  # noqa: E402
from workers.lab.policies.llm.truncation import ExchangeSizes  # noqa: E402

GYM = Path(__file__).resolve().parents[2] / "gym"
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _run(answers: int, config: LlmConfig) -> list[Event]:
    started = RunStarted(task="continual-digits", lab="lab-0", policy="llm", llm=config)
    payloads = [started, PhaseEntered(phase="plan")]
    payloads += [unpriced_answer(f"c{i}", f"answer {i} " + "x" * 900) for i in range(answers)]
    return [
        Event(
            id=new_id(), stream="run-t", version=v, occurred_at=T0 + timedelta(seconds=v), payload=p
        )
        for v, p in enumerate(payloads)
    ]


def test_build_keeps_the_newest_exchanges_and_measures_each_once() -> None:
    config = LlmConfig(model="m", context_tokens=4000)  # 3,000 tokens: ~12,000 characters
    card = load_bundle(GYM / "continual-digits").card
    state = fold(_run(60, config))
    rendered: list[Exchange] = []

    def render_counted(exchange: Exchange) -> list[dict[str, object]]:
        rendered.append(exchange)
        return group_messages(exchange, config, lambda _: None)

    sizes = ExchangeSizes()
    final = len(state.exchanges) - 1
    first = build(state, card, config, lambda _: None, sizes, final)
    assert first.truncated is not None
    messages = first.messages
    assert "earlier messages were dropped" in messages[2]["content"]
    assert messages[-2]["content"].startswith("answer 59"), "the latest answer is kept"
    kept = len(messages) - 3
    assert first.truncated.dropped_messages == 1 + 60 * 2 - kept, "instructions, answer+nudge"
    # what re-measuring the conversation as sent says
    assert first.truncated.tokens_after == len(orjson.dumps(messages)) // 4
    assert first.truncated.tokens_after <= 3000
    # the sizes remembered are reused: a second measure renders only the exchanges not final
    sizes.cumulative(state.stream, state.exchanges, final, render_counted)
    assert rendered == [state.exchanges[-1]]


def test_a_later_conversation_renders_only_the_exchanges_not_final(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The messages of final exchanges are rendered once per worker: a later conversation
    of the run, grown meanwhile, renders only those not yet final, and is the one a worker
    that never saw the run builds."""
    config = LlmConfig(model="m", context_tokens=4000)
    card = load_bundle(GYM / "continual-digits").card
    sizes = ExchangeSizes()
    early = fold(_run(50, config))
    build(early, card, config, lambda _: None, sizes, len(early.exchanges) - 1)
    rendered: list[Exchange] = []

    def render_counted(exchange: Exchange, **given: Any) -> list[dict[str, Any]]:
        rendered.append(exchange)
        return group_messages(exchange, **given)

    monkeypatch.setattr(context, "group_messages", render_counted)
    later = fold(_run(60, config))
    final = len(later.exchanges) - 1
    again = build(later, card, config, lambda _: None, sizes, final)
    assert rendered == list(later.exchanges[len(early.exchanges) - 1 :]) + [later.exchanges[-1]]
    afresh = build(later, card, config, lambda _: None, ExchangeSizes(), final)
    assert again == afresh


def test_an_exchange_longer_than_the_context_has_its_longest_texts_cut() -> None:
    """The latest exchange is kept even when it alone is too long: its longest texts are
    cut, longest first, each keeping its start and a note; what was given is not changed."""
    answer = {
        "role": "assistant",
        "content": "x" * 200_000,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "y" * 50_000}}
        ],
    }
    result = {"role": "tool", "tool_call_id": "c1", "content": "done"}
    given = [answer, result]
    cut = _cut(given, over=220_000)
    assert given[0]["content"] == "x" * 200_000, "the rendered exchange is left as it was"
    assert len(json.dumps(cut)) <= len(json.dumps(given)) - 220_000
    content, arguments = cut[0]["content"], cut[0]["tool_calls"][0]["function"]["arguments"]
    assert content.startswith("x" * KEPT_CHARS) and "were cut to fit the context" in content
    assert arguments.startswith("y" * KEPT_CHARS) and "were cut" in arguments
    assert cut[1] == result, "short texts are kept whole"
    assert _cut(given, over=100_000)[0]["tool_calls"][0]["function"]["arguments"] == "y" * 50_000
