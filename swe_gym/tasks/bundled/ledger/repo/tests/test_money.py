from decimal import Decimal

import pytest

from ledger import CurrencyMismatch, Money, format_money, parse_money


def test_of_rounds_half_up():
    assert Money.of("12.345").cents == 1235
    assert Money.of("-12.345").cents == -1235
    assert Money.of(0.1 + 0.2).cents == 30


def test_cents_must_be_int():
    with pytest.raises(TypeError):
        Money(1.5)


def test_arithmetic():
    a, b = Money.of("10.00"), Money.of("2.50")
    assert (a + b).cents == 1250
    assert (a - b).cents == 750
    assert (-a).cents == -1000
    assert (b * 3).cents == 750
    assert (b * Decimal("0.333")).cents == 83


def test_currency_mismatch():
    with pytest.raises(CurrencyMismatch):
        Money(100, "USD") + Money(100, "EUR")


def test_ordering():
    assert Money(1) < Money(2) <= Money(2)


@pytest.mark.parametrize(
    "cents, currency, text",
    [
        (123456, "USD", "$1,234.56"),
        (-5, "USD", "-$0.05"),
        (100, "EUR", "€1.00"),
        (100, "CHF", "1.00 CHF"),
    ],
    ids=["grouping", "negative", "euro", "no-symbol"],
)
def test_format(cents, currency, text):
    assert format_money(Money(cents, currency)) == text


def test_format_without_grouping():
    assert format_money(Money(123456), grouping=False, symbol=False) == "1234.56"


def test_parse_roundtrip():
    for cents in (0, 5, -5, 100, 123456789):
        m = Money(cents, "GBP")
        assert parse_money(format_money(m)) == m
