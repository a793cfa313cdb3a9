"""The verdict of an exported task's tests (``swe-gym export --format harbor``), run by its ``tests/test.sh``.

Shipped verbatim as ``tests/verdict.py`` of each exported Harbor task, so it needs nothing but the standard library
of whatever Python the task's image has (3.6 on): ``python3 verdict.py EXPECTED.json LOG REWARD`` reads the test
output between swe_gym's markers in ``LOG``, parses it as ``EXPECTED["parser"]`` says, and writes 1 to ``REWARD``
when every FAIL_TO_PASS and PASS_TO_PASS test passed (a test missing from the log failed), else 0: the rule
swe_gym's grading applies (`swe_gym.grading.report.classify`). Parsers: ``pytest`` (swe_gym's: pytest's ``-rA``
summary lines) and ``swebench-pytest`` / ``swebench-pytest-options`` (the official ``parse_log_pytest`` and
``parse_log_pytest_options`` rules). The tests check each against the parser it stands for.
"""

import json
import re
import sys

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
STATUSES = ("PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL", "XPASS")
OK = ("PASSED", "XFAIL")
_PYTEST_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\s+(\S.*?)(?:\s+-\s+.*)?$")
_SKIP_COUNT = re.compile(r"^\[\d+\]$")
_OPTION = re.compile(r"(.*?)\[(.*)\]")


def section(log):
    """The text between the markers (the last start marker's), or None when the tests never started."""
    start = log.find(START)
    if start < 0:
        return None
    end = log.find(END, start)
    return log[start + len(START) : end if end >= 0 else len(log)]


def parse_pytest(text):
    status = {}
    for line in text.splitlines():
        match = _PYTEST_LINE.match(line.strip())
        if match and not (match.group(1) == "SKIPPED" and match.group(2).startswith("[")):
            status[match.group(2)] = match.group(1)
    return status


def _swebench_tokens(text):
    for line in text.split("\n"):
        if not line.startswith(STATUSES):
            continue
        if line.startswith("FAILED"):
            line = line.replace(" - ", " ")
        tokens = line.split()
        if len(tokens) <= 1 or (tokens[0] == "SKIPPED" and _SKIP_COUNT.match(tokens[1])):
            continue
        yield tokens[0], tokens[1]


def parse_swebench_pytest(text):
    return {name: status for status, name in _swebench_tokens(text)}


def parse_swebench_pytest_options(text):
    status = {}
    for state, name in _swebench_tokens(text):
        found = _OPTION.search(name)
        if found:
            main, option = found.groups()
            if option.startswith("/") and not option.startswith("//") and "*" not in option:
                option = "/" + option.split("/")[-1]
            name = main + "[" + option + "]"
        status[name] = state
    return status


PARSERS = {
    "pytest": parse_pytest,
    "swebench-pytest": parse_swebench_pytest,
    "swebench-pytest-options": parse_swebench_pytest_options,
}


def verdict(expected, log):
    """(resolved, what failed) for the log of one run."""
    text = section(log)
    if text is None:
        return False, "the tests never started"
    status = PARSERS[expected["parser"]](text)
    failed = [t for t in expected["fail_to_pass"] + expected["pass_to_pass"] if status.get(t) not in OK]
    return not failed, ", ".join(failed[:10])


def main(argv):
    with open(argv[1]) as handle:
        expected = json.load(handle)
    with open(argv[2], encoding="utf-8", errors="replace") as handle:
        log = handle.read()
    resolved, failed = verdict(expected, log)
    with open(argv[3], "w") as handle:
        handle.write("1\n" if resolved else "0\n")
    print("swe_gym verdict: " + ("resolved" if resolved else "not resolved: " + failed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
