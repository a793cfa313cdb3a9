from datetime import date

import pytest

from datekit import add_months, day_of_year, days_in_month, is_leap, month_end


@pytest.mark.parametrize("year, leap", [(1900, False), (2000, True), (2023, False), (2024, True)])
def test_is_leap(year, leap):
    assert is_leap(year) is leap


def test_days_in_month():
    assert days_in_month(2023, 2) == 28
    assert days_in_month(2024, 2) == 29
    assert days_in_month(2024, 12) == 31
    with pytest.raises(ValueError):
        days_in_month(2024, 13)


def test_day_of_year():
    assert day_of_year(date(2023, 1, 1)) == 1
    assert day_of_year(date(2023, 12, 31)) == 365
    assert day_of_year(date(2024, 12, 31)) == 366


def test_add_months_clamps():
    assert add_months(date(2021, 1, 31), 1) == date(2021, 2, 28)
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)


def test_add_months_negative_crosses_year():
    assert add_months(date(2024, 1, 15), -1) == date(2023, 12, 15)
    assert add_months(date(2024, 3, 31), -13) == date(2023, 2, 28)


def test_month_end():
    assert month_end(date(2024, 2, 10)) == date(2024, 2, 29)
