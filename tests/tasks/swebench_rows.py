"""Hand-written rows in each SWE-bench-format dataset's published schema (every field its card lists).

Schemas, from the datasets' cards (``dataset_info.features``):

- princeton-nlp/SWE-bench, _Lite, _Verified: repo, instance_id, base_commit, patch, test_patch,
  problem_statement, hints_text, created_at, version, FAIL_TO_PASS, PASS_TO_PASS (JSON strings),
  environment_setup_commit; Verified adds difficulty.
- SWE-Gym/SWE-Gym (split ``train``): instance_id, hints_text, patch, test_patch, created_at,
  problem_statement, repo, base_commit, version, PASS_TO_PASS, FAIL_TO_PASS (lists).
- SWE-bench/SWE-bench_Multilingual (pre-built, SWE-bench 5.x style): base_commit, created_at,
  eval_type, image, instance_id, log_parser, repo, version, patch, test_patch, eval_script,
  problem_statement, hints_text, FAIL_TO_PASS, PASS_TO_PASS (lists).
- nebius/SWE-rebench: the SWE-bench fields (lists) plus meta, install_config, requirements,
  environment, FAIL_TO_FAIL, PASS_TO_FAIL, license_name, docker_image.
"""

from __future__ import annotations

import json

VERIFIED = {
    "repo": "astropy/astropy",
    "instance_id": "astropy__astropy-12907",
    "base_commit": "d16bfe05a744909de4b27f5875fe0d4ed41ce607",
    "patch": (
        "diff --git a/astropy/modeling/separable.py b/astropy/modeling/separable.py\n"
        "--- a/astropy/modeling/separable.py\n+++ b/astropy/modeling/separable.py\n"
        "@@ -242,7 +242,7 @@ def _cstack(left, right):\n"
        "-        cright[-right.shape[0]:, -right.shape[1]:] = 1\n"
        "+        cright[-right.shape[0]:, -right.shape[1]:] = right\n"
    ),
    "test_patch": (
        "diff --git a/astropy/modeling/tests/test_separable.py b/astropy/modeling/tests/test_separable.py\n"
        "--- a/astropy/modeling/tests/test_separable.py\n+++ b/astropy/modeling/tests/test_separable.py\n"
        "@@ -28,6 +28,13 @@\n+p1 = models.Polynomial1D(1, name='p1')\n"
    ),
    "problem_statement": (
        "Modeling's `separability_matrix` does not compute separability correctly for nested CompoundModels\n"
        "Consider the following model: cm = m.Linear1D(10) & m.Linear1D(5) ..."
    ),
    "hints_text": "",
    "created_at": "2022-03-03T15:14:54Z",
    "version": "4.3",
    "FAIL_TO_PASS": json.dumps(
        [
            "astropy/modeling/tests/test_separable.py::test_separable[compound_model6-result6]",
            "astropy/modeling/tests/test_separable.py::test_separable[compound_model9-result9]",
        ]
    ),
    "PASS_TO_PASS": json.dumps(
        [
            "astropy/modeling/tests/test_separable.py::test_coord_matrix",
            "astropy/modeling/tests/test_separable.py::test_cdot",
        ]
    ),
    "environment_setup_commit": "298ccb478e6bf092953bca67a3d29dc6c35f6752",
    "difficulty": "15 min - 1 hour",
}

LITE = {
    "repo": "django/django",
    "instance_id": "django__django-11099",
    "base_commit": "d26b2424437dabeeca94d7900b37d2df4410da0c",
    "patch": (
        "diff --git a/django/contrib/auth/validators.py b/django/contrib/auth/validators.py\n"
        "-    regex = r'^[\\w.@+-]+$'\n+    regex = r'^[\\w.@+-]+\\Z'\n"
    ),
    "test_patch": "diff --git a/tests/auth_tests/test_validators.py b/tests/auth_tests/test_validators.py\n",
    "problem_statement": "UsernameValidator allows trailing newline in usernames\nDescription\n...",
    "hints_text": "",
    "created_at": "2019-03-20T03:46:18Z",
    "version": "3.0",
    "FAIL_TO_PASS": json.dumps(
        [
            "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)",
            "test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)",
        ]
    ),
    "PASS_TO_PASS": json.dumps(["test_help_text (auth_tests.test_validators.MinimumLengthValidatorTest)"]),
    "environment_setup_commit": "419a78300f7cd27611196e1e464d50fd0385ff27",
}

SWE_GYM = {
    "instance_id": "getmoto__moto-7365",
    "hints_text": "",
    "patch": "diff --git a/moto/dynamodb/models/dynamo_type.py b/moto/dynamodb/models/dynamo_type.py\n",
    "test_patch": "diff --git a/tests/test_dynamodb/test_dynamodb_update_expressions.py b/tests/x.py\n",
    "created_at": "2024-02-19 20:29:03",
    "problem_statement": (
        "DynamoDB's `update_item` performs floating-point arithmetic with mock table created via boto3\n..."
    ),
    "repo": "getmoto/moto",
    "base_commit": "7f6c9cb1deafb280fe7fcc7551c38e397f11a706",
    "version": "5.0",
    "PASS_TO_PASS": [
        "tests/test_dynamodb/test_dynamodb_update_expressions.py::test_update_different_map_elements_in_single_request"
    ],
    "FAIL_TO_PASS": ["tests/test_dynamodb/test_dynamodb_update_expressions.py::test_update_item_add_float"],
}

MULTILINGUAL = {
    "base_commit": "fb2d2fc9fab0ba6ff4d1e9fd8fd1bb93fdf9d4c8",
    "created_at": "2023-07-04T14:28:54Z",
    "eval_type": "default",
    "image": "swebench/sweb.eval.x86_64.jqlang_1776_jq-2681:latest",
    "instance_id": "jqlang__jq-2681",
    "log_parser": "parse_log_jq",
    "repo": "jqlang/jq",
    "version": "1.7",
    "patch": "diff --git a/src/lexer.l b/src/lexer.l\n",
    "test_patch": "diff --git a/tests/jq.test b/tests/jq.test\n",
    "eval_script": "#!/bin/bash\nset -uxo pipefail\ncd /testbed\ngit apply -v - <<'EOF_114329324912'\n...\n",
    "problem_statement": "Keywords should be allowed as object keys\n`{if:0}` is a syntax error ...",
    "hints_text": "",
    "FAIL_TO_PASS": ["tests/jqtest"],
    "PASS_TO_PASS": ["tests/mantest", "tests/optionaltest"],
}

SWE_REBENCH = {
    "instance_id": "encode__starlette-1147",
    "base_commit": "23e15789bff5ab8bbf0c1e1d53ff2e2a8a4ad2d3",
    "created_at": "2021-03-18 09:23:45",
    "environment_setup_commit": "9aa54dd4a5d1f3bd20ff9a76ef6c8a57a2da5b2e",
    "hints_text": "",
    "patch": "diff --git a/starlette/middleware/sessions.py b/starlette/middleware/sessions.py\n",
    "problem_statement": "Session cookie should use root path\nThe session cookie is set with path=/ ...",
    "repo": "encode/starlette",
    "test_patch": "diff --git a/tests/middleware/test_session.py b/tests/middleware/test_session.py\n",
    "meta": {
        "commit_name": "head_commit",
        "failed_lite_validators": [],
        "has_test_patch": True,
        "is_lite": True,
        "llm_score": {"difficulty_score": 1, "issue_text_score": 2, "test_score": 2},
        "num_modified_files": 1,
    },
    "version": "0.14",
    "install_config": {
        "env_vars": None,
        "env_yml_path": None,
        "install": "pip install -e .",
        "log_parser": "parse_log_pytest",
        "no_use_env": None,
        "packages": "requirements.txt",
        "pip_packages": ["pytest"],
        "pre_install": None,
        "python": "3.9",
        "reqs_path": ["requirements.txt"],
        "test_cmd": "pytest --no-header -rA --tb=line --color=no -p no:cacheprovider -W ignore::DeprecationWarning",
    },
    "requirements": "aiofiles==0.6.0\nanyio==3.3.4\nitsdangerous==1.1.0\npytest==6.2.2\n",
    "environment": "name: testbed\nchannels:\n  - defaults\ndependencies:\n  - python=3.9\n",
    "FAIL_TO_PASS": ["tests/middleware/test_session.py::test_session_cookie_subpath"],
    "FAIL_TO_FAIL": [],
    "PASS_TO_PASS": [
        "tests/middleware/test_session.py::test_session",
        "tests/middleware/test_session.py::test_secure_session",
    ],
    "PASS_TO_FAIL": [],
    "license_name": 'BSD 3-Clause "New" or "Revised" License',
    "docker_image": "swerebench/sweb.eval.x86_64.encode_1776_starlette-1147",
}

PREBUILT = {
    **{k: v for k, v in LITE.items() if k != "environment_setup_commit"},
    "image_name": "swebench/sweb.eval.x86_64.django_1776_django-11099:v2",
    "eval_script": "#!/bin/bash\nset -uxo pipefail\ncd /testbed\n./tests/runtests.py auth_tests.test_validators\n",
    "log_parser": "parse_log_django",
}
