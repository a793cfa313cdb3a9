"""The swebench line not installed in the suite's venv, for tests that must pass under both (4.x and 5.x).

`other_line_env` installs it once per machine (``pip install --target``, no dependencies: both lines need the
same ones) under /var/tmp and returns an environment that puts it ahead on the path; `run_under_other_line`
runs pytest on some tests there. A run under it has `NESTED` set, so a test that starts one never recurses.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swe_gym.grading import swebench_api
from tests.conftest import IN_CI

#: 4.x derives classic rows' scripts from its spec tables; 5.x has none (`swe_gym.grading.swebench_classic`).
LINE = "4.x" if swebench_api.spec_tables() is not None else "5.x"
OTHER = {"4.x": "5.0.2", "5.x": "4.1.0"}[LINE]
NESTED = "SWE_GYM_SWEBENCH_OTHER_LINE"
ROOT = Path(__file__).parents[2]


def other_line_env() -> dict[str, str]:
    """This process's environment with swebench ``OTHER`` ahead on ``PYTHONPATH`` (installed if need be)."""
    target = Path(f"/var/tmp/swe_gym-swebench-{OTHER}")
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "swebench").is_dir():
            pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target)]
            done = subprocess.run([*pip, f"swebench=={OTHER}"], capture_output=True, text=True)
            if done.returncode and not IN_CI:
                pytest.skip(f"swebench {OTHER} could not be installed (no package index?): {done.stderr[-300:]}")
            assert done.returncode == 0, done.stderr
    env = {
        **os.environ,
        NESTED: "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(target), os.environ.get("PYTHONPATH")])),
    }
    probe = "from importlib import metadata; print(metadata.version('swebench'))"
    found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True).stdout.strip()
    assert found == OTHER, f"the other line's tree gives swebench {found!r}, not {OTHER}"
    return env


def run_under_other_line(*tests: str) -> None:
    """Run pytest on ``tests`` (paths or node ids) with the other swebench line; they must all pass."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
        env=other_line_env(),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert run.returncode == 0 and " passed" in run.stdout, run.stdout[-3000:]


def swesmith_problem() -> str | None:
    """Why the swesmith package cannot be imported here (None: it can). swesmith 0.0.9 imports names swebench
    5.x dropped (``DOCKER_USER``), so under 5.x its tests run under the 4.x line."""
    try:
        import swesmith.profiles  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None
