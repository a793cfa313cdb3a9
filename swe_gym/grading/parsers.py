"""Test-log parsers: log text -> {test id: status}. Registered by name.

Status names follow SWE-bench's (PASSED, FAILED, SKIPPED, ERROR, XFAIL), so the
official harness's parsers and ours are interchangeable behind this registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum

from swe_gym.errors import ConfigError


class TestStatus(StrEnum):
    __test__ = False  # not a pytest test class

    PASSED = "PASSED"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    ERROR = "ERROR"
    XFAIL = "XFAIL"
    XPASS = "XPASS"

    @property
    def ok(self) -> bool:
        return self in (TestStatus.PASSED, TestStatus.XFAIL)


LogParser = Callable[[str], dict[str, TestStatus]]

_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S.*?)(?:\s+-\s+.*)?$")


def parse_pytest(log: str) -> dict[str, TestStatus]:
    """Reads pytest's ``-rA`` short summary lines (``PASSED tests/x.py::test_y``)."""
    status: dict[str, TestStatus] = {}
    for line in log.splitlines():
        match = _PYTEST_LINE.match(line.strip())
        if match:
            test_id = match.group(2)
            if match.group(1) == "SKIPPED" and test_id.startswith("["):
                continue  # "SKIPPED [1] file:line: reason" names no test id
            status[test_id] = TestStatus(match.group(1))
    return status


_PARSERS: dict[str, LogParser] = {"pytest": parse_pytest}


def register_parser(name: str, parser: LogParser) -> None:
    _PARSERS[name] = parser


def get_parser(name: str) -> LogParser:
    try:
        return _PARSERS[name]
    except KeyError:
        raise ConfigError(f"unknown log parser {name!r}; known: {', '.join(sorted(_PARSERS))}") from None
