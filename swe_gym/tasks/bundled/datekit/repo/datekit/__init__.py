"""datekit - calendar arithmetic and ISO-8601 week helpers."""
from .cal import add_months, day_of_year, days_in_month, is_leap, month_end
from .fmt import format_iso_week, parse_iso_week
from .isoweek import iso_week, iso_week_start, isoweekday, week_range, weeks_in_year

__all__ = [
    "add_months",
    "day_of_year",
    "days_in_month",
    "format_iso_week",
    "is_leap",
    "iso_week",
    "iso_week_start",
    "isoweekday",
    "month_end",
    "parse_iso_week",
    "week_range",
    "weeks_in_year",
]
