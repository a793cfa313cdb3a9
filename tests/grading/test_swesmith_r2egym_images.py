"""SWE-smith and R2E-Gym tasks graded in real Docker sandboxes, from local images laid out as theirs are.

SWE-smith: /testbed with a branch per task ("Bug Patch", then "Remove F2P Tests"), conda
activation shimmed. R2E-Gym: /testbed at the old commit with ``run_tests.sh`` and a
``.venv``, the hidden tests at /r2e_tests. Both rows are in the published schemas; the
gold patch resolves, an empty patch does not, and the agent's sandbox hides the tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask, provision
from swe_gym.tasks.families import convert
from tests.conftest import require_docker
from tests.family_images import (
    BREAKS_SUB,
    BUGGY,
    FIXED,
    TESTS,
    TESTS_WITH_ADD,
    CalcRepo,
    assert_four_verdicts,
    build_image,
    git,
    swebench_image,
)

IID = "calc__calc.0123abcd.func_pm_op_swap__k2l1"


def _agent_sees(task: SWETask, command: str) -> str:
    async def look() -> str:
        sandbox = await provision(task, "docker", SandboxSpec(), agent=True)
        try:
            return (await sandbox.exec(command)).output
        finally:
            await sandbox.close()

    return run_sync(look())


def test_a_swesmith_task_in_its_image_layout(tmp_path: Path) -> None:
    require_docker()
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--template=", "-b", "main")
    (repo / "calc.py").write_text(FIXED)
    (repo / "conftest.py").write_text("# puts the repository root on sys.path for `pytest`\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_add.py").write_text(TESTS_WITH_ADD.replace(TESTS, "from calc import add\n"))
    (repo / "tests" / "test_calc.py").write_text(TESTS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "Initial commit")
    git(repo, "checkout", "-q", "-b", IID)
    (repo / "calc.py").write_text(BUGGY)
    bug = git(repo, "diff") + "\n"
    git(repo, "commit", "-q", "-am", "Bug Patch")
    git(repo, "rm", "-q", "tests/test_add.py")
    git(repo, "commit", "-q", "-m", "Remove F2P Tests")
    git(repo, "checkout", "-q", "main")
    image = swebench_image("jyangballin/swesmith.x86_64.calc_1776_calc.0123abcd", CalcRepo(repo), tmp_path / "ctx")
    row = {
        "instance_id": IID,
        "repo": "swesmith/calc__calc.0123abcd",
        "patch": bug,
        "FAIL_TO_PASS": ["tests/test_add.py::test_add"],
        "PASS_TO_PASS": ["tests/test_calc.py::test_sub"],
        "image_name": image,
        "problem_statement": "add() subtracts",
    }
    task = convert(row, "SWE-bench/SWE-smith")
    assert task.image == image
    assert "test_add.py" not in _agent_sees(task, "ls tests; git status --short")
    # The bug commit's parent is the fixed code: the agent gets one parentless commit and no objects beyond it.
    history = _agent_sees(task, f"git log --all --format=%s; git cat-file -t {git(repo, 'rev-parse', 'main')} 2>&1")
    assert history.splitlines()[0] == "task base" and "fatal" in history.splitlines()[1]
    git(repo, "checkout", "-q", IID)
    (repo / "calc.py").write_text(BREAKS_SUB)
    breaks_p2p = git(repo, "diff") + "\n"
    git(repo, "checkout", "-q", "-f", "main")
    assert_four_verdicts(task, breaks_p2p)


R2E_TEST = (
    "import sys\n\nsys.path.insert(0, '/testbed')\nfrom calc import add, sub\n\n\n"
    "class TestCalc:\n    def test_add(self):\n        assert add(2, 3) == 5\n\n"
    "    def test_sub(self):\n        assert sub(5, 3) == 2\n"
)
#: R2E-Gym's run_tests.sh for its Python repositories.
RUN_TESTS = (
    "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' .venv/bin/python -W ignore -m pytest -rA r2e_tests"
)


def r2e_row(repo: CalcRepo, image: str) -> dict[str, Any]:
    old_run = (
        "=========================== short test summary info ============================\n"
        "FAILED r2e_tests/test_1.py::TestCalc::test_add - assert -1 == 5\n"
        "PASSED r2e_tests/test_1.py::TestCalc::test_sub\n"
    )
    return {
        "repo_name": "calc",
        "docker_image": image,
        "commit_hash": repo.fix,
        "execution_result_content": json.dumps({"old_commit_res_stdout": old_run, "new_commit_res_stdout": ""}),
        "modified_files": ["calc.py"],
        "problem_statement": "[ISSUE]\nadd() subtracts\n[/ISSUE]",
        "expected_output_json": json.dumps({"TestCalc.test_add": "PASSED", "TestCalc.test_sub": "PASSED"}),
        "patch": repo.gold_patch,
    }


def test_an_r2e_gym_task_in_its_image_layout(tmp_path: Path) -> None:
    require_docker()
    repo = CalcRepo.create(tmp_path / "repo")
    context = tmp_path / "ctx"
    context.mkdir()
    git(repo.path, "checkout", "-q", "--detach", repo.base)
    (repo.path / ".git" / "info").mkdir(exist_ok=True)
    (repo.path / ".git" / "info" / "exclude").write_text(".venv\nrun_tests.sh\n")
    (repo.path / "run_tests.sh").write_text(RUN_TESTS + "\n")
    (context / "r2e_tests").mkdir()
    (context / "r2e_tests" / "test_1.py").write_text(R2E_TEST)
    subprocess.run(["cp", "-a", str(repo.path), str(context / "testbed")], check=True)
    image = build_image(
        f"namanjain12/calc_final:{repo.fix}",
        context,
        [
            "COPY testbed /testbed",
            "COPY r2e_tests /r2e_tests",
            "RUN mkdir -p /testbed/.venv/bin && ln -s /usr/bin/python3 /testbed/.venv/bin/python",
        ],
    )
    task = convert(r2e_row(repo, image), "R2E-Gym/R2E-Gym-Lite")
    assert task.fail_to_pass == ["TestCalc.test_add"] and task.pass_to_pass == ["TestCalc.test_sub"]
    seen = _agent_sees(task, "ls -a; ls / /root; git status --short")
    assert "run_tests.sh" not in seen and "r2e_tests" not in seen
    assert_four_verdicts(task, repo.breaks_p2p_patch)
