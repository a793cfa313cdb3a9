"""ISO-8601 week numbering.

ISO weeks start on Monday.  Week 1 of a year is the week that contains the
year's first Thursday (equivalently, the week containing 4 January), so a
few days at the start or end of a calendar year can belong to a week of the
neighbouring ISO year.
"""
import datetime as _dt
from typing import Tuple

from .cal import day_of_year, is_leap


def isoweekday(d: _dt.date) -> int:
    """Monday == 1 ... Sunday == 7."""
    return d.weekday() + 1


def weeks_in_year(year: int) -> int:
    """Number of ISO weeks (52 or 53) in ISO year *year*."""
    jan1 = isoweekday(_dt.date(year, 1, 1))
    if jan1 == 4 or (jan1 == 3 and is_leap(year)):
        return 53
    return 52


def iso_week(d: _dt.date) -> Tuple[int, int]:
    """Return ``(iso_year, iso_week)`` for *d*."""
    week = (day_of_year(d) - isoweekday(d) + 10) // 7
    if week < 1:
        # The first days of January belong to the last week of last year.
        return d.year - 1, 52
    return d.year, week


def iso_week_start(year: int, week: int) -> _dt.date:
    """Monday of ISO week *week* of ISO year *year*."""
    if not 1 <= week <= weeks_in_year(year):
        raise ValueError("week %d out of range for %d" % (week, year))
    jan4 = _dt.date(year, 1, 4)
    week1_monday = jan4 - _dt.timedelta(days=jan4.weekday())
    return week1_monday + _dt.timedelta(weeks=week - 1)


def week_range(d: _dt.date) -> Tuple[_dt.date, _dt.date]:
    """Monday and Sunday of the ISO week containing *d*."""
    monday = d - _dt.timedelta(days=d.weekday())
    return monday, monday + _dt.timedelta(days=6)
