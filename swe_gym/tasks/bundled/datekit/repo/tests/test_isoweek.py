from datetime import date

import pytest

from datekit import iso_week, iso_week_start, isoweekday, week_range, weeks_in_year


def test_isoweekday():
    assert isoweekday(date(2024, 7, 1)) == 1  # Monday
    assert isoweekday(date(2024, 7, 7)) == 7  # Sunday


@pytest.mark.parametrize("year, weeks", [(2015, 53), (2020, 53), (2021, 52), (2024, 52), (2026, 53)])
def test_weeks_in_year(year, weeks):
    assert weeks_in_year(year) == weeks


@pytest.mark.parametrize(
    "d, expected",
    [
        (date(2024, 1, 1), (2024, 1)),
        (date(2024, 3, 14), (2024, 11)),
        (date(2023, 6, 30), (2023, 26)),
        (date(2020, 12, 31), (2020, 53)),
    ],
)
def test_iso_week_mid_year(d, expected):
    assert iso_week(d) == expected


def test_iso_week_start():
    assert iso_week_start(2024, 1) == date(2024, 1, 1)
    assert iso_week_start(2021, 1) == date(2021, 1, 4)
    assert iso_week_start(2020, 53) == date(2020, 12, 28)


def test_iso_week_start_out_of_range():
    with pytest.raises(ValueError):
        iso_week_start(2021, 53)


def test_week_range():
    assert week_range(date(2024, 7, 4)) == (date(2024, 7, 1), date(2024, 7, 7))
