"""Model prices: a table shipped with labrxiv, overridable by a user file, and the cost rule.

A model no entry matches has no price: its calls are recorded with an unknown cost,
never as $0 (MetaGPT #1840). Cached input tokens are part of the input tokens and
reasoning tokens part of the output tokens, so each token is priced once (langfuse
#5312, #10592 double-counted cached tokens).
"""

import math
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from events.payloads.model import Price, Usage
from events.payloads.run import LlmConfig
from workers.errors import WorkerError

BUILTIN = Path(__file__).with_name("prices.toml")
"""The shipped table: list prices as published, to be checked before relying on them."""

PER = 1_000_000
"""Prices are in dollars per this many tokens."""


class PriceTableError(WorkerError):
    """A price table file cannot be read: `str()` names the file, then the `problem`
    (the entry and field, where there is one)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(path, problem)
        self.path = path
        self.problem = problem
        """What is wrong, without the file's name (a setting's error names it already)."""

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


@dataclass(frozen=True)
class PriceEntry:
    """One entry of a price table: which model names it prices, and at what."""

    key: str
    pattern: re.Pattern[str] | None
    """Matched against the whole model name; None: the name must equal `key`."""
    price: Price

    def matches(self, model: str) -> bool:
        """Whether this entry prices `model`."""
        if self.pattern is None:
            return model == self.key
        return self.pattern.fullmatch(model) is not None


@dataclass(frozen=True)
class PriceTable:
    """Entries in the order they are tried: user entries first, then the shipped ones."""

    entries: tuple[PriceEntry, ...]

    @classmethod
    def load(cls, user_file: Path | None = None, builtin: Path | None = BUILTIN) -> "PriceTable":
        """The shipped table (if `builtin`) overridden by `user_file` (if given)."""
        user = _read(user_file, "user") if user_file is not None else []
        shipped = _read(builtin, "builtin") if builtin is not None else []
        return cls(tuple(user + shipped))

    def price_of(self, model: str) -> Price | None:
        """The price of `model`, or None when no entry matches (cost unknown).

        A name equal to an entry's key wins over a pattern, and user entries win over
        shipped ones at each of the two steps.
        """
        for entry in self.entries:
            if entry.key == model:
                return entry.price
        for entry in self.entries:
            if entry.pattern is not None and entry.matches(model):
                return entry.price
        return None

    def prices_of(self, models: Iterable[str]) -> dict[str, Price]:
        """The price of each of `models` that has one, as a run records them."""
        found = {model: self.price_of(model) for model in models}
        return {model: price for model, price in found.items() if price is not None}

    def priced(
        self, answered: str, asked: str, usage: Usage | None
    ) -> tuple[Price | None, float | None]:
        """The price of an answer and its cost: the price of the model the provider says
        answered (`answered`), else of the one asked for; the cost None (unknown) when
        either the price or the usage is missing."""
        price = self.price_of(answered) or self.price_of(asked)
        cost = cost_usd(usage, price) if usage is not None and price is not None else None
        return price, cost

    def with_recorded(self, recorded: Mapping[str, Price]) -> "PriceTable":
        """This table with `recorded` (model → price, as a run recorded them) tried first:
        a run is priced as the command that started it priced it."""
        if not recorded:
            return self
        first = tuple(PriceEntry(model, None, price) for model, price in recorded.items())
        return PriceTable(first + self.entries)


def with_prices(config: LlmConfig, table: PriceTable) -> LlmConfig:
    """`config` recording the price of each of its models in `table`, the prices it
    recorded already tried first (a fork keeps its parent's): what `run.started` carries
    so that every worker prices the run as the command that started it."""
    models = {config.model, *config.phase_models.values()}
    return config.model_copy(update={"prices": recorded_prices(table, models, config.prices)})


def recorded_prices(
    table: PriceTable, models: Iterable[str], recorded: Mapping[str, Price]
) -> dict[str, Price]:
    """The prices to record for `models`: `recorded` (what was recorded before) first,
    then `table`; a model with no price in either is left out."""
    return table.with_recorded(recorded).prices_of(sorted(set(models)))


def cost_usd(usage: Usage, price: Price) -> float:
    """Dollars for `usage` at `price`: uncached input, cached input and output, each once."""
    cached = min(usage.cached_input_tokens, usage.input_tokens)
    uncached = usage.input_tokens - cached
    dollars = (
        uncached * price.input_per_mtok
        + cached * price.cached_input_per_mtok
        + usage.output_tokens * price.output_per_mtok
    ) / PER
    return round(dollars, 12)


FIELDS = ("input", "cached_input", "output")
"""A table entry's prices, in dollars per million tokens."""


def _read(path: Path, origin: str) -> list[PriceEntry]:
    try:
        data = tomllib.loads(path.read_bytes().decode())
    except UnicodeDecodeError as exc:
        raise PriceTableError(path, f"not UTF-8 text (byte {exc.start})") from None
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise PriceTableError(path, f"cannot read it as a price table: {exc}") from None
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise PriceTableError(path, "`models` must be a table of entries")
    source = "builtin" if origin == "builtin" else f"user:{path}"
    return [_entry(path, source, key, fields) for key, fields in models.items()]


def _entry(path: Path, source: str, key: str, fields: Any) -> PriceEntry:
    where = f"models.{key!r}"
    if not isinstance(fields, dict):
        raise PriceTableError(path, f"{where} must be a table")
    unknown = set(fields) - {"pattern", *FIELDS}
    if unknown:
        raise PriceTableError(path, f"{where}: unknown fields {sorted(unknown)}")
    for name in ("input", "output"):
        if name not in fields:
            raise PriceTableError(path, f"{where}: missing {name!r}")
    for name, value in fields.items():
        if name in FIELDS and (problem := _price_problem(value)) is not None:
            raise PriceTableError(path, f"{where}: {name}: {problem}, not {value!r}")
    try:
        pattern = re.compile(fields["pattern"]) if "pattern" in fields else None
    except (re.error, TypeError) as exc:
        raise PriceTableError(path, f"{where}: pattern: {exc}") from None
    price = Price(
        input_per_mtok=fields["input"],
        # A provider without a cache discount bills cached tokens as input tokens.
        cached_input_per_mtok=fields.get("cached_input", fields["input"]),
        output_per_mtok=fields["output"],
        source=f"{source}:{key}",
    )
    return PriceEntry(key, pattern, price)


def _price_problem(value: object) -> str | None:
    """Why `value` is not a price in dollars per million tokens (None: it is one).
    An infinite or NaN price cannot be recorded (JSON has neither), so every answer
    priced with it would be refused by the log after the provider billed it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    if not math.isfinite(value):
        return "must be a finite number"
    if value < 0:
        return "must be at least 0"
    return None
