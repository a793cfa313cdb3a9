"""The restore set: what goes back to base before the hidden tests run, and what never does (gold fixes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swe_gym.grading.patch import patch_paths, unsafe_path
from swe_gym.grading.protect import restore_set, task_test_files

LITE = json.loads((Path(__file__).parent / "data" / "swebench_lite_patch_paths.json").read_text())


def test_no_swebench_lite_gold_file_is_ever_restored() -> None:
    """All 323 rows of SWE-bench Lite (test + dev): each gold path, modified or added, stays as the patch left it."""
    assert len(LITE["rows"]) == 323
    for instance_id, row in LITE["rows"].items():
        tests = task_test_files(row["test_patch"], [])
        for kind in ("modified", "added"):
            assert restore_set(dict.fromkeys(row["patch"], kind), tests) == {}, instance_id


@pytest.mark.parametrize(
    "path",
    [
        "django/test/testcases.py",
        "django/test/utils.py",
        "sympy/testing/pytest.py",
        "numpy/testing/_private/utils.py",
        "sphinx/testing/fixtures.py",
        "src/_pytest/python.py",
        "src/pytest/__init__.py",
        "astropy/units/core.py",
        "setup.py",
        "docs/conf.py",
    ],
)
def test_library_code_in_test_named_dirs_is_source(path: str) -> None:
    assert restore_set({path: "modified"}, set()) == {}


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("conftest.py", "added"),
        ("pkg/sub/conftest.py", "added"),
        ("tests/conftest.py", "modified"),
        ("pytest.ini", "added"),
        ("tests/.pytest.ini", "added"),
        (".gitattributes", "added"),
        ("pkg/.gitattributes", "modified"),
        ("pytest.py", "added"),
        ("_pytest", "added"),
        ("src/_pytest", "added"),
        ("src/pytest.py", "added"),
        ("sitecustomize.py", "added"),
        ("json.py", "added"),
        ("pkg/__pycache__/mod.cpython-311.pyc", "added"),
        ("pkg/mod.pyc", "added"),
        ("tests/test_x.py", "modified"),
        ("tests/helpers/util.py", "modified"),
        ("testing/python/approx.py", "modified"),
        ("pkg/tests/data/fixture.json", "added"),
        ("pkg/test_core.py", "modified"),
    ],
)
def test_what_steers_the_test_run_goes_back(path: str, kind: str) -> None:
    assert path in restore_set({path: kind}, set())


def test_task_test_files_come_from_the_test_patch_and_test_ids() -> None:
    files = task_test_files(["a/check_x.py"], ["lib/verify.py::test_y", "test_z (module.Case)"])
    assert files == {"a/check_x.py", "lib/verify.py"}
    assert restore_set({"lib/verify.py": "modified", "a/check_x.py": "deleted"}, files).keys() == files


@pytest.mark.parametrize("name", ["setup.cfg", "tox.ini", "pyproject.toml"])
def test_sectioned_configs_go_back_only_when_pytest_section_changed(name: str) -> None:
    section = {"setup.cfg": "[tool:pytest]\n", "tox.ini": "[pytest]\n", "pyproject.toml": "[tool.pytest.ini_options]\n"}
    value = {"pyproject.toml": 'addopts = "{}"\n'}.get(name, "addopts = {}\n")
    other = {"pyproject.toml": '[project]\nname = "x"\n'}.get(name, "[metadata]\nname = x\n")
    base = other + section[name] + value.format("-q")
    gold = other.replace("x", "y") + section[name] + value.format("-q")
    evil = other + section[name] + value.format("-q -p evil")
    for patched, restored in ((gold, False), (evil, True), (base + "\n", False)):
        found = restore_set({name: "modified"}, set(), lambda _p, b=base, n=patched: (b, n))
        assert (name in found) is restored, patched
    added = restore_set({f"tests/sub/{name}": "added"}, set(), lambda _p: (None, section[name] + value.format("")))
    assert f"tests/sub/{name}" in added
    broken = restore_set({name: "modified"}, set(), lambda _p: (base, "[tool:pytest\n\x00 = ="))
    assert name in broken


@pytest.mark.parametrize(
    "header",
    [
        "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n",
        "--- a/.git/hooks/post-checkout\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1 @@\n+x\n",
        "--- x/.GIT/config\n+++ x/.GIT/config\n@@ -1 +1 @@\n-a\n+b\n",
        "--- .git/info/attributes\n+++ .git/info/attributes\n@@ -1 +1 @@\n-a\n+b\n",
        "--- a/../../etc/passwd\n+++ b/../../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        "Index: .git/config\n--- foo\n+++ foo\n@@ -1 +1 @@\n-a\n+b\n",
        "diff --git a/x b/x\nrename from x\nrename to .git/hooks/pre-commit\n",
        'diff --git "a/.git/config" "b/.git/config"\n',
    ],
)
def test_paths_into_git_or_outside_are_refused(header: str) -> None:
    assert unsafe_path(header) is not None


def test_hunk_lines_that_look_like_headers_are_not_paths() -> None:
    patch = "diff --git a/x.sql b/x.sql\n--- a/x.sql\n+++ b/x.sql\n@@ -1,2 +1,2 @@\n--- /etc/x\n+++ /root/y\n ctx\n"
    assert unsafe_path(patch) is None
    assert patch_paths(patch) == ["x.sql"]


@given(st.lists(st.text(alphabet="abc._-/", min_size=1, max_size=12), min_size=1, max_size=4))
def test_any_path_with_a_git_component_is_refused(parts: list[str]) -> None:
    path = "/".join([*parts, ".git", "config"])
    assert unsafe_path(f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-a\n+b\n") is not None
