"""`GradeReport`: the outcome of grading one patch, and the resolution rule."""

from __future__ import annotations

from pydantic import BaseModel, Field

from swe_gym.grading.parsers import TestStatus


class TestGroup(BaseModel):
    __test__ = False  # not a pytest test class

    success: list[str] = Field(default_factory=list)
    failure: list[str] = Field(default_factory=list)

    @property
    def fraction(self) -> float:
        total = len(self.success) + len(self.failure)
        return len(self.success) / total if total else 1.0


def classify(tests: list[str], status: dict[str, TestStatus]) -> TestGroup:
    """A test missing from the log counts as failed (as in SWE-bench)."""
    group = TestGroup()
    for test in tests:
        (group.success if test in status and status[test].ok else group.failure).append(test)
    return group


class GradeReport(BaseModel):
    """Resolved only if every FAIL_TO_PASS and PASS_TO_PASS test passes.

    ``masked`` means grading itself failed (sandbox, timeout, task defect): the
    verdict is unknown and must not be trained on as a 0.
    """

    instance_id: str
    resolved: bool = False
    masked: bool = False
    masked_reason: str | None = None
    empty_patch: bool = False
    patch_applied: bool = False
    apply_method: str | None = None
    restored_test_files: list[str] = Field(default_factory=list)
    restore_reasons: dict[str, str] = Field(default_factory=dict, description="why each restored file went back")
    unresolved_reason: str | None = Field(
        default=None, description="what the patch caused besides failing tests (timeout, tampering, a broken run)"
    )
    tampering: bool = Field(default=False, description="the verdict is unresolved because tampering was detected")
    canary: str = Field(default="not run", description="'passed', 'not applicable', or why the canary check was off")
    twins: str = Field(default="not run", description="how many graded tests ran a twin, or why none did")
    uncovered_tests: dict[str, str] = Field(
        default_factory=dict,
        description="graded tests without a check code under test cannot tell apart (no twin, or inverted), and why",
    )
    scan_findings: list[str] = Field(
        default_factory=list, description="what the static reading of the patch flags: 'path:line: rule: reason'"
    )
    control_run: bool = Field(default=False, description="the eval was also run without the patch to judge an anomaly")
    harness: str = Field(default="safe", description="'safe' (swe_gym's grader) or 'official' (run_evaluation's rules)")
    install: str = Field(default="", description="what became of the eval script's reinstall, and why")
    install_log: str = Field(default="", description="the reinstall's output (it runs on its own, before the restore)")
    timings_s: dict[str, float] = Field(
        default_factory=dict, description="seconds per phase: sandbox (start), apply (patch and restore), tests"
    )
    fail_to_pass: TestGroup = Field(default_factory=TestGroup)
    pass_to_pass: TestGroup = Field(default_factory=TestGroup)
    test_status: dict[str, TestStatus] = Field(default_factory=dict)
    score: float | None = Field(
        default=None, description="the reward a task's own verifier gave (Harbor tasks: its reward file), if any"
    )
    score_source: str | None = Field(default=None, description="where the score was read")
    eval_exit_code: int | None = None
    duration_s: float = 0.0
    log_tail: str = ""
    eval_log: str = Field(default="", repr=False, exclude=True, description="the whole eval output (not serialised)")

    def reward(self, mode: str = "binary") -> float:
        """``binary``: 1.0 if resolved. ``partial``: fraction of FAIL_TO_PASS passing,
        0 unless every PASS_TO_PASS test still passes. Masked reports give 0.0. A verifier's own ``score`` (a
        Harbor task's reward, a fraction where it writes one) is the reward in either mode."""
        if self.masked:
            return 0.0
        if self.score is not None:
            return self.score
        if mode == "partial":
            return self.fail_to_pass.fraction if not self.pass_to_pass.failure else 0.0
        return 1.0 if self.resolved else 0.0

    def summary(self) -> str:
        if self.masked:
            return f"grading masked: {self.masked_reason}"
        if not self.patch_applied and not self.empty_patch:
            return "patch did not apply: not resolved"
        if self.unresolved_reason:
            return f"not resolved: {self.unresolved_reason}"
        if self.score is not None:
            return f"{'RESOLVED' if self.resolved else 'not resolved'}: reward {self.score:g} ({self.score_source})"
        verdict = "RESOLVED" if self.resolved else "not resolved"
        return (
            f"{verdict}: FAIL_TO_PASS {len(self.fail_to_pass.success)}/"
            f"{len(self.fail_to_pass.success) + len(self.fail_to_pass.failure)} pass, PASS_TO_PASS "
            f"{len(self.pass_to_pass.success)}/{len(self.pass_to_pass.success) + len(self.pass_to_pass.failure)} pass"
        )
