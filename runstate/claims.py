"""The one rule for "this number is what the grader measured", and how tools show a score.

A paper's claim, an experiment's reported score, the archive's `verified` mark, the
grounded reviewer's soundness, the `misreported_claim` detector and `papers top
--verified-only` all ask this module, so they agree by construction.

The rule (docs/review.md, "When a claim is verified"): a reported number states a
measurement when it equals the measured value rounded to the report's own precision,
with two significant digits at least, written as a fraction or as a percentage. So a
measured 0.9407407 is stated by 0.9407407, 0.9407, 0.941, 0.94, 94.07 and 94, and not by
0.95 (rounded up past the measurement: an overclaim), 0.9 (too coarse to say anything)
or 0.9408. The report's precision is read from its shortest decimal form (a JSON number
0.940 arrives as 0.94). At an exact half either way of rounding holds: the value's
binary expansion rounded half to even (Python's formatting, which the tools use) and its
shortest decimal form rounded half up (what a person does).

A leaf like the fold: it imports nothing of the project.
"""

import math
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation, localcontext

SHOWN_DIGITS = 4
"""Significant digits a tool shows a score with: more than the rule needs."""

RULE = (
    "Report each number exactly as shown, or rounded to fewer digits (two significant "
    "digits at least), or as a percentage; a number rounded up past what was measured is "
    "an overclaim."
)
"""The rule, in words a model reads (the evaluate tool's output, the write-up phase)."""


def shown(value: float) -> str:
    """A measured value as the tools show it; a claim of exactly this text states it."""
    return f"{value:.{SHOWN_DIGITS}g}"


def states(reported: object, measured: float | None) -> bool:
    """Whether `reported` states the `measured` value, as a fraction or a percentage (a
    missing measurement, a null, a bool, NaN or infinity never does)."""
    if measured is None or not _finite(reported) or not math.isfinite(measured):
        return False
    assert isinstance(reported, int | float)
    return any(_rounds_to(float(reported), measured, scale) for scale in (1, 100))


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _rounds_to(reported: float, measured: float, scale: int) -> bool:
    """Whether `measured * scale`, rounded to the places `reported` is written with (or
    to two significant digits, if that is finer), is `reported`."""
    written = Decimal(repr(reported)).normalize()
    exact = Decimal(measured) * scale
    decimal = Decimal(repr(measured)) * scale
    places = -int(written.as_tuple().exponent)
    if exact != 0:
        places = max(places, 1 - exact.adjusted())
    with localcontext() as context:
        context.prec = 1000
        try:
            step = Decimal(1).scaleb(-places)
            return written in (
                exact.quantize(step, rounding=ROUND_HALF_EVEN),
                decimal.quantize(step, rounding=ROUND_HALF_UP),
            )
        except InvalidOperation:  # a report of absurd precision states nothing
            return False
