"""Each dataset family end to end: a row in the family's published schema, converted, graded in a real
Docker sandbox from a local image that holds a small real repository where the family's images keep it.

Four verdicts per family: the gold patch resolves; an empty patch, a patch that breaks a PASS_TO_PASS
test, and a patch that does not apply do not — each with its reason.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading import grade
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import load_tasks
from tests.conftest import require_docker
from tests.family_images import CalcRepo, assert_four_verdicts, swebench_image


@pytest.fixture(scope="module")
def calc(tmp_path_factory: pytest.TempPathFactory) -> CalcRepo:
    require_docker()
    return CalcRepo.create(tmp_path_factory.mktemp("families") / "repo")


def swebench_row(repo: CalcRepo) -> dict[str, Any]:
    """A classic SWE-bench row (princeton-nlp/SWE-bench_Verified's fields), for a repo/version swebench knows."""
    return {
        "repo": "psf/requests",
        "instance_id": "psf__requests-9001",
        "base_commit": repo.base,
        "patch": repo.gold_patch,
        "test_patch": repo.test_patch,
        "problem_statement": "add() subtracts instead of adding",
        "hints_text": "",
        "created_at": "2024-01-01T00:00:00Z",
        "version": "2.0",
        "FAIL_TO_PASS": '["tests/test_calc.py::test_add"]',
        "PASS_TO_PASS": '["tests/test_calc.py::test_sub"]',
        "environment_setup_commit": repo.base,
        "difficulty": "<15 min fix",
    }


def prebuilt_row(repo: CalcRepo) -> dict[str, Any]:
    """A pre-built row (SWE-bench 5.x / SWE-bench_Multilingual fields): image, eval script and parser given."""
    from swe_gym.grading import swebench_toolkit

    classic = swebench_row(repo)
    (derived,) = load_tasks([classic])
    return {
        **{k: v for k, v in classic.items() if k not in ("environment_setup_commit", "difficulty")},
        "instance_id": "psf__requests-9002",
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_sub"],
        "eval_type": "pass_and_fail",
        "image": "swe-gym-test-prebuilt/psf_requests-9002:latest",
        "log_parser": "parse_log_pytest",
        "eval_script": swebench_toolkit.eval_script(derived),
    }


def swe_gym_row(repo: CalcRepo) -> dict[str, Any]:
    """A SWE-Gym/SWE-Gym row: SWE-bench's fields, lists not JSON strings, no environment_setup_commit."""
    row = {k: v for k, v in swebench_row(repo).items() if k not in ("environment_setup_commit", "difficulty")}
    return {
        **row,
        "instance_id": "psf__requests-9003",
        "FAIL_TO_PASS": ["tests/test_calc.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_sub"],
    }


def swe_rebench_row(repo: CalcRepo) -> dict[str, Any]:
    """A nebius/SWE-rebench row: a repo swebench has no spec for; its own install_config is the spec."""
    return {
        **swebench_row(repo),
        "repo": "example/calc",
        "instance_id": "example__calc-7",
        "version": "0.1",
        "docker_image": "swerebench/sweb.eval.x86_64.example_1776_calc-7:latest",
        "install_config": {
            "python": "3.11",
            "install": "pip install -e .",
            "test_cmd": "pytest -rA",
            "log_parser": "parse_log_pytest",
            "pip_packages": ["pytest"],
        },
        "requirements": "pytest\n",
        "environment": "",
        "FAIL_TO_FAIL": [],
        "PASS_TO_FAIL": [],
        "license_name": "MIT",
        "meta": {"llm_score": {"difficulty_score": 1, "issue_text_score": 0, "test_score": 0}, "has_test_patch": True},
    }


FAMILIES: dict[str, tuple[Callable[[CalcRepo], dict[str, Any]], str, str, str | None]] = {
    # name: (row, expected family, the image name the family publishes for that row, dataset file name)
    "swebench": (swebench_row, "swebench", "swebench/sweb.eval.x86_64.psf_1776_requests-9001:latest", None),
    "prebuilt": (prebuilt_row, "swebench", "swe-gym-test-prebuilt/psf_requests-9002:latest", None),
    "swe-gym": (swe_gym_row, "swe-gym", "xingyaoww/sweb.eval.x86_64.psf_s_requests-9003:latest", "swe-gym.jsonl"),
    "swe-rebench": (
        swe_rebench_row,
        "swe-rebench",
        "swerebench/sweb.eval.x86_64.example_1776_calc-7:latest",
        "swe-rebench.jsonl",
    ),
}


@pytest.mark.parametrize("name", list(FAMILIES))
def test_family_end_to_end(name: str, calc: CalcRepo, tmp_path: Path) -> None:
    make_row, family, image, dataset_file = FAMILIES[name]
    row = make_row(calc)
    source: Any = [row]
    if dataset_file:  # the family is told by the dataset's name
        source = tmp_path / dataset_file
        source.write_text(json.dumps(row) + "\n")
    (task,) = load_tasks(source)
    assert task.family == family and task.image == image
    swebench_image(image, calc, tmp_path / "context")
    assert_four_verdicts(task, calc.breaks_p2p_patch)


def test_unknown_repo_version_is_masked_with_the_reason(calc: CalcRepo) -> None:
    """swebench 4.x has no spec for it: no sandbox is started and the verdict is masked, never a silent 0.
    5.x has no specs at all, so there swe_gym's classic script (`swebench_classic`) grades it."""
    from swe_gym.grading import swebench_api

    (task,) = load_tasks([{**swebench_row(calc), "version": "99.9"}])
    report = grade(task, task.patch, provider="docker", spec=SandboxSpec())
    if swebench_api.spec_tables() is None:
        assert report.resolved and not report.masked, report.summary()
        return
    assert report.masked and not report.resolved and report.reward() == 0.0
    assert "no test spec for repo 'psf/requests' version '99.9'" in (report.masked_reason or "")
    assert "pre-built row" in (report.masked_reason or "")
