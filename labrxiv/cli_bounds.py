"""The bounds of every integer a command takes: the 64 bits the log's databases store
(BIGINT) and JSON carries. Unbounded, 99999999999999999999 failed deep inside, with a
traceback (orjson's "Integer exceeds 64-bit range", SQLite's OverflowError, PostgreSQL's
DataError); tests/labrxiv/test_cli_int_options.py checks every option has them. Here too,
the options more than one command takes (budgets, a metrics port, an llm reviewer's model
and endpoint, the accept bar)."""

from typing import Any

import typer

from events.payloads.review import ACCEPT_RATING

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)

SEED_MAX = INT64_MAX // 1000 - 1
"""The largest `--seed` of a campaign or demo whose labs' seeds still fit 64 bits: lab i
takes `seed * LAB_SEEDS + i` (`workers.lab.campaign.LAB_SEEDS`, 1000; a test checks the
two agree; importing it here would load the workers for every command's options)."""


def count_option(flag: str, help: str, least: int = 1) -> Any:
    """An option `flag` taking a whole number from `least` up, unset by default."""
    return typer.Option(None, flag, min=least, max=INT64_MAX, help=help)


def dollars_option(flag: str, help: str) -> Any:
    """An option `flag` taking a limit in dollars (more than 0), unset by default."""
    return typer.Option(None, flag, min=0.000001, help=help)


def metrics_port_option(help: str) -> Any:
    """A service's `--metrics-port`: a TCP port (0: one the system picks), unset by default."""
    return typer.Option(None, "--metrics-port", min=0, max=65535, help=help)


def review_model_option(help: str) -> Any:
    """`--review-model`: the model an llm reviewer calls, unset by default."""
    return typer.Option(None, "--review-model", help=help)


def review_base_url_option(help: str) -> Any:
    """`--review-base-url`: the llm reviewer's OpenAI-compatible endpoint, unset by default."""
    return typer.Option(None, "--review-base-url", help=help)


def accept_rating_option(help: str) -> Any:
    """`--accept-rating`: the mean rating (1-10) a paper needs to be accepted, by default
    `ACCEPT_RATING`."""
    return typer.Option(ACCEPT_RATING, "--accept-rating", min=1, max=10, help=help)
