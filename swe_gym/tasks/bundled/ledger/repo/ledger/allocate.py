"""Splitting money into parts without losing cents."""
from decimal import Decimal
from typing import Iterable, List

from .money import Money
from .rounding import Number, to_decimal


def allocate(money: Money, ratios: Iterable[int]) -> List[Money]:
    """Split *money* into parts proportional to *ratios*.

    The parts always add up exactly to *money*.  Cents that cannot be split
    proportionally are handed out one at a time, starting with the first
    part.
    """
    ratios = list(ratios)
    if not ratios:
        raise ValueError("at least one ratio is required")
    if any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in ratios):
        raise ValueError("ratios must be non-negative integers")
    total = sum(ratios)
    if total == 0:
        raise ValueError("ratios must not all be zero")
    shares = [int(money.cents * ratio / total) for ratio in ratios]
    remainder = money.cents - sum(shares)
    for i in range(remainder):
        shares[i % len(shares)] += 1
    return [Money(share, money.currency) for share in shares]


def split_evenly(money: Money, parts: int) -> List[Money]:
    """Split *money* into *parts* parts that differ by at most one cent."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    return allocate(money, [1] * parts)


def percentage(money: Money, percent: Number) -> Money:
    """*percent* percent of *money*, rounded half up to the cent."""
    return Money.of(money.amount * to_decimal(percent) / Decimal(100), money.currency)
