from datetime import date

import pytest

from datekit import format_iso_week, parse_iso_week


def test_format():
    assert format_iso_week(date(2024, 3, 14)) == "2024-W11"
    assert format_iso_week(date(2024, 3, 14), with_day=True) == "2024-W11-4"


def test_parse_week_only_gives_monday():
    assert parse_iso_week("2024-W11") == date(2024, 3, 11)


def test_parse_compact_form():
    assert parse_iso_week("2024W114") == date(2024, 3, 14)


def test_parse_week_53():
    assert parse_iso_week("2020-W53-7") == date(2021, 1, 3)


@pytest.mark.parametrize("text", ["2024-W1", "2024-11", "2024-W11-8", "W11-2024"])
def test_parse_invalid(text):
    with pytest.raises(ValueError):
        parse_iso_week(text)
