"""The manual cannot drift: every runnable block of README.md and docs/ runs, and the site builds strictly.

Each ``python`` block runs with this interpreter (the suite's venv) and each ``bash`` block with
``bash -e -o pipefail``, on its own, in a fresh directory (``examples/`` and ``benchmarks/`` linked
in), with this venv's ``bin`` first on PATH (``swe-gym``) and this session's run id, so the
suite's leak check counts their sandboxes too. See ``blocks.py`` for the fence languages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from swe_gym.sandbox import current_run_id
from swe_gym.settings import read_env_file
from tests.conftest import IN_CI, require
from tests.docs.blocks import ROOT, RUNNABLE, SHOWN, Block, all_blocks, manual_files

BLOCKS = all_blocks()
RUN = [block for block in BLOCKS if block.lang in RUNNABLE]
#: Per block; the slowest (an LLM episode on the CPU, a Ray cluster start) take well under it.
TIMEOUT_S = 240
README_MAX_LINES = 300


LLM_ENV_FILE = Path("/etc/swe-gym/llm.env")


def _llm_problem() -> str | None:
    values = read_env_file(LLM_ENV_FILE) if LLM_ENV_FILE.is_file() else {}
    base_url = os.environ.get("SWE_GYM_LLM_BASE_URL") or values.get("SWE_GYM_LLM_BASE_URL")
    if not base_url:
        return f"no LLM endpoint configured (run .ci/provision_llm.sh, which writes {LLM_ENV_FILE})"
    try:
        urllib.request.urlopen(f"{base_url}/models", timeout=60).read()  # answers after the generation it runs
    except OSError as exc:
        return f"the LLM server at {base_url} does not answer ({exc})"
    return None


def require_runtimes(block: Block) -> None:
    """What the block runs on, as the rest of the suite checks it: a skip on a machine without it, a failure
    under CI (which has every one)."""
    require("local")  # bubblewrap: the CLI refuses untrusted policies on unisolated local sandboxes
    for name in ("docker", "apptainer", "opensandbox"):
        if name in block.code or (name == "docker" and "swe-gym-test:bookworm" in block.code):
            require(name)
    if any(mark in block.code for mark in ("llm.env", "--policy llm", "127.0.0.1:18791")):
        problem = _llm_problem()
        if problem is not None:
            if IN_CI:
                pytest.fail(f"CI must run {block.id}: {problem}")
            pytest.skip(problem)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["SWE_GYM_RUN_ID"] = current_run_id()
    env["SWE_GYM_PROGRESS"] = "0"
    return env


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    for name in ("examples", "benchmarks"):
        (cwd / name).symlink_to(ROOT / name)
    if block.lang == "python":
        script = cwd / "block.py"
        script.write_text(block.code, encoding="utf-8")
        argv = [sys.executable, str(script)]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", block.code]
    return subprocess.run(
        argv,
        cwd=cwd,
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


@pytest.mark.timeout(TIMEOUT_S + 30)
@pytest.mark.parametrize("block", RUN, ids=[block.id for block in RUN])
def test_block_runs(block: Block, tmp_path: Path) -> None:
    require_runtimes(block)
    try:
        done = _run(block, tmp_path)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{block.id}: still running after {TIMEOUT_S} s; output:\n{exc.output or ''}")
    assert done.returncode == 0, f"{block.id}: exit code {done.returncode}; output:\n{done.stdout}\ncode:\n{block.code}"


def test_every_block_says_whether_it_runs() -> None:
    unknown = [f"{b.id}: {b.lang or '(no language)'}" for b in BLOCKS if b.lang not in RUNNABLE | SHOWN]
    assert not unknown, f"fence languages must be one of {sorted(RUNNABLE | SHOWN)}: {unknown}"
    assert len(RUN) >= 20, "the collector found too few runnable blocks: is blocks.py still reading the fences?"


def test_readme_is_one_page() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES}): move detail to docs/"


def test_readme_links_resolve() -> None:
    """README.md lies outside the site, so mkdocs does not check its relative links: this does."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        if not (ROOT / path).exists():
            missing.append(target)
    assert not missing, f"README.md links to missing files: {missing}"


def test_docs_site_builds_strictly(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a broken link or anchor, a page outside the nav, a reference to an object
    that is gone, or any docstring the API reference cannot render fails it."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
        check=False,
    )
    warnings = [line for line in done.stdout.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert done.returncode == 0 and not warnings, done.stdout
    assert (tmp_path / "site" / "reference" / "envs" / "index.html").is_file()
    pages = {path.relative_to(ROOT / "docs").with_suffix("") for path in manual_files()[1:]}
    built = {path.parent.relative_to(tmp_path / "site") for path in (tmp_path / "site").rglob("index.html")}
    assert {p for p in pages if p.name != "index"} <= built, "every page of docs/ is built"
