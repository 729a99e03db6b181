"""Quantities stay short and in one unit from a microsecond's step to a model no machine could train."""

from __future__ import annotations

import pytest

from explorer.i18n import using_language, vector
from explorer.i18n.quantities import duration, human, human_bytes, three_digits


@pytest.mark.parametrize(("value", "unit", "text"), [
    (228_096, "", "228 k"),
    (1.1e9, "FLOP", "1.1 GFLOP"),
    (2.5e18, "FLOP", "2.5 EFLOP"),
    (999e18, "B", "999 EB"),
    (1.39e24, "FLOP", "1.39·10²⁴ FLOP"),  # past exa: a power of ten, never "1390000000 P"
    (4.31e21, "B", "4.31·10²¹ B"),
    (640, "", "640"),
    (0, "B", "0 B"),
])
def test_human_keeps_three_digits_and_one_unit(value, unit, text):
    assert human(value, unit) == text


@pytest.mark.parametrize(("seconds", "text"), [
    (4.54e-7, "454 ns"),
    (4.54e-5, "45.4 µs"),
    (0.0418, "41.8 ms"),
    (4.1, "4.1 s"),
    (9000, "2.5 hours"),
    (6.66e13, "2.11·10⁶ years"),  # not "2110000 years"
])
def test_a_duration_takes_the_largest_sensible_unit(seconds, text):
    assert duration(seconds) == text


def test_powers_of_ten_in_the_languages_number_format():
    with using_language("de"):
        assert three_digits(1.39e24) == "1,39·10²⁴" and human_bytes(1.5e9) == "1,5 GB"
        assert duration(6.66e13) == "2,11·10⁶ Jahre"
    assert three_digits(2.4e-5) == "2.4·10⁻⁵" and three_digits(0.00123) == "0.00123"
    assert three_digits(-1.5e6) == "-1.5·10⁶" and three_digits(9_994) == "9990" and three_digits(9_999) == "1·10⁴"


def test_vectors_part_their_items_so_a_decimal_comma_stays_readable():
    assert vector([0.54030, 0.84147], 4) == "(0.5403, 0.8415)"
    assert vector([[0.5403, 0.84147], [-0.84147, 0.5403]], 3) == "[[0.540, 0.841], [-0.841, 0.540]]"
    with using_language("de"):
        assert vector([0.54030, 0.84147], 4) == "(0,5403; 0,8415)"
        assert vector([[1.0, 0.0], [0.0, 1.0]], 1) == "[[1,0; 0,0]; [0,0; 1,0]]"
