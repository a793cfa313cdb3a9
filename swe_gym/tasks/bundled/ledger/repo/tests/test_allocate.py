import pytest

from ledger import Money, allocate, format_money, percentage, split_evenly


def fmt(parts):
    return [format_money(p) for p in parts]


def test_split_evenly_gives_leftover_to_first():
    assert fmt(split_evenly(Money.of("100.00"), 3)) == ["$33.34", "$33.33", "$33.33"]


def test_split_small_amount():
    assert [p.cents for p in split_evenly(Money(5), 3)] == [2, 2, 1]


def test_allocate_by_ratio():
    assert fmt(allocate(Money.of("10.01"), [70, 30])) == ["$7.01", "$3.00"]


def test_allocate_zero_ratio_gets_nothing_when_exact():
    assert [p.cents for p in allocate(Money(100), [0, 1, 1])] == [0, 50, 50]


def test_allocate_keeps_currency():
    assert {p.currency for p in allocate(Money(1000, "EUR"), [1, 1])} == {"EUR"}


@pytest.mark.parametrize("ratios", [[], [-1, 2], [0, 0], [1.5, 1]])
def test_allocate_rejects_bad_ratios(ratios):
    with pytest.raises(ValueError):
        allocate(Money(100), ratios)


def test_split_evenly_rejects_zero_parts():
    with pytest.raises(ValueError):
        split_evenly(Money(100), 0)


def test_percentage():
    assert percentage(Money.of("19.99"), 15).cents == 300
    assert percentage(Money.of("200.00"), "7.5").cents == 1500
