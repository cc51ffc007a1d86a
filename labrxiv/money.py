"""Dollars as the terminal shows them: known costs, and never a bare 0 that stands for
calls whose cost is unknown (no price, or no usage reported), which are in no total."""

from runstate.words import counted


def dollars_text(dollars: float, unknown: int, priced: int) -> str:
    """`$0.0123`; `$0.0123 + 2 of unknown cost`; `unknown (3 calls)` when no cost of the
    `priced` calls (answers and model-using gradings) is known (a $0 there would read as
    free); `$0.0000 + 2 of unknown cost` when the known ones cost nothing (a local model)."""
    if unknown and unknown >= priced:
        return f"unknown ({counted(unknown, 'call')})"
    return f"${dollars:.4f}" + (f" + {unknown} of unknown cost" if unknown else "")


def dollars_cell(dollars: float, unknown: int, priced: int) -> str:
    """A table's dollars cell (its `unknown $` column counts the calls): `0.0123`;
    `≥0.0123` when some calls' cost is unknown; `unknown` when none of the `priced` calls'
    is known."""
    if unknown and unknown >= priced:
        return "unknown"
    return f"{'≥' if unknown else ''}{dollars:.4f}"
