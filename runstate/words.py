"""Counts as a person reads them: `1 run`, `2 runs`, `0 runs`."""


def counted(count: int, one: str, many: str | None = None) -> str:
    """`count` and the noun, singular for exactly one (`many`: an irregular plural)."""
    return f"{count} {one if count == 1 else (many or one + 's')}"
