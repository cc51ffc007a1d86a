"""The price table: shipped entries, user overrides, unknown models, and the cost rule."""

from pathlib import Path

import pytest

from events.payloads import LlmConfig, Price, Usage
from workers.llm.prices import BUILTIN, PriceTable, PriceTableError, cost_usd, with_prices


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    return path


def test_the_shipped_table_prices_known_models_and_their_dated_names() -> None:
    table = PriceTable.load()
    mini = table.price_of("gpt-4o-mini")
    assert mini == Price(
        input_per_mtok=0.15,
        cached_input_per_mtok=0.075,
        output_per_mtok=0.60,
        source="builtin:gpt-4o-mini",
    )
    assert table.price_of("gpt-4o-mini-2024-07-18") == mini
    assert table.price_of("gpt-4o") != mini  # a pattern matches the whole name only
    assert "check them before relying" in BUILTIN.read_text().lower()


def test_a_model_with_no_entry_has_no_price() -> None:
    table = PriceTable.load()
    assert table.price_of("llama3.1:8b") is None
    assert table.price_of("gpt-4o-mini-turbo-ultra") is None


def test_user_entries_win_and_add_models(tmp_path: Path) -> None:
    user = write(
        tmp_path,
        """
[models."gpt-4o-mini"]
input = 1.0
cached_input = 0.5
output = 2.0

[models.local]
pattern = 'llama.*'
input = 0
output = 0
""",
    )
    table = PriceTable.load(user)
    mine = table.price_of("gpt-4o-mini")
    assert mine is not None and mine.input_per_mtok == 1.0
    assert mine.source == f"user:{user}:gpt-4o-mini"
    # The user's exact name does not reach the dated names the shipped pattern covers.
    dated = table.price_of("gpt-4o-mini-2024-07-18")
    assert dated is not None and dated.source == "builtin:gpt-4o-mini"
    free = table.price_of("llama3.1:8b")  # a local model priced at 0 is known to cost 0
    assert free is not None and free.cached_input_per_mtok == 0 and free.source.endswith("local")
    assert table.price_of("gpt-4.1") is not None  # the rest of the shipped table stays


def test_a_user_pattern_wins_over_a_shipped_pattern(tmp_path: Path) -> None:
    user = write(tmp_path, "[models.all-gpt]\npattern = 'gpt-.*'\ninput = 9\noutput = 9\n")
    price = PriceTable.load(user).price_of("gpt-4o-2024-08-06")
    assert price is not None and price.input_per_mtok == 9


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[models.x]\ninput = 1\n", "missing 'output'"),
        ("[models.x]\ninput = 1\noutput = 1\ncost = 3\n", "unknown fields ['cost']"),
        ("[models.x]\npattern = '('\ninput = 1\noutput = 1\n", "models.'x'"),
        ("[models.x]\ninput = -1\noutput = 1\n", "input: must be at least 0, not -1"),
        ("[models.x]\ninput = 1\noutput = 'abc'\n", "output: must be a number, not 'abc'"),
        ("[models.x]\ninput = inf\noutput = 1\n", "input: must be a finite number, not inf"),
        ("[models.x]\ninput = 1\noutput = 1\ncached_input = nan\n", "cached_input: must"),
        ("[models\n", "cannot read"),
    ],
)
def test_a_broken_user_file_names_the_problem(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(PriceTableError, match="prices.toml") as raised:
        PriceTable.load(write(tmp_path, text))
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value), "one line"


def test_a_user_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_bytes(b"\xff\xfe[models.x]\n")
    with pytest.raises(PriceTableError, match="prices.toml.*not UTF-8"):
        PriceTable.load(path)


def test_a_missing_user_file_is_an_error_not_a_silent_default(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError, match="cannot read"):
        PriceTable.load(tmp_path / "nope.toml")


PRICE = Price(input_per_mtok=3.0, cached_input_per_mtok=0.3, output_per_mtok=15.0, source="t")


def test_cached_tokens_are_inside_input_and_priced_once() -> None:
    usage = Usage(input_tokens=10_000, cached_input_tokens=8_000, output_tokens=1_000)
    # 2000 uncached at $3 + 8000 cached at $0.30 + 1000 output at $15, per 1M tokens.
    assert cost_usd(usage, PRICE) == pytest.approx((6_000 + 2_400 + 15_000) / 1e6, abs=1e-15)


def test_reasoning_tokens_are_inside_output_and_priced_once() -> None:
    with_reasoning = Usage(input_tokens=100, output_tokens=500, reasoning_tokens=400)
    without = Usage(input_tokens=100, output_tokens=500)
    assert cost_usd(with_reasoning, PRICE) == cost_usd(without, PRICE)


def test_cached_beyond_input_is_never_priced_below_zero() -> None:
    odd = Usage(input_tokens=10, cached_input_tokens=50, output_tokens=0)
    assert cost_usd(odd, PRICE) == pytest.approx(10 * 0.3 / 1e6)


def test_a_run_records_its_prices_and_is_priced_by_them_first(tmp_path: Path) -> None:
    """A distributed campaign's workers need not share the starting command's table."""
    user = write(tmp_path, '[models."lab-custom"]\ninput = 1.0\noutput = 2.0\n')
    started = LlmConfig(model="lab-custom", phase_models={"plan": "gpt-4o-mini"})
    config = with_prices(started, PriceTable.load(user))
    assert config.prices["lab-custom"].source == f"user:{user}:lab-custom"
    assert config.prices["gpt-4o-mini"].source == "builtin:gpt-4o-mini"
    worker = PriceTable.load()  # a worker without LABRXIV_PRICES
    assert worker.price_of("lab-custom") is None
    assert worker.with_recorded(config.prices).price_of("lab-custom") == config.prices["lab-custom"]
    # A fork keeps what its parent recorded, and drops the models it no longer uses.
    fork = with_prices(config.model_copy(update={"phase_models": {}}), worker)
    assert fork.prices == {"lab-custom": config.prices["lab-custom"]}
    assert with_prices(LlmConfig(model="llama3.1:8b"), worker).prices == {}
