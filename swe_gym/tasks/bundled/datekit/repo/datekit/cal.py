"""Gregorian calendar basics."""
import datetime as _dt

_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def is_leap(year: int) -> bool:
    """Return True for Gregorian leap years."""
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def days_in_month(year: int, month: int) -> int:
    if not 1 <= month <= 12:
        raise ValueError("month must be in 1..12, got %r" % (month,))
    if month == 2 and is_leap(year):
        return 29
    return _DAYS_IN_MONTH[month - 1]


def day_of_year(d: _dt.date) -> int:
    """1-based ordinal of *d* within its year (1 Jan == 1)."""
    return sum(days_in_month(d.year, m) for m in range(1, d.month)) + d.day


def add_months(d: _dt.date, months: int) -> _dt.date:
    """Add *months* calendar months to *d*, clamping to the end of the month.

    ``add_months(date(2021, 1, 31), 1) == date(2021, 2, 28)``
    """
    index = d.year * 12 + (d.month - 1) + months
    year, month0 = divmod(index, 12)
    month = month0 + 1
    day = min(d.day, days_in_month(year, month))
    return _dt.date(year, month, day)


def month_end(d: _dt.date) -> _dt.date:
    """Last day of the month containing *d*."""
    return d.replace(day=days_in_month(d.year, d.month))
