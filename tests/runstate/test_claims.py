"""The one rule for "this number is what the grader measured" (`runstate.claims`)."""

import pytest

from runstate.claims import shown, states

MEASURED = 0.9407407407407408  # 127/135: what a grader's accuracy looks like


@pytest.mark.parametrize("reported", [0.9407407, 0.9407, 0.941, 0.94, 94.07, 94.1, 94, MEASURED])
def test_the_measurement_rounded_to_the_reports_precision_states_it(reported: float) -> None:
    assert states(reported, MEASURED)


@pytest.mark.parametrize(
    "reported",
    [
        0.95,  # rounded up past the measurement: an overclaim
        0.9408,  # one digit off at the report's precision
        0.9,  # one significant digit says nothing about a 0.94
        0.991,
        1.0,
        95,
        0.009407,  # neither the fraction nor the percentage
        None,
        True,
        "0.9407",
        float("nan"),
        float("inf"),
        1e-300,  # absurdly precise: states nothing
        1e300,
    ],
)
def test_anything_else_does_not(reported: object) -> None:
    assert not states(reported, MEASURED)


def test_two_significant_digits_at_least() -> None:
    assert states(0.5, 0.5) and states(0.50, 0.504) and not states(0.5, 0.54)
    assert states(0.00012, 0.000123) and not states(0.0001, 0.000123)
    assert states(12, 12.4) and states(1200, 1234.5) and not states(1000, 1234.5)
    assert states(-0.12, -0.1234) and not states(-0.13, -0.1234)


def test_a_zero_is_stated_only_by_a_zero() -> None:
    assert states(0, 0.0) and states(0.0, 0.0) and not states(0.001, 0.0)
    assert not states(0.0, MEASURED) and not states(None, None)


def test_an_exact_half_may_go_either_way() -> None:
    assert states(0.13, 0.125) and states(0.12, 0.125)  # half up, and half to even
    assert not states(0.14, 0.125)


def test_what_a_tool_shows_is_a_report_that_states_the_measurement() -> None:
    for value in (MEASURED, 0.000123456, 1234.5678, 12.0, 0.5, -0.031, 0.0, 3e-9):
        assert states(float(shown(value)), value), value
    assert shown(MEASURED) == "0.9407"
