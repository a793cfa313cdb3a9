"""Checks that the test run the grader reads is the one it started: nonced markers, canaries, log shape.

The patch's code runs inside the test process and can print or patch anything there, so the
log is checked for the marks such tricks leave, whichever trick it was:

- **Nonced markers.** The markers around the test output carry a random nonce per grading,
  so printing ``>>>>> Start Test Output`` (or our "test patch failed" marker) does nothing,
  and a marker seen twice is tampering.
- **Canary tests.** For pytest runs, two tests with random names are added to the run: one
  must pass and one must fail. A machinery that makes tests pass (a monkeypatched
  ``runtest``, a plugin, a replaced runner) or that prints results it did not get, reports
  the canaries wrongly too.
- **Status lines after the runner's final summary** (pytest's ``== N passed ==``, unittest's and Django's
  ``Ran N tests``, sympy's ``tests finished``) are printed by something other than the runner. They are
  found by the task's own log parser run on what follows the summary, on the same normalised lines the
  verdict is read from (`normalize`): one reading of the log, so no line can count and go unseen.

A check that the task's own harness trips without any patch (the control run in `harness`)
is not held against the patch.
"""

from __future__ import annotations

import posixpath
import random
import re
import secrets
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from swe_gym.grading.eval_script import END_TEST_OUTPUT, START_TEST_OUTPUT, TEST_PATCH_FAILED
from swe_gym.grading.parsers import TestStatus

_MARKER_LINE = re.compile(
    r"^(?P<lead>\s*(?::|echo)\s+)(?P<q>['\"]?)(?P<marker>"
    + "|".join(re.escape(m) for m in (START_TEST_OUTPUT, END_TEST_OUTPUT, TEST_PATCH_FAILED))
    + r")(?P=q)(?P<rest>.*)$",
    re.MULTILINE,
)
_PYTEST = re.compile(r"(?:^|[\s/])(?:py\.test|pytest)(?:\s|$)")
_SHELL_OPERATORS = re.compile(r"[;&|<>`$()]|\\$")
#: The last line of each runner's own report: pytest's summary, unittest's/Django's count, sympy's summary.
_FINAL_SUMMARY = re.compile(
    r"^(?:=+ .*\b(?:passed|failed|error|errors|skipped|deselected|no tests ran)\b.* =+"
    r"|Ran \d+ tests? in [\d.]+s"
    r"|=+ tests finished: .* =+)$",
    re.MULTILINE,
)
_WORDS = ("parse", "render", "format", "merge", "split", "encode", "decode", "resolve", "update", "lookup")
_NOUNS = ("value", "token", "entry", "record", "option", "buffer", "header", "config", "result", "range")


@dataclass(frozen=True)
class Canary:
    """A test file of two tests the grader adds: ``passing`` must pass, ``failing`` must fail."""

    path: str
    source: str
    passing: str
    failing: str

    def verdict(self, status: dict[str, TestStatus]) -> str | None:
        """What is wrong with the canaries' results, or None."""
        seen = {name: [s for test, s in status.items() if _names(test, name)] for name in (self.passing, self.failing)}
        if not seen[self.passing] or not seen[self.failing]:
            return "the grader's canary tests are missing from the test output"
        if any(not s.ok for s in seen[self.passing]):
            return "a canary test that must pass did not"
        if any(s.ok for s in seen[self.failing]):
            return "a canary test that must fail passed (the test machinery reports passes it did not see)"
        return None

    def strip(self, status: dict[str, TestStatus]) -> dict[str, TestStatus]:
        return {t: s for t, s in status.items() if not (_names(t, self.passing) or _names(t, self.failing))}


def _names(test: str, function: str) -> bool:
    return re.search(rf"(^|[:.\s]){re.escape(function)}($|[\s(\[])", test) is not None


def _identifier(rng: random.Random) -> str:
    return f"test_{rng.choice(_WORDS)}_{rng.choice(_NOUNS)}_{secrets.token_hex(3)}"


def make_canary(test_dir: str) -> Canary:
    """Two tests in ``test_dir`` whose names and arithmetic are drawn fresh for each grading."""
    rng = random.Random(secrets.randbits(64))
    passing, failing = _identifier(rng), _identifier(rng)
    while failing == passing:
        failing = _identifier(rng)
    a, b = rng.randint(10, 999), rng.randint(10, 999)
    name = f"test_{rng.choice(_NOUNS)}_{secrets.token_hex(4)}.py"
    source = (
        f"def {passing}():\n    assert {a} + {b} == {a + b}\n\n\n"
        f"def {failing}():\n    assert {a} * {b} == {a * b + rng.randint(1, 9)}\n"
    )
    return Canary(path=posixpath.join(test_dir, name), source=source, passing=passing, failing=failing)


def seal_markers(script: str, nonce: str) -> str:
    """``script`` with every marker line's marker followed by ``nonce``."""
    return _MARKER_LINE.sub(
        lambda m: f"{m.group('lead')}{m.group('q')}{m.group('marker')} {nonce}{m.group('q')}{m.group('rest')}", script
    )


def _test_lines(script: str, nonce: str) -> tuple[int, int] | None:
    lines = script.split("\n")
    start = next((i for i, line in enumerate(lines) if f"{START_TEST_OUTPUT} {nonce}" in line), None)
    end = next((i for i, line in enumerate(lines) if f"{END_TEST_OUTPUT} {nonce}" in line), None)
    return (start, end) if start is not None and end is not None and start < end else None


def add_canary(script: str, nonce: str) -> tuple[str, Canary | None]:
    """Append a canary file to the run's one pytest command (between the sealed markers), if there is one.

    The canary goes beside the first test file the command names, so the same rootdir,
    configuration and conftest files apply to it.
    """
    span = _test_lines(script, nonce)
    if span is None:
        return script, None
    lines = script.split("\n")
    commands = [i for i in range(span[0] + 1, span[1]) if lines[i].strip() and not lines[i].lstrip().startswith("#")]
    if len(commands) != 1:
        return script, None
    line = lines[commands[0]]
    if not _PYTEST.search(line) or _SHELL_OPERATORS.search(line):
        return script, None
    try:
        words = shlex.split(line)
    except ValueError:
        return script, None
    targets = [w.split("::", 1)[0] for w in words[1:] if not w.startswith("-") and (".py" in w or "/" in w)]
    if not targets:
        return script, None
    first = targets[0].rstrip("/")
    canary = make_canary(posixpath.dirname(first) if first.endswith(".py") else first)
    lines[commands[0]] = f"{line.rstrip()} {shlex.quote(canary.path)}"
    return "\n".join(lines), canary


def new_nonce() -> str:
    return secrets.token_hex(12)


def section(log: str, nonce: str) -> tuple[str | None, str | None]:
    """(the text between the sealed markers or None, what is wrong with the markers or None)."""
    start, end = f"{START_TEST_OUTPUT} {nonce}", f"{END_TEST_OUTPUT} {nonce}"
    if log.count(start) > 1 or log.count(end) > 1:
        return None, "the grader's output markers appear more than once (tampering)"
    begin = log.find(start)
    if begin < 0:
        return None, None
    begin = log.find("\n", begin)
    finish = log.find(end, begin)
    if finish < 0:
        return log[begin + 1 :], None
    text = log[begin + 1 : finish]
    return text[: text.rfind("\n") + 1] if "\n" in text else "", None  # drop the partial line before the marker


def normalize(text: str) -> str:
    """The log as lines, split wherever Python sees a line end (CR, CR LF, form feed, ``\\x1c``, U+2028...),
    joined by LF: the parser and every check read this one text, so a line cannot count for one and hide
    from the other. A carriage return starts a new line, as it does on a terminal."""
    return "".join(line + "\n" for line in text.splitlines())


def late_status_lines(text: str, parse: Callable[[str], Mapping[str, object]]) -> str | None:
    """Results read (by ``parse``, the task's own parser) after the runner's final summary line of the
    normalised ``text``: printed by something other than the runner."""
    summaries = list(_FINAL_SUMMARY.finditer(text))
    if not summaries:
        return None
    after = text[summaries[-1].end() :]
    try:
        late = sorted(parse(after))
    except Exception:  # the parser chokes on what follows the summary: nothing of the runner's is there
        return "unreadable output after the test runner's final summary"
    return f"test results printed after the test runner's final summary: {late[0][:120]!r}" if late else None
