"""Grading cannot be gamed, and infrastructure failures are masked, never a silent 0."""

from __future__ import annotations

import pytest

from swe_gym.grading import GradeReport, TestGroup, grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import load_tasks
from tests.conftest import provider_setup

TASK = load_tasks("bundled")[0]

ALWAYS_PASS_CONFTEST = """diff --git a/conftest.py b/conftest.py
new file mode 100644
--- /dev/null
+++ b/conftest.py
@@ -0,0 +1,8 @@
+import pytest
+
+
+@pytest.hookimpl(hookwrapper=True)
+def pytest_runtest_makereport(item, call):
+    outcome = yield
+    report = outcome.get_result()
+    report.outcome = "passed"
"""


def _grade(task, patch: str, provider: str = "local") -> GradeReport:
    config, image = provider_setup(provider)
    return grade(task, patch, provider=config, spec=SandboxSpec(image=image))


def test_agent_test_files_are_restored_before_the_eval() -> None:
    report = _grade(TASK, ALWAYS_PASS_CONFTEST)
    assert report.patch_applied and "conftest.py" in report.restored_test_files
    assert not report.resolved and not report.masked


def test_gold_plus_test_tampering_still_resolves_on_the_real_tests() -> None:
    report = _grade(TASK, TASK.patch + ALWAYS_PASS_CONFTEST)
    assert report.resolved and "conftest.py" in report.restored_test_files


def test_patch_that_does_not_apply_is_unresolved_not_masked() -> None:
    bogus = "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-old\n+new\n"
    report = _grade(TASK, bogus)
    assert not report.patch_applied and not report.resolved and not report.masked
    assert "git apply" in report.log_tail


def test_eval_timeout_is_masked() -> None:
    slow = TASK.model_copy(update={"eval": TASK.eval.model_copy(update={"test_cmd": "sleep 60", "timeout_s": 1.0})})
    report = _grade(slow, TASK.patch)
    assert report.masked and "timed out" in (report.masked_reason or "")
    assert report.reward() == 0.0


def test_broken_test_patch_is_a_masked_task_defect() -> None:
    broken = TASK.model_copy(update={"test_patch": "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"})
    report = _grade(broken, TASK.patch)
    assert report.masked and "test patch" in (report.masked_reason or "")


def test_missing_image_is_masked() -> None:
    provider_setup("docker")
    report = grade(TASK, TASK.patch, provider="docker", spec=SandboxSpec(image="swe-gym-no-such-image:0"))
    assert report.masked and "swe-gym-no-such-image:0" in (report.masked_reason or "")


@pytest.mark.parametrize(
    ("f2p", "p2p", "binary", "partial"),
    [((2, 0), (3, 0), 1.0, 1.0), ((1, 1), (3, 0), 0.0, 0.5), ((2, 0), (2, 1), 0.0, 0.0)],
)
def test_reward_modes(f2p: tuple[int, int], p2p: tuple[int, int], binary: float, partial: float) -> None:
    def group(ok: int, bad: int) -> TestGroup:
        return TestGroup(success=[f"ok{i}" for i in range(ok)], failure=[f"bad{i}" for i in range(bad)])

    report = GradeReport(
        instance_id="x", resolved=not f2p[1] and not p2p[1], fail_to_pass=group(*f2p), pass_to_pass=group(*p2p)
    )
    assert report.reward("binary") == binary and report.reward("partial") == partial
    assert GradeReport(instance_id="x", masked=True, masked_reason="r").reward("partial") == 0.0


def _new_files(files: dict[str, str]) -> str:
    """A git diff that adds ``files`` (path -> text, each ending in a newline)."""
    parts = []
    for path, text in files.items():
        lines = text.splitlines()
        body = "".join(f"+{line}\n" for line in lines)
        parts.append(
            f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{len(lines)} @@\n{body}"
        )
    return "".join(parts)


def test_a_plugin_registered_in_the_projects_own_metadata_is_tampering() -> None:
    """The project's own egg-info is not sent back (a reinstall rewrites it), so the pytest plugins all metadata
    registers are compared with the base's; without twins, nothing else would stop this forger."""
    datekit = next(t for t in load_tasks("bundled") if t.instance_id == "swe-gym__datekit-1")
    forger = _new_files(
        {
            "datekit.egg-info/PKG-INFO": "Metadata-Version: 2.1\nName: datekit\nVersion: 1.0\n",
            "datekit.egg-info/entry_points.txt": "[pytest11]\ndatekit = datekit._plugin\n",
            "datekit/_plugin.py": (  # forges the FAIL_TO_PASS tests only: the canary runs honestly
                "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                f"    outcome = yield\n    if item.nodeid in {set(datekit.fail_to_pass)!r}:\n"
                '        outcome.get_result().outcome = "passed"\n'
            ),
        }
    )
    config, _ = provider_setup("local")
    report = grade(datekit, forger, provider=config, twins=False)
    assert report.patch_applied and not report.resolved and not report.masked and report.tampering, report.summary()
    assert "registers a pytest plugin that auto-loads ('datekit = datekit._plugin')" in (report.unresolved_reason or "")
