"""Decimal rounding helpers."""
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from typing import Union

Number = Union[int, str, float, Decimal]

_MODES = {"half_up": ROUND_HALF_UP, "half_even": ROUND_HALF_EVEN}


def to_decimal(value: Number) -> Decimal:
    """Convert *value* to Decimal; floats go through ``repr`` so that
    ``0.1`` becomes ``Decimal('0.1')`` rather than its binary expansion."""
    if isinstance(value, bool):
        raise TypeError("bool is not a number here")
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(value)


def to_cents(value: Number, mode: str = "half_up") -> int:
    """Round a major-unit amount (e.g. ``"12.345"``) to whole cents."""
    try:
        rounding = _MODES[mode]
    except KeyError:
        raise ValueError("unknown rounding mode: %r" % (mode,)) from None
    d = to_decimal(value).quantize(Decimal("0.01"), rounding=rounding)
    return int(d.scaleb(2))
