"""Test-log parsers: log text -> {test id: status}. Registered by name.

Status names follow SWE-bench's (PASSED, FAILED, SKIPPED, ERROR, XFAIL), so the
official harness's parsers and ours are interchangeable behind this registry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import StrEnum

from swe_gym.errors import ConfigError
from swe_gym.tasks.families.swesmith import swesmith_registry


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


_UNITTEST_RESULT = r"(?P<result>ok|FAIL|ERROR|skipped\b.*|expected failure|unexpected success)$"
_UNITTEST_LINE = re.compile(r"^(?P<test>\S+ \([\w.]+\))(?:\s.*)? \.\.\. " + _UNITTEST_RESULT)
_UNITTEST_STATUS = {
    "ok": TestStatus.PASSED,
    "FAIL": TestStatus.FAILED,
    "ERROR": TestStatus.ERROR,
    "expected failure": TestStatus.XFAIL,
    "unexpected success": TestStatus.FAILED,
}


_UNITTEST_ID = re.compile(r"^\S+ \([\w.]+\)$")
_UNITTEST_DESCRIBED = re.compile(r"^.* \.\.\. " + _UNITTEST_RESULT)


def parse_unittest(log: str) -> dict[str, TestStatus]:
    """Reads ``python -m unittest -v`` result lines (``test_x (pkg.mod.Class) ... ok``; Python >= 3.11 names
    the method again inside the parentheses, ``(pkg.mod.Class.test_x)``), as Django's runner prints them too.
    A test with a docstring gets its id on a line of its own and the result after the docstring's first line."""
    status: dict[str, TestStatus] = {}
    pending: str | None = None
    for line in log.splitlines():
        line = line.strip()
        match = _UNITTEST_LINE.match(line)
        test = match.group("test") if match else None
        if match is None and pending is not None:
            match = _UNITTEST_DESCRIBED.match(line)
            test = pending
        pending = line if _UNITTEST_ID.match(line) else None
        if match and test:
            status[test] = _UNITTEST_STATUS.get(match.group("result"), TestStatus.SKIPPED)
    return status


# --- SWE-smith (github.com/SWE-bench/SWE-smith, PyPI `swesmith`) -------------------------------
# Each SWE-smith repository has a "profile" (swesmith.profiles) holding its test command and log
# parser; most use their language's default. The three below are ours, written to give the same
# statuses as those defaults in swesmith 0.0.9; "swesmith:<repo>" uses the profile itself.

_SWESMITH_PYTEST = re.compile(r"^(\S+)\s+(FAILED|PASSED|SKIPPED|ERROR|XFAIL)")


def parse_swesmith_pytest(log: str) -> dict[str, TestStatus]:
    """Ours, following swesmith's ``PythonProfile.log_parser``: ``pytest --verbose`` result lines.

    ``tests/test_x.py::test_y PASSED   [ 50%]`` gives ``tests/test_x.py::test_y``: PASSED. Only the
    statuses SWE-bench knows are read (an ``XPASS`` line is not), and the last line for a test wins.
    """
    status: dict[str, TestStatus] = {}
    for line in log.splitlines():
        match = _SWESMITH_PYTEST.match(line)
        if match:
            status[match.group(1)] = TestStatus(match.group(2))
    return status


_GO_LINES = (
    (re.compile(r"--- PASS: (\S+)"), TestStatus.PASSED),
    (re.compile(r"--- FAIL: (\S+)"), TestStatus.FAILED),
    (re.compile(r"FAIL:?\s?(.+?)\s"), TestStatus.FAILED),
    (re.compile(r"--- SKIP: (\S+)"), TestStatus.SKIPPED),
)


def parse_swesmith_go(log: str) -> dict[str, TestStatus]:
    """Ours, following swesmith's ``GoProfile.log_parser``: ``go test -v`` output.

    ``--- PASS: TestX (0.00s)`` / ``--- FAIL:`` / ``--- SKIP:`` name subtests too (``TestX/case``);
    a package failure line (``FAIL<TAB>github.com/o/r/pkg<TAB>0.01s``) marks the package FAILED.
    """
    status: dict[str, TestStatus] = {}
    for line in log.splitlines():
        for pattern, result in _GO_LINES:
            match = pattern.match(line.strip())
            if match:
                status[match.group(1)] = result
                break
    return status


def parse_swesmith_cargo(log: str) -> dict[str, TestStatus]:
    """Ours, following swesmith's ``RustProfile.log_parser``: ``cargo test --verbose`` output.

    ``test tests::name ... ok`` is PASSED and ``... FAILED`` FAILED; ignored tests are not recorded.
    """
    status: dict[str, TestStatus] = {}
    for line in log.splitlines():
        line = line.removeprefix("test ")
        if "... ok" in line:
            status[line.rsplit(" ... ", 1)[0].strip()] = TestStatus.PASSED
        elif "... FAILED" in line:
            status[line.rsplit(" ... ", 1)[0].strip()] = TestStatus.FAILED
    return status


def _swesmith_profile_parser(repo: str) -> LogParser:
    """The log parser of the swesmith package's profile for ``repo`` (``owner__name.commit8``)."""
    try:
        registry = swesmith_registry()  # optional: `pip install swesmith`
    except Exception as exc:  # ImportError, or one of its own unlisted dependencies missing
        raise ConfigError(
            f"log parser 'swesmith:{repo}' is the swesmith package's profile for {repo}, and the package "
            f"could not be imported ({exc}); install it (pip install swesmith swebench ghapi python-dotenv "
            "unidiff) or set the task's log_parser to one of swesmith:python, swesmith:go, swesmith:rust"
        ) from exc
    try:
        profile = registry.get(repo)
    except KeyError:
        raise ConfigError(f"the installed swesmith package has no profile for {repo!r}") from None

    def parse(log: str) -> dict[str, TestStatus]:
        known = set(TestStatus)
        return {test: TestStatus(s) for test, s in profile.log_parser(log).items() if s in known}

    parse.__doc__ = f"swesmith's own profile parser for {repo}."
    return parse


def parse_r2e_gym(log: str) -> dict[str, TestStatus]:
    """Ours, following R2E-Gym's ``parse_log_pytest`` (R2E-Gym has no package on PyPI).

    The format knowledge lives with the family (`swe_gym.tasks.families.r2egym.parse_r2e_log`),
    which also reads the old commit's log with it; see there for the rules.
    """
    from swe_gym.tasks.families.r2egym import parse_r2e_log

    return {test: TestStatus(status) for test, status in parse_r2e_log(log).items()}


_PARSERS: dict[str, LogParser] = {
    "pytest": parse_pytest,
    "unittest": parse_unittest,
    "swesmith:python": parse_swesmith_pytest,
    "swesmith:go": parse_swesmith_go,
    "swesmith:rust": parse_swesmith_cargo,
    "r2e-gym": parse_r2e_gym,
}
#: Families of parsers named by a prefix and built on each use (``swesmith:<repo>``).
_RESOLVERS: dict[str, Callable[[str], LogParser]] = {"swesmith:": _swesmith_profile_parser}


def register_parser(name: str, parser: LogParser) -> None:
    _PARSERS[name] = parser


def get_parser(name: str) -> LogParser:
    if name in _PARSERS:
        return _PARSERS[name]
    for prefix, resolve in _RESOLVERS.items():
        if name.startswith(prefix) and len(name) > len(prefix):
            return resolve(name[len(prefix) :])  # not cached: what it resolves to may change (a package installed)
    raise ConfigError(f"unknown log parser {name!r}; known: {', '.join(sorted(_PARSERS))}")
