"""PLINK's number formatter: equal to printf %g except on decimal ties, where PLINK rounds to even."""
import random

import pytest

from gboost.readers.plink_format import plink_g


@pytest.mark.parametrize("x,digits,text", [
    (7 / 320, 4, "0.02188"),  # printf: 0.02187 (binary value just below the tie)
    (9 / 320, 4, "0.02812"),  # tie to even
    (1 / 64, 4, "0.01562"),
    (3 / 64, 4, "0.04688"),
    (13.5684, 6, "13.5684"),
    (6.937e-05, 4, "6.937e-05"),
    (9.072e-202, 4, "9.072e-202"),
    (1234567.0, 6, "1.23457e+06"),
    (1.0, 4, "1"),
    (0.0, 4, "0"),
    (float("nan"), 4, "nan"),
    (-2.5, 6, "-2.5"),
])
def test_known_values(x, digits, text):
    assert plink_g(x, digits) == text


def test_equals_printf_away_from_ties():
    rnd = random.Random(5)
    for _ in range(20000):
        x = 10 ** rnd.uniform(-300, 300)
        for d in (4, 6):
            assert plink_g(x, d) == f"{x:.{d}g}"
