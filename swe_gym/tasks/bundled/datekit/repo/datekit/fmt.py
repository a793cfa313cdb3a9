"""ISO-8601 week date strings (``2020-W53`` / ``2020-W53-4``)."""
import datetime as _dt
import re

from .isoweek import iso_week, iso_week_start, isoweekday

_WEEK_RE = re.compile(r"^(\d{4})-?W(\d{2})(?:-?([1-7]))?$")


def format_iso_week(d: _dt.date, with_day: bool = False) -> str:
    """Format *d* as ``YYYY-Www`` (or ``YYYY-Www-D`` with *with_day*)."""
    year, week = iso_week(d)
    text = "%04d-W%02d" % (year, week)
    if with_day:
        text += "-%d" % isoweekday(d)
    return text


def parse_iso_week(text: str) -> _dt.date:
    """Parse ``YYYY-Www[-D]`` (dashes optional) into a date.

    Without a weekday the Monday of that week is returned.
    """
    m = _WEEK_RE.match(text.strip())
    if not m:
        raise ValueError("not an ISO week date: %r" % (text,))
    year, week = int(m.group(1)), int(m.group(2))
    day = int(m.group(3) or 1)
    return iso_week_start(year, week) + _dt.timedelta(days=day - 1)
