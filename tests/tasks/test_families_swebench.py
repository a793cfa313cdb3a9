"""SWE-bench-format families: recognition, conversion without loss, published images, malformed rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from swe_gym.errors import TaskError
from swe_gym.sandbox.images import ENV_VAR, ImageRewriter
from swe_gym.tasks import SWETask, load_tasks
from swe_gym.tasks.families import FAMILIES, convert, detect
from swe_gym.tasks.families.swebench import swe_gym_image, swe_rebench_image, swebench_image
from tests.tasks.swebench_rows import LITE, MULTILINGUAL, PREBUILT, SWE_GYM, SWE_REBENCH, VERIFIED

_TASK_KEYS = {"instance_id", "repo", "problem_statement", "base_commit", "patch", "test_patch", "image"}


def assert_nothing_lost(row: dict[str, Any], task: SWETask) -> None:
    """Every field of the row is a task field (with the row's value) or kept in metadata."""
    for key, value in row.items():
        if key in _TASK_KEYS:
            assert getattr(task, key) == value, key
        elif key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
            tests = json.loads(value) if isinstance(value, str) else value
            assert getattr(task, key.lower()) == tests, key
        elif key in ("eval_script", "log_parser"):
            assert getattr(task.eval, key) == value, key
        else:
            assert task.metadata[key] == value, key


@pytest.mark.parametrize(
    ("row", "dataset", "family", "image"),
    [
        (
            VERIFIED,
            "princeton-nlp/SWE-bench_Verified",
            "swebench",
            "swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest",
        ),
        (LITE, "princeton-nlp/SWE-bench_Lite", "swebench", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"),
        (LITE, None, "swebench", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"),
        (SWE_GYM, "SWE-Gym/SWE-Gym", "swe-gym", "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-7365:latest"),
        (MULTILINGUAL, "SWE-bench/SWE-bench_Multilingual", "swebench-multilingual", MULTILINGUAL["image"]),
        (SWE_REBENCH, "nebius/SWE-rebench", "swe-rebench", SWE_REBENCH["docker_image"]),
        (SWE_REBENCH, None, "swe-rebench", SWE_REBENCH["docker_image"]),  # recognised by its fields
        (PREBUILT, None, "swebench", PREBUILT["image_name"]),
    ],
)
def test_rows_convert_with_their_family_and_image(row: dict, dataset: str | None, family: str, image: str) -> None:
    task = convert(row, dataset=dataset)
    assert (task.family, task.image, task.workdir) == (family, image, "/testbed")
    assert task.eval.toolkit == "swebench" and task.eval.timeout_s == 1800
    assert task.fail_to_pass and task.pass_to_pass
    assert_nothing_lost(row, task)


def test_metadata_keeps_the_dataset_specific_fields() -> None:
    verified = convert(VERIFIED, dataset="princeton-nlp/SWE-bench_Verified")
    assert verified.metadata["difficulty"] == "15 min - 1 hour"
    assert verified.metadata["environment_setup_commit"] == VERIFIED["environment_setup_commit"]
    assert verified.eval.eval_script is None and verified.eval.log_parser is None  # derived by swebench
    rebench = convert(SWE_REBENCH)
    assert rebench.metadata["install_config"]["test_cmd"].startswith("pytest")
    assert rebench.metadata["meta"]["llm_score"]["difficulty_score"] == 1
    prebuilt = convert(MULTILINGUAL, dataset="SWE-bench/SWE-bench_Multilingual")
    assert prebuilt.eval.eval_script == MULTILINGUAL["eval_script"] and prebuilt.eval.log_parser == "parse_log_jq"


def test_image_naming_functions() -> None:
    assert swebench_image("sympy__sympy-20590") == "swebench/sweb.eval.x86_64.sympy_1776_sympy-20590:latest"
    assert swe_gym_image("Project-MONAI__MONAI-5950") == "xingyaoww/sweb.eval.x86_64.project-monai_s_monai-5950:latest"
    assert swe_rebench_image("Textualize__textual-3548") == (
        "swerebench/sweb.eval.x86_64.textualize_1776_textual-3548:latest"
    )
    no_image = {k: v for k, v in SWE_REBENCH.items() if k != "docker_image"}
    assert convert(no_image).image == swe_rebench_image("encode__starlette-1147")


def test_a_row_names_its_own_image_and_rewrite_rules_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    task = convert({**VERIFIED, "image": "registry.example/astropy:12907"}, dataset="princeton-nlp/SWE-bench_Verified")
    assert task.image == "registry.example/astropy:12907"
    gym = convert({**SWE_GYM, "image_name": "mirror.example/moto:7365"}, dataset="SWE-Gym/SWE-Gym")
    assert (gym.family, gym.image, gym.metadata["image_name"]) == ("swe-gym", "mirror.example/moto:7365", gym.image)
    # Providers rewrite the name when they pull: show the name they would use.
    monkeypatch.setenv(ENV_VAR, "swebench/=mirror.example:5000/swebench/;xingyaoww/=mirror.example:5000/swegym/")
    rewriter = ImageRewriter.from_env()
    verified = convert(VERIFIED, dataset="princeton-nlp/SWE-bench_Verified")
    assert (
        rewriter.rewrite(verified.image)
        == "mirror.example:5000/swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest"
    )
    assert rewriter.rewrite(convert(SWE_GYM, dataset="SWE-Gym/SWE-Gym").image).startswith("mirror.example:5000/swegym/")


def test_recognition_by_fields_and_by_name() -> None:
    assert detect(SWE_GYM).name == "swebench"  # from fields alone a classic row is SWE-bench
    assert detect(SWE_GYM, "/data/exports/swe-gym-train.jsonl").name == "swe-gym"
    assert detect(VERIFIED, "SWE-bench/SWE-bench_Multilingual").name == "swebench-multilingual"
    native = {**LITE, "test_cmd": "pytest -rA"}  # a swe_gym record is not a dataset row
    assert detect(native) is None and detect(native, "princeton-nlp/SWE-bench_Lite") is None
    ours = [f for f in FAMILIES if f.name in {"swebench", "swe-gym", "swebench-multilingual", "swe-rebench"}]
    assert all(30 <= f.priority <= 50 for f in ours)
    assert ours[0].name == "swe-rebench" and ours[-1].name == "swebench"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"instance_id": None}, "field 'instance_id' must be a non-empty string \\(missing\\)"),
        ({"repo": 7}, "row 'astropy__astropy-12907': field 'repo' must be a non-empty string \\(got int"),
        ({"problem_statement": "  "}, "field 'problem_statement' must be a non-empty string"),
        ({"FAIL_TO_PASS": "[not json"}, "field 'FAIL_TO_PASS' is not a JSON list"),
        ({"FAIL_TO_PASS": '{"a": 1}'}, "field 'FAIL_TO_PASS' must be a list of test names"),
        ({"PASS_TO_PASS": [1, 2]}, "field 'PASS_TO_PASS' must be a list of test names"),
        ({"base_commit": 123}, "field 'base_commit' must be a string, got int"),
        ({"image": ["a"]}, "image name must be a string"),
    ],
)
def test_malformed_rows_name_the_field_and_the_row(change: dict, message: str) -> None:
    row = {**VERIFIED, **change}
    row = {k: v for k, v in row.items() if v is not None}
    with pytest.raises(TaskError, match=message):
        convert(row, dataset="princeton-nlp/SWE-bench_Verified")
    field = next(iter(change))  # loading names the row's place and the field
    with pytest.raises(TaskError, match=rf"^task\[1\]: .*{field}"):
        load_tasks([LITE, row])
