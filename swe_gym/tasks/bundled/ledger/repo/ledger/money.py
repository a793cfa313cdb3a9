"""The Money value type."""
from dataclasses import dataclass
from decimal import Decimal
from typing import Union

from .rounding import Number, to_cents, to_decimal


class CurrencyMismatch(ValueError):
    pass


@dataclass(frozen=True)
class Money:
    """An amount of money as an integer number of cents."""

    cents: int
    currency: str = "USD"

    def __post_init__(self) -> None:
        if isinstance(self.cents, bool) or not isinstance(self.cents, int):
            raise TypeError("cents must be an int, got %r" % (self.cents,))

    @classmethod
    def of(cls, amount: Number, currency: str = "USD") -> "Money":
        """Build from a major-unit amount, rounding half up to the cent."""
        return cls(to_cents(amount), currency)

    @property
    def amount(self) -> Decimal:
        return Decimal(self.cents).scaleb(-2)

    def _same_currency(self, other: "Money") -> None:
        if self.currency != other.currency:
            raise CurrencyMismatch("%s != %s" % (self.currency, other.currency))

    def __add__(self, other: "Money") -> "Money":
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other)
        return Money(self.cents + other.cents, self.currency)

    def __sub__(self, other: "Money") -> "Money":
        if not isinstance(other, Money):
            return NotImplemented
        self._same_currency(other)
        return Money(self.cents - other.cents, self.currency)

    def __neg__(self) -> "Money":
        return Money(-self.cents, self.currency)

    def __mul__(self, factor: Union[int, Decimal, str]) -> "Money":
        if isinstance(factor, int) and not isinstance(factor, bool):
            return Money(self.cents * factor, self.currency)
        return Money.of(self.amount * to_decimal(factor), self.currency)

    __rmul__ = __mul__

    def __lt__(self, other: "Money") -> bool:
        self._same_currency(other)
        return self.cents < other.cents

    def __le__(self, other: "Money") -> bool:
        self._same_currency(other)
        return self.cents <= other.cents

    def is_zero(self) -> bool:
        return self.cents == 0
