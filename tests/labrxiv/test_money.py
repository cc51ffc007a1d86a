"""Dollars in the terminal: calls of unknown cost are never shown as a bare $0 (the
ledger's roll-ups and analyze's money lines)."""

from dataclasses import replace

from rich.console import Console

from labrxiv.money import dollars_cell, dollars_text
from labrxiv.views_read import ledger_table
from projections.ledger import LedgerTotals


def test_known_some_unknown_and_none_known() -> None:
    assert dollars_text(0.01234, 0, 4) == "$0.0123"
    assert dollars_text(0.0, 0, 0) == "$0.0000", "nothing spent on models is $0"
    assert dollars_text(0.01234, 2, 6) == "$0.0123 + 2 of unknown cost"
    assert dollars_text(0.0, 1, 1) == "unknown (1 call)"
    assert dollars_text(0.0, 3, 3) == "unknown (3 calls)"
    assert [dollars_cell(0.5, 0, 2), dollars_cell(0.5, 1, 3), dollars_cell(0.0, 9, 9)] == [
        "0.5000",
        "≥0.5000",
        "unknown",
    ]


def test_known_calls_that_cost_nothing_are_not_unknown() -> None:
    """A local model priced at $0 beside calls of unknown cost read "unknown (2 calls)":
    the known $0 was taken for no known cost."""
    assert dollars_text(0.0, 2, 5) == "$0.0000 + 2 of unknown cost"
    assert dollars_cell(0.0, 2, 5) == "≥0.0000"


def test_a_ledger_row_of_unpriced_calls_shows_no_dollars() -> None:
    row = LedgerTotals(
        key="lab-0",
        calls=9,
        tool_calls=0,
        model_calls=9,
        grader_calls=0,
        compute_seconds=0.0,
        input_tokens=900,
        cached_input_tokens=0,
        output_tokens=90,
        reasoning_tokens=0,
        tokens=990,
        dollars=0.0,
        priced_calls=9,
        unknown_cost_calls=9,
        unknown_outcome_calls=0,
        failed_calls=0,
    )
    console = Console(record=True, width=250)
    console.print(
        ledger_table([row, replace(row, key="lab-1", dollars=0.25, unknown_cost_calls=0)], "lab")
    )
    text = console.export_text()
    (unpriced,) = [line for line in text.splitlines() if "lab-0" in line]
    (priced,) = [line for line in text.splitlines() if "lab-1" in line]
    assert "0.0000" not in unpriced and "unknown" in unpriced
    assert "0.2500" in priced
