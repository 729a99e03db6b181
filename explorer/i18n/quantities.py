"""Large and small quantities as a person reads them: three significant digits, an SI prefix or a power of ten,
and the largest sensible unit of time, in the active language's number format.

The Model Builder's sliders reach models whose step takes 10²⁴ floating-point operations and millions of years on
one CPU, and ones whose step takes a microsecond: every figure stays short and in one unit however far they go.
"""

from __future__ import annotations

import math

from explorer.i18n.catalogs import N_, _
from explorer.i18n.numbers import num

PREFIXES = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3))  # largest first
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
# Longest first; a span shorter than the last is written in nanoseconds.
TIME_UNITS = (
    (N_("{n} years"), 31_557_600.0),
    (N_("{n} days"), 86_400.0),
    (N_("{n} hours"), 3600.0),
    (N_("{n} min"), 60.0),
    (N_("{n} s"), 1.0),
    (N_("{n} ms"), 1e-3),
    (N_("{n} µs"), 1e-6),
)
MAX_PLAIN = 1e4  # a mantissa (or a number of years) up to this is written out; beyond it, as a power of ten ...
MIN_PLAIN = 1e-3  # ... and below this ("2.4·10⁻⁵", not "0.000024")


def three_digits(x: float) -> str:
    """``x`` to three significant digits, as the active language writes numbers ("1.23", "1,23"); from
    :data:`MAX_PLAIN` up and below :data:`MIN_PLAIN` as a power of ten ("4.31·10²¹", "2.4·10⁻⁵")."""
    if not math.isfinite(x) or x == 0:
        return num(x)
    rounded = float(f"{x:.3g}")
    exponent = math.floor(math.log10(abs(rounded)))
    if abs(rounded) >= MAX_PLAIN or abs(rounded) < MIN_PLAIN:
        return f"{three_digits(rounded / 10**exponent)}·10{str(exponent).translate(SUPERSCRIPTS)}"
    digits = max(0, 2 - exponent)
    text = num(rounded, digits, group=False)  # no thousands separator, as ".3g" wrote none
    return text.rstrip("0").rstrip(".,") if digits else text


def human(n: float, unit: str = "") -> str:
    """1234567 -> "1.23 M"; three significant digits and the largest prefix up to E (exa), then a power of ten:
    "4.31·10²¹ B"."""
    if abs(n) >= 1000 * PREFIXES[0][1]:
        return f"{three_digits(n)} {unit}".strip()
    for suffix, size in PREFIXES:
        if abs(n) >= size:
            return f"{three_digits(n / size)} {suffix}{unit}"
    return f"{three_digits(n)} {unit}".strip()


def human_bytes(n: float) -> str:
    """Bytes in decimal units: "1.5 GB"."""
    return human(n, "B")


def duration(seconds: float) -> str:
    """Seconds in the largest sensible unit: "0.45 µs", "3.2 ms", "4.1 s", "2.5 hours", "25 days", "2.11·10⁶
    years"."""
    for unit, size in TIME_UNITS:
        if seconds >= size:
            return _(unit).format(n=three_digits(seconds / size))
    return _("{n} ns").format(n=three_digits(seconds * 1e9))
