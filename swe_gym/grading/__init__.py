"""Patch -> tests -> report -> reward. Uses `sandbox` and `tasks`, never `envs`.

Each entry point comes twice, by one rule: ``name_async`` is the coroutine, ``name`` its blocking form
(run on swe_gym's background loop; refused where an event loop runs, there await ``name_async``).
"""

from swe_gym.grading.certificate import validate, validate_async
from swe_gym.grading.evaluation import evaluate, evaluate_async
from swe_gym.grading.harness import grade, grade_async
from swe_gym.grading.parsers import TestStatus, get_parser, parse_pytest, register_parser
from swe_gym.grading.patch import apply_patch, extract_patch, patch_paths, snapshot
from swe_gym.grading.protect import is_test_path
from swe_gym.grading.report import GradeReport, TestGroup

__all__ = [
    "GradeReport",
    "TestGroup",
    "TestStatus",
    "apply_patch",
    "evaluate",
    "evaluate_async",
    "extract_patch",
    "get_parser",
    "grade",
    "grade_async",
    "is_test_path",
    "parse_pytest",
    "patch_paths",
    "register_parser",
    "snapshot",
    "validate",
    "validate_async",
]
