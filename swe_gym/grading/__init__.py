"""Patch -> tests -> report -> reward. Uses `sandbox` and `tasks`, never `envs`."""

from swe_gym.grading.harness import grade
from swe_gym.grading.parsers import TestStatus, get_parser, parse_pytest, register_parser
from swe_gym.grading.patch import apply_patch, extract_patch, patch_paths, snapshot
from swe_gym.grading.protect import is_test_path
from swe_gym.grading.report import GradeReport, TestGroup

__all__ = [
    "GradeReport",
    "TestGroup",
    "TestStatus",
    "apply_patch",
    "extract_patch",
    "get_parser",
    "grade",
    "is_test_path",
    "parse_pytest",
    "patch_paths",
    "register_parser",
    "snapshot",
]
