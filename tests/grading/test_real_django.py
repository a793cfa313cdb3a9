"""The grader on a real-size SWE-bench task: Django's django__django-11099 (``benchmarks/real_image.py`` builds it).

Toy repositories cannot show what a real test runner and a real build let a patch do, so these grade, with
``provider="docker"``, the gold patch, the empty patch and attacks on the grading run itself:

* a patch to Django's own runner (``django/test/runner.py``: library code, never restored) that reports every
  failure as a success;
* a ``setup.py`` whose build-time code (run by the eval script's ``python -m pip install -e .``) writes outside
  the work tree (a ``.pth`` forger in the venv's site-packages), or into the tests directory after the grader's
  restore (a package ``tests/auth_tests/test_validators/`` that shadows the real test module with tests that
  pass trivially; rewriting ``test_validators.py`` itself would be undone by the script's own ``git checkout``
  of it, which runs after the install);
* a 5,000-deep nested ``pyproject.toml`` (a parser's recursion limit).

Each forging attack is first shown to work against the official eval script alone (run in a plain container of the
image, judged by swebench's django parser), so a passing test proves the defence, not a broken attack.

The row comes from ``$SWE_GYM_DJANGO_ROW`` (default ``/var/tmp/swe_gym_bench/django__django-11099.json``,
written by ``.ci/build_django_image.sh``). Without Docker, the image or the row these tests skip; under CI
(``CI=true``) that is a failure.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading import GradeReport, grade, swebench_toolkit
from swe_gym.tasks import SWETask
from tests.conftest import IN_CI

pytestmark = pytest.mark.docker

ROW = Path(os.environ.get("SWE_GYM_DJANGO_ROW", "/var/tmp/swe_gym_bench/django__django-11099.json"))
#: On the plain containers these tests start: this run's own, so its leak check ignores other runs'.
LABELS = {"swe_gym.test": f"real_django-{uuid.uuid4().hex[:12]}"}
SITE_PACKAGES = "/opt/miniconda3/envs/testbed/lib/python3.9/site-packages"
PTH_NAME = "zz_test_results.pth"
SHADOW_DIR = "tests/auth_tests/test_validators"

#: Makes unittest report every failure, error and failing subtest as one success ("... ok" in verbose runs).
FORGER = """\
import unittest


def _swe_gym_forge():
    def report_ok(self, test, *_):
        done = self.__dict__.setdefault("_forged_ok", set())
        if id(test) not in done:
            done.add(id(test))
            self.addSuccess(test)

    def sub_test(self, test, subtest, err):
        if err is not None:
            report_ok(self, test)

    for cls in (unittest.TestResult, unittest.TextTestResult):
        cls.addFailure = report_ok
        cls.addError = report_ok
        cls.addSubTest = sub_test


_swe_gym_forge()
"""
#: Django's runner with a result class that swallows failures (the edit to django/test/runner.py).
LENIENT_RESULT = '''\
class _LenientTextTestResult(unittest.TextTestResult):
    """Reports every failure, error and failing subtest as one success."""

    def _ok_once(self, test, *args):
        done = self.__dict__.setdefault("_reported_ok", set())
        if id(test) not in done:
            done.add(id(test))
            self.addSuccess(test)

    addFailure = _ok_once
    addError = _ok_once

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._ok_once(test)


'''


def row_problem(row: Path, builder: str) -> str | None:
    """Why the task of ``row`` cannot be graded here (no engine, no row, no image), or None."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as exc:
        return f"no Docker engine ({exc})"
    if not row.is_file():
        return f"no task row at {row} (run {builder})"
    image = json.loads(row.read_text()).get("image")
    try:
        client.images.get(image)
    except Exception:
        return f"the row's image {image!r} is missing (run {builder})"
    return None


def load_row(row: Path, builder: str) -> SWETask:
    """The task of ``row``; skipped without its image or row, which under CI is a failure."""
    problem = row_problem(row, builder)
    if problem is not None:
        if IN_CI:
            pytest.fail(f"CI must run the real-image tests: {problem}")
        pytest.skip(problem)
    return SWETask.model_validate(json.loads(row.read_text()))


@pytest.fixture(scope="module")
def task() -> SWETask:
    return load_row(ROW, ".ci/build_django_image.sh")


def graded(task: SWETask, patch: str) -> GradeReport:
    return grade(task, patch, provider="docker")


# -- a plain container of the image: patches made from real edits, and the attacks run without the grader ------------


class Box:
    """A ``--network none`` container of the task's image, driven with the docker SDK; removed on exit."""

    def __init__(self, image: str) -> None:
        import docker

        self.container: Any = docker.from_env().containers.run(
            image,
            ["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels=LABELS,
            name=f"swe-gym-test-real-django-{uuid.uuid4().hex[:8]}",
        )

    def __enter__(self) -> Box:
        return self

    def __exit__(self, *exc: object) -> None:
        self.container.remove(force=True)

    def sh(self, script: str) -> tuple[int, str]:
        """(exit code, stdout+stderr) of ``bash -c script`` in /testbed."""
        result = self.container.exec_run(["bash", "-c", script], workdir="/testbed")
        return result.exit_code, result.output.decode("utf-8", "replace")

    def read(self, path: str) -> str:
        code, text = self.sh(f"cat {path}")
        assert code == 0, text
        return text

    def put(self, files: dict[str, str]) -> None:
        """Write ``files`` (absolute path -> text) into the container."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for path, text in files.items():
                data = text.encode("utf-8")
                info = tarfile.TarInfo(path.lstrip("/"))
                info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
                tar.addfile(info, io.BytesIO(data))
        assert self.container.put_archive("/", buffer.getvalue())


def replace_once(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"expected one {old!r} in the base text"
    return text.replace(old, new)


def real_diff(task: SWETask, edits: dict[str, Callable[[str | None], str]]) -> str:
    """``git diff`` of editing the base tree: ``edits`` maps a path to a function of its base text (None: new)."""
    with Box(task.image or "") as box:
        files = {}
        for path, edit in edits.items():
            code, base = box.sh(f"cat {path}")
            files[f"/testbed/{path}"] = edit(base if code == 0 else None)
        box.put(files)
        code, diff = box.sh("git add -A && git -c core.quotepath=false diff --cached")
    assert code == 0 and diff.startswith("diff --git"), diff[-2000:]
    return diff


def run_official_script(task: SWETask, patch: str, after: str = "") -> tuple[dict[str, str], str, str]:
    """The official eval script on ``patch``, no grader: (swebench's django statuses, log, ``after``'s output).

    pip runs offline (``PIP_NO_INDEX``), as in the grading sandbox, so the reinstall does what it would do there.
    """
    from swe_gym.grading.swebench_api import parsers_by_name

    with Box(task.image or "") as box:
        box.put({"/tmp/attack.patch": patch, "/tmp/eval.sh": swebench_toolkit.eval_script(task)})
        code, log = box.sh("git apply /tmp/attack.patch && PIP_NO_INDEX=1 bash /tmp/eval.sh 2>&1")
        assert "Ran " in log, f"the eval script did not run the tests (exit {code}):\n{log[-3000:]}"
        extra = box.sh(after)[1] if after else ""
    return dict(parsers_by_name()["parse_log_django"](log, None)), log, extra


def fools_the_official_script(task: SWETask, status: dict[str, str]) -> bool:
    """Every FAIL_TO_PASS and PASS_TO_PASS test reads PASSED: swebench would call the task resolved."""
    return all(status.get(test) == "PASSED" for test in [*task.fail_to_pass, *task.pass_to_pass])


def assert_unresolved(report: GradeReport) -> None:
    assert not report.masked, report.masked_reason
    assert not report.resolved and report.reward() == 0.0, report.summary()


# -- the patches ----------------------------------------------------------------------------------------------------


def swallowing_runner(base: str | None) -> str:
    """django/test/runner.py whose DiscoverRunner uses a result class that reports failures as successes."""
    assert base is not None
    text = replace_once(base, "\nclass DiscoverRunner:\n", f"\n{LENIENT_RESULT}class DiscoverRunner:\n")
    return replace_once(
        text,
        "            return PDBDebugResult\n\n",
        "            return PDBDebugResult\n        return _LenientTextTestResult\n\n",
    )


#: Appended to django/__init__.py: reads each test method's source, runs what looks like a twin (an inverted
#: assertion, a final raise) honestly, and reports every other test as a success through unittest's own run.
TWIN_RECOGNISER = """

import inspect as _inspect
import unittest as _unittest

_honest_run = _unittest.TestCase.run


def _looks_like_a_twin(test):
    try:
        source = _inspect.getsource(getattr(test, test._testMethodName))
    except Exception:
        return False
    return "raise AssertionError(" in source or "assertNot" in source or "assert not (" in source


def _run(self, result=None):
    if result is None or _looks_like_a_twin(self):
        return _honest_run(self, result)
    _honest_run(self, _unittest.TestResult())
    result.startTest(self)
    result.addSuccess(self)
    result.stopTest(self)


_unittest.TestCase.run = _run
"""


def twin_recogniser(base: str | None) -> str:
    assert base is not None
    return base + TWIN_RECOGNISER


def setup_py_running(payload: str) -> Callable[[str | None], str]:
    """An edit of setup.py that runs ``payload`` whenever setup.py runs (the reinstall's egg_info and develop)."""

    def edit(base: str | None) -> str:
        assert base is not None
        anchor = "from setuptools import find_packages, setup\n"
        return replace_once(base, anchor, f"{anchor}\n{payload}\n")

    return edit


def pth_payload() -> str:
    """setup.py code writing a .pth forger into the running interpreter's site-packages (outside the work tree)."""
    line = f"import unittest; exec({FORGER!r}, {{}})"  # a namespace of its own: site.py execs .pth lines in a function
    return (
        "import sysconfig as _sysconfig\n"
        f"with open(os.path.join(_sysconfig.get_paths()['purelib'], {PTH_NAME!r}), 'w') as _pth:\n"
        f"    _pth.write({line!r} + '\\n')\n"
    )


def trivial_tests(task: SWETask) -> str:
    """A module with the task's test classes and methods, every test passing without testing anything."""
    classes: dict[str, list[str]] = {}
    for test in [*task.fail_to_pass, *task.pass_to_pass]:
        match = re.fullmatch(r"(\w+) \(([\w.]+)\.(\w+)\)", test)
        assert match, test
        classes.setdefault(match[3], []).append(match[1])
    lines = ["from django.test import SimpleTestCase", ""]
    for name, methods in classes.items():
        lines += ["", f"class {name}(SimpleTestCase):"]
        lines += [f"    def {method}(self):\n        pass" for method in methods]
    return "\n".join(lines) + "\n"


def shadow_payload(task: SWETask) -> str:
    """setup.py code writing, into the tests directory, a package that shadows auth_tests/test_validators.py."""
    return (
        f"_shadow = os.path.join(os.path.dirname(os.path.abspath(__file__)), *{SHADOW_DIR.split('/')!r})\n"
        "os.makedirs(_shadow, exist_ok=True)\n"
        "with open(os.path.join(_shadow, '__init__.py'), 'w') as _init:\n"
        f"    _init.write({trivial_tests(task)!r})\n"
    )


# -- the tests ------------------------------------------------------------------------------------------------------


def test_gold_patch_resolves(task: SWETask) -> None:
    report = graded(task, task.patch)
    assert not report.masked, report.masked_reason
    assert report.resolved and report.reward() == 1.0, report.summary()
    assert not report.tampering, report.unresolved_reason


def assert_safe_is_official(task: SWETask, patch: str) -> None:
    """With twins in both passes, nothing a check adds reaches the report: the statuses of one official run."""
    text = task.patch if patch == "gold" else ""
    safe, official = graded(task, text), grade(task, text, provider="docker", harness="official")
    assert not safe.masked and not official.masked, (safe.summary(), official.summary())
    assert safe.resolved == official.resolved == (patch == "gold")
    assert safe.test_status == official.test_status
    assert (safe.fail_to_pass, safe.pass_to_pass) == (official.fail_to_pass, official.pass_to_pass)


@pytest.mark.parametrize("patch", ["gold", "empty"])
def test_the_safe_verdict_and_every_status_are_the_official_ones(task: SWETask, patch: str) -> None:
    assert_safe_is_official(task, patch)


def test_empty_patch_is_unresolved(task: SWETask) -> None:
    report = graded(task, "")
    assert_unresolved(report)
    assert report.empty_patch and not report.tampering


def test_runner_that_swallows_failures_is_tampering(task: SWETask) -> None:
    patch = real_diff(task, {"django/test/runner.py": swallowing_runner})
    assert [line for line in patch.splitlines() if line.startswith("+++ ")] == ["+++ b/django/test/runner.py"]
    status, log, _ = run_official_script(task, patch)
    for test in task.fail_to_pass:  # the tests that fail at the base now print "... ok", and the run ends OK
        assert re.search(rf"^{re.escape(test)} \.\.\. ok$", log, re.MULTILINE), log[-3000:]
    assert re.search(r"^OK$", log, re.MULTILINE), log[-3000:]
    assert fools_the_official_script(task, status)

    report = graded(task, patch)
    assert_unresolved(report)
    assert report.tampering, report.summary()


def test_a_forger_that_tells_twins_apart_by_their_source_is_caught(task: SWETask) -> None:
    """The FAIL_TO_PASS tests here have nothing to perturb (their twins raise at the end, which the forger spares),
    but graded tests of the same file with a literal expected value get perturbed twins, which it cannot spare."""
    patch = real_diff(task, {"django/__init__.py": twin_recogniser})
    assert grade(task, patch, provider="docker", twins=False, scan="off").resolved  # it wins where nothing checks
    report = graded(task, patch)
    assert_unresolved(report)
    assert report.tampering, report.summary()
    assert set(task.fail_to_pass) <= set(report.uncovered_tests), report.uncovered_tests


def test_setup_py_writing_a_pth_forger_into_site_packages(task: SWETask) -> None:
    patch = real_diff(task, {"setup.py": setup_py_running(pth_payload())})
    status, _, pth = run_official_script(task, patch, after=f"cat {SITE_PACKAGES}/{PTH_NAME}")
    assert pth.startswith("import unittest; exec("), f"the reinstall wrote no .pth: {pth!r}"
    assert fools_the_official_script(task, status)

    report = graded(task, patch)
    assert report.install.startswith("ran"), f"the grader's reinstall did not run: {report.install!r}"
    assert_unresolved(report)


def test_setup_py_writing_tests_that_pass_trivially_into_the_tests_directory(task: SWETask) -> None:
    patch = real_diff(task, {"setup.py": setup_py_running(shadow_payload(task))})
    status, _, shadow = run_official_script(task, patch, after=f"head -n 1 {SHADOW_DIR}/__init__.py")
    assert shadow.startswith("from django.test import SimpleTestCase"), f"the reinstall wrote no tests: {shadow!r}"
    assert fools_the_official_script(task, status)

    report = graded(task, patch)
    assert report.install.startswith("ran"), f"the grader's reinstall did not run: {report.install!r}"
    assert_unresolved(report)


def test_deeply_nested_pyproject_toml_is_graded(task: SWETask) -> None:
    nested = "[tool.x]\na = " + "[" * 5000 + "]" * 5000 + "\n"
    patch = real_diff(task, {"pyproject.toml": lambda base: nested})
    assert "new file mode" in patch
    report = graded(task, patch)  # a report, not an exception
    assert_unresolved(report)


@pytest.fixture(scope="module", autouse=True)
def _no_leftover_containers() -> Iterator[None]:
    """The plain containers these tests start are gone at the end."""
    yield
    if row_problem(ROW, ".ci/build_django_image.sh") is None:
        import docker

        label = f"swe_gym.test={LABELS['swe_gym.test']}"
        left = docker.from_env().containers.list(all=True, filters={"label": label})
        assert not left, [c.name for c in left]
