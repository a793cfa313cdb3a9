"""The two grading modes and the eval script's reinstall, on real Docker with swebench's own eval scripts.

``harness="official"`` must follow ``run_evaluation``'s rules where they differ from the safe grader's
(its apply order without resets, its log checks over the whole log, no integrity checks); both modes
skip the reinstall of an editable install unless the patch changes a build input, and run it otherwise.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading import grade
from swe_gym.grading.eval_plan import OFFLINE_PIP, build_inputs, is_editable, plan, without_state_commands
from swe_gym.grading.eval_script import build_eval_script
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import SWETask, load_tasks
from tests.conftest import TEST_IMAGE, require_docker
from tests.family_images import CalcRepo, swebench_image

IMAGE = "swebench/sweb.eval.x86_64.pytest-dev_1776_pytest-9001:latest"
#: What swebench's spec for pytest-dev/pytest 5.4 reinstalls with (editable).
INSTALL = "python -m pip install -e ."


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> SWETask:
    """A classic row of a repo/version whose swebench spec reinstalls editable, in a SWE-bench-like image."""
    require_docker()
    root = tmp_path_factory.mktemp("modes")
    repo = CalcRepo.create(root / "repo")
    swebench_image(IMAGE, repo, root / "context")
    row: dict[str, Any] = {
        "repo": "pytest-dev/pytest",
        "instance_id": "pytest-dev__pytest-9001",
        "base_commit": repo.base,
        "patch": repo.gold_patch,
        "test_patch": repo.test_patch,
        "problem_statement": "add() subtracts instead of adding",
        "version": "5.4",
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_sub"],
    }
    (loaded,) = load_tasks([row])
    assert loaded.image == IMAGE
    return loaded


def _grade(task: SWETask, patch: str, harness: str = "safe") -> Any:
    return grade(task, patch, provider="docker", spec=SandboxSpec(), harness=harness)  # type: ignore[arg-type]


# --- the reinstall plan ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("install", "editable"),
    [
        ("python -m pip install -e .", True),
        ("pip install -e .[test] --verbose", True),
        ("python -m pip install -v --no-use-pep517 --no-build-isolation -e .", True),
        ("pip install --editable=.", True),
        ("python setup.py develop", True),
        ("python -m pip install .", False),
        ("pip install -r requirements-dev.txt && pip install .", False),
    ],
)
def test_editable_installs_are_told_apart(install: str, editable: bool) -> None:
    assert is_editable(install) is editable


def test_build_inputs_are_what_a_reinstall_reads() -> None:
    changed = {
        "src/pkg/core.py": "modified",
        "pkg/sub/new.py": "added",
        "docs/index.rst": "modified",
        "setup.cfg": "modified",
        "pkg/_speedups.c": "modified",
        "pkg/_impl.pyx": "added",
        "pkg.egg-info/entry_points.txt": "modified",
        "newtop.py": "added",
        "src/newpkg/__init__.py": "added",
        "requirements-dev.txt": "modified",
        "evil.pth": "added",
        "pkg/__init__.py": "modified",
    }
    assert build_inputs(changed) == sorted(
        [
            "setup.cfg",
            "pkg/_speedups.c",
            "pkg/_impl.pyx",
            "pkg.egg-info/entry_points.txt",
            "newtop.py",
            "src/newpkg/__init__.py",
            "requirements-dev.txt",
            "evil.pth",
        ]
    )


def test_the_plan_skips_only_an_editable_install_untouched_by_the_patch() -> None:
    script = f"cd /testbed\n{INSTALL}\npytest -rA\n"
    skipped, why = plan(script, INSTALL, {"pkg/core.py": "modified"})
    assert INSTALL not in skipped.splitlines() and "pytest -rA" in skipped and why.startswith("skipped")
    assert plan(script, INSTALL, {"setup.py": "modified"}) == (
        script,
        "ran (offline): the patch changed build inputs (setup.py)",
    )
    plain = script.replace(INSTALL, "python -m pip install .")
    assert plan(plain, "python -m pip install .", {}) == (plain, "ran (offline): the install is not editable")
    assert plan(script, None, {}) == (script, "none in the eval script")


def test_the_plan_leaves_out_the_git_commands_that_only_print_state() -> None:
    base = "d6f65d25b8acbd299d58b0cc12c65e8ded2985b5"
    state = ["git status", "git show", f"git -c core.fileMode=false diff {base}"]
    kept = [
        "git config --global --add safe.directory /testbed",
        f"git checkout {base} tests/test_x.py",
        "git apply -v - <<'EOF_1'",
        " git status",  # a context line of the test patch: a patch's lines never start with "git"
        "EOF_1",
        "git status --porcelain > /tmp/x",  # not only printing: kept
    ]
    script = "\n".join(["#!/bin/bash", *state, *kept, "pytest -rA"]) + "\n"
    assert plan(script, None, {})[0] == script  # the official mode keeps them: swebench reads the whole log
    planned = without_state_commands(script)
    lines = planned.splitlines()
    assert [line for line in lines if line.startswith(": swe_gym: left out, it prints state only: ")] == [
        f": swe_gym: left out, it prints state only: '{line}'" for line in state
    ]
    assert subprocess.run(["bash", "-n"], input=planned, text=True).returncode == 0  # still a valid script
    assert all(line in lines for line in kept) and planned.endswith("pytest -rA\n")


@pytest.mark.parametrize(
    ("enabled", "runs"),
    [("C.UTF-8 UTF-8\n", False), ("# en_US.UTF-8 UTF-8\nC.UTF-8 UTF-8\nen_US.UTF-8 UTF-8\n", True)],
)
def test_locale_gen_runs_only_for_a_locale_not_built_yet(enabled: str, runs: bool) -> None:
    """In the test image only C.utf8 is built: asking for it again is skipped, asking for en_US runs it."""
    require_docker()
    from swe_gym.sandbox import Sandbox

    script = "#!/bin/bash\nsed -i 's/^# //' /etc/locale.gen && locale-gen\necho done\n"
    planned, _ = plan(script, None, {})
    fake = "#!/bin/sh\necho the real locale-gen ran\n"
    with Sandbox.create(SandboxSpec(image=TEST_IMAGE), "docker") as box:
        box.write_file("/etc/locale.gen", enabled)
        box.write_file("/usr/local/bin/locale-gen", fake, mode=0o755)
        box.write_file("/tmp/eval.sh", planned, mode=0o755)
        output = box.exec("bash /tmp/eval.sh").output
    assert ("the real locale-gen ran" in output) is runs, output
    assert ("locale-gen skipped" in output) is not runs and output.rstrip().endswith("done")


# --- on real Docker -------------------------------------------------------------------------------------------


def test_both_modes_resolve_gold_and_skip_the_untouched_editable_reinstall(task: SWETask) -> None:
    for harness in ("safe", "official"):
        gold = _grade(task, task.patch, harness)
        assert gold.resolved and not gold.masked, (harness, gold.log_tail)
        assert gold.harness == harness and gold.install.startswith("skipped"), gold.install
        assert INSTALL not in gold.eval_log and "reinstall skipped" in gold.eval_log
        assert {"apply", "tests"} <= set(gold.timings_s)
        empty = _grade(task, "", harness)
        assert not empty.resolved and not empty.masked and empty.fail_to_pass.failure == task.fail_to_pass
    garbage = _grade(task, "this is not a diff\n", "official")
    assert not garbage.patch_applied and not garbage.masked
    assert garbage.unresolved_reason == "Patch Apply Failed (swebench: error)"


def test_a_patch_that_changes_a_build_input_gets_the_reinstall_offline(task: SWETask) -> None:
    patch = task.patch + (
        "diff --git a/setup.py b/setup.py\nnew file mode 100644\n--- /dev/null\n+++ b/setup.py\n@@ -0,0 +1 @@\n"
        "+from setuptools import setup; setup(name='calc', py_modules=['calc'])\n"
    )
    report = _grade(task, patch)
    assert report.resolved, report.log_tail
    assert report.install == "ran (offline): the patch changed build inputs (setup.py)"
    assert f"+ {INSTALL}" in report.install_log  # set -x shows the reinstall ran, on its own before the restore
    assert "reinstall ran before the restore" in report.eval_log
    assert OFFLINE_PIP in build_eval_script(task, "true")  # with pip told to stay offline


def test_a_quoted_error_marker_fails_official_but_not_safe(task: SWETask) -> None:
    """swebench's log check sees the patch in the eval script's ``git diff``; ours reads the sealed section."""
    patch = task.patch.replace("+    return a + b\n", "+    return a + b  # never prints >>>>> Tests Errored\n")
    assert patch != task.patch
    safe, official = _grade(task, patch), _grade(task, patch, "official")
    assert safe.resolved, safe.log_tail
    assert not official.resolved and not official.masked
    assert official.unresolved_reason == "the log holds '>>>>> Tests Errored' (swebench: not resolved)"


def test_official_apply_order_keeps_what_git_apply_reject_left(task: SWETask) -> None:
    """A context line with trailing whitespace in a second file: ``git apply`` fails, ``--reject`` applies the
    first file and rejects the second, then ``patch --batch`` finds the first one applied, takes it for a
    reversed patch and undoes it (``--batch`` assumes so): the fix is gone and the tests fail, as under
    run_evaluation 4.x (5.x resets the tree between commands, so its last one applies the patch whole). The safe
    ladder starts every method from the same tree and applies the patch whole."""
    patch = task.patch + (
        "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n@@ -1 +1,2 @@\n"
        " # puts the repository root on sys.path for `pytest` \n+# a second line\n"
    )
    from swe_gym.grading import swebench_api

    safe, official = _grade(task, patch), _grade(task, patch, "official")
    assert safe.resolved and safe.patch_applied and safe.apply_method != "git apply", safe.log_tail
    if swebench_api.resets_between_applies():  # 5.x resets the tree before each later command: patch applies whole
        assert official.apply_method == "patch --batch --forward --fuzz=5 -p1 -i" and official.resolved
        assert "conftest.py.rej" not in official.eval_log
        return
    assert official.apply_method == "patch --batch --fuzz=5 -p1 -i" and not official.masked
    assert not official.resolved and official.fail_to_pass.failure == task.fail_to_pass
    assert "calc.py.orig" in official.eval_log and "conftest.py.rej" in official.eval_log  # git status shows both


def test_official_has_no_integrity_checks(task: SWETask, tmp_path: Path) -> None:
    """A conftest that forces every test to pass: official resolves it (as run_evaluation would), safe does not."""
    conftest = (
        "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
    )
    lines = conftest.splitlines()
    patch = (
        "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n"
        f"@@ -1 +1,{len(lines) + 1} @@\n # puts the repository root on sys.path for `pytest`\n"
        + "".join(f"+{line}\n" for line in lines)
    )
    assert _grade(task, patch, "official").resolved
    safe = _grade(task, patch)
    assert not safe.resolved and not safe.masked and "conftest.py" in safe.restored_test_files
