"""ledger - exact money arithmetic in integer minor units."""
from .allocate import allocate, percentage, split_evenly
from .fmt import format_money, parse_money
from .money import CurrencyMismatch, Money

__all__ = [
    "CurrencyMismatch",
    "Money",
    "allocate",
    "format_money",
    "parse_money",
    "percentage",
    "split_evenly",
]
