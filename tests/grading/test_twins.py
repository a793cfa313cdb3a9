"""Twins: graded test ids resolve to their definitions, and twins invert them under the real runners.

Twins run under real pytest and unittest, with the code they test correct (the twin must fail),
broken (an inverted twin must pass: it is inverted, not merely failing) and with results forged by
a conftest (the twin passes, which is what the grader detects). Patches go through real ``git apply``.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swe_gym.grading.twins import TestDef, index_tests, make_patch, render

GOOD_CALC = """\
def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def shout(word):
    return word.upper() + "!"


def div(a, b):
    return a / b
"""
#: Every function but div wrong, so that each original assertion on them fails.
BROKEN_CALC = GOOD_CALC.replace("a + b", "a + b + 1").replace("a * b", "a * b + 1").replace(".upper()", ".lower()")

TEST_CALC = """\
# Tests of calc 🎉 — the emoji and the dash shift byte offsets on this line only.
import pytest

from calc import add, div, mul, shout


def test_add():
    assert add(1, 2) == 3


@pytest.mark.parametrize(("a", "b", "total"), [(1, 2, 3), (2, 2, 4)])
def test_add_param(a, b, total):
    assert add(a, b) == total, f"{a} + {b}"


class TestCalc:
    def test_mul(self):
        product = mul(2, 3)
        assert product == 6


def test_div_by_zero():
    with pytest.raises(ZeroDivisionError):
        div(1, 0)


def test_early_return():
    if div(4, 2) == 2:
        return
    div(1, 0)


def test_multiline():
    assert (
        add(2, 2)  # four, not "five)"
        == 4
    ), "sum"


def test_accents():
    word = "café"; assert shout(word) == "CAFÉ!"
"""
#: Twins that cannot be inverted: they fail whatever the code does.
FALLBACKS = {"test_calc.py::test_div_by_zero", "test_calc.py::test_early_return"}

FORGING_CONFTEST = """\
import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    return True  # "called": no test function ever runs
"""

TEST_UNITS = """\
import unittest

from calc import add, shout


class Checks:
    def test_inherited(self):
        self.assertIn("CAF", shout("café"))


class CalcTests(Checks, unittest.TestCase):
    def test_equal(self):
        self.assertEqual(add(1, 2), 3)

    def test_true(self):
        self.assertTrue(add(1, 1) == 2, msg="sum")

    def test_in(self):
        self.assertIn(3, [add(1, 2)])
"""

_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR) (\S+)", re.MULTILINE)
_VERBOSE = re.compile(r"^(\w+ \([\w.]+\)) \.\.\. (ok|FAIL|ERROR)$", re.MULTILINE)


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _python(cwd: Path, *args: str) -> str:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    return done.stdout + done.stderr


def _pytest(root: Path, files: dict[str, str]) -> dict[str, str]:
    """Outcome of every test of a fresh project holding `files`, by node id."""
    output = _python(_project(root, files), "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "test_calc.py")
    return {test_id: outcome for outcome, test_id in _SUMMARY.findall(output)}


def _unittest(root: Path, files: dict[str, str]) -> dict[str, str]:
    output = _python(_project(root, files), "-m", "unittest", "-v", "test_units")
    return {test_id: outcome for test_id, outcome in _VERBOSE.findall(output)}


def _twin_all(sources: dict[str, str], test_ids: list[str]) -> tuple[dict[str, str], dict[str, TestDef]]:
    index = index_tests(test_ids, sources)
    assert not index.missing
    defs = {test_id: index.defs[index.of_test[test_id]] for test_id in test_ids}
    return render(sources, index, index.defs.keys()), defs


def test_pytest_twins_fail_on_correct_code_and_pass_on_broken_or_forged(tmp_path: Path) -> None:
    originals = _pytest(tmp_path / "original", {"calc.py": GOOD_CALC, "test_calc.py": TEST_CALC})
    assert len(originals) == 8 and set(originals.values()) == {"PASSED"}, originals
    twins, defs = _twin_all({"test_calc.py": TEST_CALC}, list(originals))
    assert {test_id for test_id, d in defs.items() if d.inverted == 0} == FALLBACKS
    twin_file = twins["test_calc.py"]

    runs = {
        "correct": {"calc.py": GOOD_CALC, "test_calc.py": twin_file},
        "broken": {"calc.py": BROKEN_CALC, "test_calc.py": TEST_CALC},
        "broken_twins": {"calc.py": BROKEN_CALC, "test_calc.py": twin_file},
        "forged": {"calc.py": GOOD_CALC, "test_calc.py": twin_file, "conftest.py": FORGING_CONFTEST},
    }
    with ThreadPoolExecutor() as pool:  # independent runs
        correct, broken, broken_twins, forged = pool.map(lambda run: _pytest(tmp_path / run[0], run[1]), runs.items())

    assert correct == dict.fromkeys(originals, "FAILED")
    for test_id in set(originals) - FALLBACKS:
        assert (broken[test_id], broken_twins[test_id]) == ("FAILED", "PASSED"), test_id
    assert {broken_twins[test_id] for test_id in FALLBACKS} == {"FAILED"}
    assert forged == dict.fromkeys(originals, "PASSED")


def test_unittest_twins_fail_where_the_originals_pass(tmp_path: Path) -> None:
    originals = _unittest(tmp_path / "original", {"calc.py": GOOD_CALC, "test_units.py": TEST_UNITS})
    assert len(originals) == 4 and set(originals.values()) == {"ok"}, originals
    assert "test_equal (test_units.CalcTests.test_equal)" in originals  # the Python 3.11 form
    twins, defs = _twin_all({"test_units.py": TEST_UNITS}, list(originals))
    assert defs["test_inherited (test_units.CalcTests.test_inherited)"].key == "test_units.py::Checks.test_inherited"
    assert {d.inverted for d in defs.values()} == {1}

    correct = _unittest(tmp_path / "correct", {"calc.py": GOOD_CALC, "test_units.py": twins["test_units.py"]})
    assert correct == dict.fromkeys(originals, "FAIL")
    broken = _unittest(tmp_path / "broken", {"calc.py": BROKEN_CALC, "test_units.py": twins["test_units.py"]})
    assert broken == dict.fromkeys(originals, "ok")


def _def_lines(source: str, qualname: str) -> tuple[int, int]:
    """First and last line (1-based) of a definition, decorators excluded."""
    body = ast.parse(source).body
    for name in qualname.split("."):
        node = next(n for n in body if getattr(n, "name", None) == name)
        body = node.body
    return node.lineno, node.end_lineno


def test_bytes_outside_the_twinned_def_are_kept() -> None:
    sources = {"test_calc.py": TEST_CALC, "test_other.py": "def test_z():\n    assert 1\n", "helpers.py": "x = 'é'\n"}
    node_ids = ["test_calc.py::test_add", "test_calc.py::TestCalc::test_mul", "test_calc.py::test_early_return"]
    node_ids += ["test_calc.py::test_multiline", "test_calc.py::test_accents", "test_calc.py::test_div_by_zero"]
    index = index_tests(node_ids, sources)
    original = TEST_CALC.splitlines(keepends=True)
    for key, test_def in index.defs.items():
        rendered = render(sources, index, [key])
        assert rendered["test_other.py"] == sources["test_other.py"] and rendered["helpers.py"] == sources["helpers.py"]
        lines = rendered["test_calc.py"].splitlines(keepends=True)
        first, last = _def_lines(TEST_CALC, test_def.qualname)
        added = 0 if test_def.inverted else 1  # the fallback's raise takes a line of its own
        assert len(lines) == len(original) + added
        assert lines[: first - 1] == original[: first - 1]
        assert lines[last + added :] == original[last:]
        assert lines[first - 1] == original[first - 1]  # the def line itself
    assert render(sources, index, []) == sources


def test_crlf_and_byte_order_mark_survive() -> None:
    source = (
        "\ufeffimport os\r\n\r\ndef test_a():\r\n    s = 'ñandú'; assert s\r\n\r\ndef test_b():\r\n    os.getcwd()\r\n"
    )
    index = index_tests(["t.py::test_a", "t.py::test_b"], {"t.py": source})
    twin = render({"t.py": source}, index, index.defs.keys())["t.py"]
    expected = source.replace("assert s", "assert not (s)").replace(
        "os.getcwd()\r\n", 'os.getcwd()\r\n    raise AssertionError("unexpected success")\r\n'
    )
    assert twin == expected


def test_a_file_in_its_declared_encoding_stays_in_it() -> None:
    raw = "# -*- coding: latin-1 -*-\ndef test_a():\n    s = 'é'; assert s == 'é'\n".encode("latin-1")
    text = raw.decode("utf-8", "surrogateescape")  # as the grader reads a file that is not UTF-8
    index = index_tests(["t.py::test_a"], {"t.py": text})
    twin = render({"t.py": text}, index, index.defs.keys())["t.py"].encode("utf-8", "surrogateescape")
    assert twin == raw.replace(b"assert s == '\xe9'", b"assert not (s == '\xe9')")
    undeclared = index_tests(["u.py::test_b"], {"u.py": "def test_b():\n    assert '\udce9'\n"}).missing
    assert undeclared == {"u.py::test_b": "its file is neither UTF-8 nor in the encoding it declares"}


def _twin_body(body: str) -> tuple[str, int]:
    """The twin of a method ``test_x`` with `body` (indented for it here), and how many assertions it inverts."""
    source = "import pytest\n\n\nclass TestX:\n    def test_x(self):\n" + re.sub(r"(?m)^(?=.)", " " * 8, body)
    index = index_tests(["m.py::TestX::test_x"], {"m.py": source})
    twin = render({"m.py": source}, index, index.defs.keys())["m.py"]
    compile(twin, "m.py", "exec")
    twin_body = twin.split("def test_x(self):\n", 1)[1]
    return re.sub(r"(?m)^ {1,8}", "", twin_body), index.defs["m.py::TestX.test_x"].inverted


RAISE = 'raise AssertionError("unexpected success")'


@pytest.mark.parametrize(
    ("body", "twin", "inverted"),
    [
        ("assert x, 'm'\n", "assert not (x), 'm'\n", 1),
        ("assert(x)\n", "assert(not (x))\n", 1),
        ("assert x == \\\n    1\n", "assert not (x == \\\n    1)\n", 1),
        ("self.assertEqual(a, b)\n", "self.assertNotEqual(a, b)\n", 1),
        ("self.assertFalse(a); cls.assertIsNone(b)\n", "self.assertTrue(a); cls.assertIsNotNone(b)\n", 2),
        ("self.assertGreater(a, b)\n", "self.assertLessEqual(a, b)\n", 1),
        ("self.assertLessEqual(a, b)\n", "self.assertGreater(a, b)\n", 1),
        ("self.assertNotIsInstance(a, int)\n", "self.assertIsInstance(a, int)\n", 1),
        ("self.assertAlmostEqual(a, b, places=2)\n", "self.assertNotAlmostEqual(a, b, places=2)\n", 1),
        ("self.assertRegex(t, 'a')\n", "self.assertNotRegex(t, 'a')\n", 1),
        ("self.assertContains(r, 'a', status_code=201)\n", "self.assertNotContains(r, 'a', status_code=201)\n", 1),
        ("self.assertHTMLEqual(a, b)\n", "self.assertHTMLNotEqual(a, b)\n", 1),
        ("self.assertJSONNotEqual(a, b)\n", "self.assertJSONEqual(a, b)\n", 1),
        # The same arguments would mean something else (or nothing) to the negation: left alone.
        ("self.assertContains(r, 'a', 2)\n", f"self.assertContains(r, 'a', 2)\n{RAISE}\n", 0),
        ("self.assertContains(r, 'a', count=2)\n", f"self.assertContains(r, 'a', count=2)\n{RAISE}\n", 0),
        ("self.assertNotContains(r, 'a', 200)\n", f"self.assertNotContains(r, 'a', 200)\n{RAISE}\n", 0),
        ("self.assertRegex(t, expected_regex='a')\n", f"self.assertRegex(t, expected_regex='a')\n{RAISE}\n", 0),
        ("self.assertEqual(*pair)\n", "self.assertNotEqual(*pair)\n", 1),
        ("self.assertInHTML(a, b)\n", f"self.assertInHTML(a, b)\n{RAISE}\n", 0),
        ("helper.check.assertTrue(a)\n", f"helper.check.assertTrue(a)\n{RAISE}\n", 0),
        # An assertion whose failure may be swallowed is no inversion to rely on.
        (
            "with pytest.raises(ValueError):\n    assert int('x') == 1\n",
            f"with pytest.raises(ValueError):\n    assert int('x') == 1\n{RAISE}\n",
            0,
        ),
        (
            "try:\n    assert f()\nexcept AssertionError:\n    assert g()\n",
            "try:\n    assert f()\nexcept AssertionError:\n    assert not (g())\n",
            1,
        ),
        (
            "try:\n    assert f()\nexcept KeyError:\n    pass\n",
            "try:\n    assert not (f())\nexcept KeyError:\n    pass\n",
            1,
        ),
        # Only the test's own frame: nested functions, lambdas and classes are not the test.
        ("def helper():\n    assert a\nassert helper()\n", "def helper():\n    assert a\nassert not (helper())\n", 1),
        ("check = lambda: self.assertTrue(a)\ncheck()\n", f"check = lambda: self.assertTrue(a)\ncheck()\n{RAISE}\n", 0),
        # Fallback: every return of its own frame raises, and so does the end of the body.
        ("if a:\n    return 1\nf()\n", f"if a:\n    {RAISE}\nf()\n{RAISE}\n", 0),
        ("return (a,\n        b)  # c\n", f"{RAISE[:-1]}\n)  # c\n", 0),
        ("f()  # no trailing newline", f"f()  # no trailing newline\n{RAISE}", 0),
    ],
)
def test_twin_transformation(body: str, twin: str, inverted: int) -> None:
    assert _twin_body(body) == (twin, inverted)


@pytest.mark.parametrize(
    ("source", "twin"),
    [
        ("def test_x(): f()\n", f"def test_x(): f(); {RAISE}\n"),
        ("def test_x(): return f()  # c\n", f"def test_x(): {RAISE}  # c\n"),
        ("def test_x(): x = 'é'; assert x == 'é'\n", "def test_x(): x = 'é'; assert not (x == 'é')\n"),
    ],
)
def test_one_line_defs(source: str, twin: str) -> None:
    index = index_tests(["m.py::test_x"], {"m.py": source})
    assert render({"m.py": source}, index, index.defs.keys())["m.py"] == twin


ID_SOURCES = {
    "tests/test_fmt.py": """\
import pytest


def test_format():
    assert 1


class TestC:
    def test_m(self):
        assert 1

    class Inner:
        def test_m(self):
            assert 1


@pytest.mark.parametrize("day", ["2016-01-01"])
def test_iso_week_year_boundaries(day):
    assert day


def test_gen():
    for i in range(3):
        yield check, i


def test_nested_gen():
    return (i for i in range(3))  # the generator is not the test's own


def make_test():
    return lambda: None


test_made = make_test()


class Cycle(Cycle):
    pass

if pytest:
    def test_conditional():
        assert 1


def test_redefined():
    assert "first"


def test_redefined():
    assert "second"
""",
    "tests/auth_tests/test_validators.py": '''\
from django.test import SimpleTestCase


class UsernameValidatorsTests(SimpleTestCase):
    def test_ascii_validator(self):
        self.assertEqual(1, 1)

    def test_safe(self):
        """
        A message's text is safe to render.

        More words.
        """
        self.assertTrue(True)


class SharedChecks:
    def test_shared(self):
        self.assertIn(1, [1])


class Left(SharedChecks):
    def test_shared(self):
        self.assertIn(2, [2])


class Right(SharedChecks):
    pass


class Both(Right, Left, SimpleTestCase):
    pass


class Disabled(Left, SimpleTestCase):
    test_shared = None
''',
    "sympy/core/tests/test_basic.py": "def test_issue_12345():\n    assert 1\n",
    "pkg/tests/test_mod.py": "class ModTests(unittest.TestCase):\n    def test_x(self):\n        pass\n",
    "a/test_dup.py": "def test_dup():\n    assert 1\n",
    "b/test_dup.py": "def test_dup():\n    assert 1\n",
    "tests/test_broken.py": "def test_x(:\n    pass\n",
    "testing/sub/test_a.py": "def t():\n    assert 1\n",
}


@pytest.mark.parametrize(
    ("test_id", "key"),
    [
        ("tests/test_fmt.py::test_format", "tests/test_fmt.py::test_format"),
        ("tests/test_fmt.py::TestC::test_m", "tests/test_fmt.py::TestC.test_m"),
        ("tests/test_fmt.py::TestC::Inner::test_m", "tests/test_fmt.py::TestC.Inner.test_m"),
        ("tests/test_fmt.py::TestC::()::test_m", "tests/test_fmt.py::TestC.test_m"),
        (
            "tests/test_fmt.py::test_iso_week_year_boundaries[2016-01-01]",
            "tests/test_fmt.py::test_iso_week_year_boundaries",
        ),
        (
            "tests/test_fmt.py::test_iso_week_year_boundaries[a::b [c] d]",
            "tests/test_fmt.py::test_iso_week_year_boundaries",
        ),
        ("tests/test_fmt.py::test_nested_gen", "tests/test_fmt.py::test_nested_gen"),
        ("tests/test_fmt.py::test_redefined", "tests/test_fmt.py::test_redefined"),
        ("sub/test_a.py::t", "testing/sub/test_a.py::t"),
        ("./testing/sub/test_a.py::t", "testing/sub/test_a.py::t"),
        (
            "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)",
            "tests/auth_tests/test_validators.py::UsernameValidatorsTests.test_ascii_validator",
        ),
        (
            "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests.test_ascii_validator)",
            "tests/auth_tests/test_validators.py::UsernameValidatorsTests.test_ascii_validator",
        ),
        ("test_x (pkg.tests.test_mod.ModTests)", "pkg/tests/test_mod.py::ModTests.test_x"),
        ("test_x (pkg.tests.test_mod.ModTests.test_x) (i=1)", "pkg/tests/test_mod.py::ModTests.test_x"),
        (
            "A message's text is safe to render.",
            "tests/auth_tests/test_validators.py::UsernameValidatorsTests.test_safe",
        ),
        ("test_issue_12345", "sympy/core/tests/test_basic.py::test_issue_12345"),
        # Inherited: the base's definition, in method resolution order (Both -> Right -> Left -> SharedChecks).
        (
            "test_shared (auth_tests.test_validators.Right)",
            "tests/auth_tests/test_validators.py::SharedChecks.test_shared",
        ),
        ("test_shared (auth_tests.test_validators.Both)", "tests/auth_tests/test_validators.py::Left.test_shared"),
    ],
)
def test_ids_resolve(test_id: str, key: str) -> None:
    index = index_tests([test_id], ID_SOURCES)
    path, qualname = key.split("::")
    assert index.missing == {} and index.of_test == {test_id: key}
    assert (index.defs[key].path, index.defs[key].qualname) == (path, qualname)


@pytest.mark.parametrize(
    ("test_id", "reason"),
    [
        ("test_dup", "ambiguous: defined in 2 places"),
        ("tests/test_missing.py::test_x", "no test file matches"),
        ("tests/test_fmt.py::test_nope", "has no test_nope"),
        ("tests/test_fmt.py::TestC::Nope::test_m", "has no TestC.Nope"),
        ("tests/test_fmt.py::test_gen", "generator"),
        ("tests/test_fmt.py::test_made", "assignment"),
        ("tests/test_fmt.py::test_conditional", "inside a block"),
        ("tests/test_fmt.py::TestC", "is a class"),
        ("tests/test_fmt.py::test_format::x", "not a class"),
        ("tests/test_broken.py::test_x", "does not parse"),
        ("test_x (test_broken.Tests)", "does not parse"),
        ("README.rst::README.rst", "no test file matches"),
        ("tests/test_fmt.py::tests.test_fmt.make_test", "doctest"),
        ("test_shared (auth_tests.test_validators.Disabled)", "assignment"),
        ("test_y (nowhere.Tests)", "no test file for module"),
        ("No test has this docstring.", "no test function has this docstring"),
        ("test_unknown_anywhere", "no test function named"),
        ("tests/test_fmt.py::()", "names no test"),
        ("test_m (test_fmt.Cycle)", "no consistent method resolution order"),
    ],
)
def test_ids_without_twin(test_id: str, reason: str) -> None:
    index = index_tests([test_id], ID_SOURCES)
    assert index.defs == {} and index.of_test == {}
    assert reason in index.missing[test_id]


def test_ids_sharing_a_def_share_its_key() -> None:
    ids = ["tests/test_fmt.py::test_iso_week_year_boundaries[a]", "tests/test_fmt.py::test_iso_week_year_boundaries[b]"]
    ids += ["test_shared (auth_tests.test_validators.Right)", "test_shared (auth_tests.test_validators.Both)"]
    index = index_tests(ids, ID_SOURCES)
    assert len(set(index.of_test.values())) == 3 and len(index.defs) == 3
    rendered = render(ID_SOURCES, index, index.defs.keys())
    assert rendered["tests/auth_tests/test_validators.py"].count("assertNotIn") == 2


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, timeout=30)


def test_make_patch_applies_with_git(tmp_path: Path) -> None:
    base: dict[str, str | None] = {
        "mod.py": "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n",
        "with space.py": "one\ntwo",  # no newline at the end before
        "gains newline.py": "x\ny",
        "loses newline.py": "x\ny\n",
        "crlf.py": "a\r\nb\r\n",
        "same.py": "unchanged\n",
        "new/café dir/ñ.py": None,
    }
    new = {
        "mod.py": "a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\n",
        "with space.py": "one\nTWO",
        "gains newline.py": "x\ny\n",
        "loses newline.py": "x\ny",
        "crlf.py": "a\r\nB\r\n",
        "same.py": "unchanged\n",
        "new/café dir/ñ.py": "brand\nnew",
        'q"uote\tpath.py': "quoted\n",
        "empty.py": "",
    }
    _git(tmp_path, "init", "-q")
    for path, text in base.items():
        if text is not None:
            (tmp_path / path).write_bytes(text.encode())
    patch = make_patch(base, new)
    headers = re.findall(r"^diff --git (.+)$", patch, re.MULTILINE)
    expected = [f"a/{path} b/{path}" for path in sorted(new) if path != "same.py"]  # none for an unchanged file
    expected[expected.index('a/q"uote\tpath.py b/q"uote\tpath.py')] = r'"a/q\"uote\tpath.py" "b/q\"uote\tpath.py"'
    assert headers == expected
    (tmp_path / "twin.patch").write_bytes(patch.encode())
    _git(tmp_path, "apply", "--check", "twin.patch")
    _git(tmp_path, "apply", "twin.patch")
    for path, text in new.items():
        assert (tmp_path / path).read_bytes() == text.encode(), path
    assert make_patch(dict(reversed(base.items())), dict(reversed(new.items()))) == patch
    assert make_patch(base, {p: t for p, t in base.items() if t is not None}) == ""


def test_patches_of_two_passes_touch_only_their_twins(tmp_path: Path) -> None:
    sources = {"test_calc.py": TEST_CALC, "test_units.py": TEST_UNITS}
    ids = ["test_calc.py::test_add", "test_calc.py::test_accents", "test_equal (test_units.CalcTests)"]
    index = index_tests(ids, sources)
    for number, keys in enumerate((sorted(index.defs)[:2], sorted(index.defs)[2:])):
        root = _project(tmp_path / str(number), sources)
        _git(root, "init", "-q")
        rendered = render(sources, index, keys)
        patch = make_patch(sources, rendered)
        assert re.findall(r"^diff --git a/(\S+)", patch, re.MULTILINE) == [keys[0].split("::")[0]]
        (root / "pass.patch").write_text(patch, encoding="utf-8")
        _git(root, "apply", "pass.patch")
        assert {p: (root / p).read_text(encoding="utf-8") for p in sources} == rendered


_TEMPLATES = [
    # (body, asserts it has, whether an assertion always runs)
    ("    assert {a} == {a}\n", 1, True),
    ("    assert ({a} ==  # {a} == {b}?\n            {a}), 'ü'\n", 1, True),
    ("    value = [{a}, {b}]\n    assert {b} in value\n", 1, True),
    ("    if {a} > {b}:\n        return\n    assert not {a} > {b}\n", 1, False),
    ("    f = lambda: {a}\n    f()\n", 0, True),
    ("    for i in range({a} + 1):\n        assert i <= {a}\n", 1, True),
    ("    '''Doc é.'''\n    return {a}\n", 0, True),
    ("    x = 1; y = '🎉'; assert x, y\n", 1, True),
]
_functions = st.lists(
    st.tuples(st.integers(0, len(_TEMPLATES) - 1), st.integers(0, 9), st.integers(0, 9), st.booleans()),
    min_size=1,
    max_size=6,
)


def _segment(source: str, name: str) -> str:
    node = next(n for n in ast.walk(ast.parse(source)) if getattr(n, "name", None) == name)
    return ast.get_source_segment(source, node)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_functions)
def test_render_property(functions: list[tuple[int, int, int, bool]]) -> None:
    parts = ["# é header\n"]
    for number, (template, a, b, _) in enumerate(functions):
        parts.append(f"\ndef test_{number}():\n" + _TEMPLATES[template][0].format(a=a, b=b))
    source = "".join(parts)
    index = index_tests([f"t.py::test_{n}" for n in range(len(functions))], {"t.py": source})
    chosen = [f"t.py::test_{n}" for n, function in enumerate(functions) if function[3]]
    twin = render({"t.py": source}, index, chosen)["t.py"]
    namespace: dict[str, object] = {}
    exec(compile(twin, "t.py", "exec"), namespace)
    for number, (template, _, _, twinned) in enumerate(functions):
        name = f"test_{number}"
        if not twinned:
            assert _segment(twin, name) == _segment(source, name)
            continue
        _, asserts, always = _TEMPLATES[template]
        assert index.defs[f"t.py::{name}"].inverted == asserts
        if always:
            with pytest.raises(AssertionError):
                namespace[name]()
    assert _without(twin, chosen) == _without(source, chosen)


def _without(source: str, keys: list[str]) -> str:
    """`source` with the definitions of `keys` cut out: what rendering must leave byte for byte."""
    for key in keys:
        source = source.replace(_segment(source, key.split("::")[1]), "", 1)
    return source
