"""Build a real pytest SWE-bench task: SWE-bench Verified/Lite's pytest-dev__pytest-11143, rebuilt from PyPI.

The row's parametrized tests carry spaces, commas and an escaped newline in their ids
(``test_get_assertion_exprs[multi line assert with list continuation]``); swebench's pytest parser cuts a summary
line at its first space, so the row lists them cut (``test_get_assertion_exprs[multi``), several ids under one key.
That is the case ``tests/grading/test_real_pytest.py`` grades the safe harness against the official one on.

The task (pytest issue #11140): assertion rewriting takes a module whose first statement is a number (``0``) for
a module docstring and crashes in ``AssertionRewriter.is_rewrite_disabled`` (``TypeError: argument of type 'int'
is not iterable``). What it builds:

* A Docker image (``swe-gym-bench-pytest:11143``) ``FROM`` the Django image of ``real_image.py`` (Debian bullseye,
  Python 3.9 as SWE-bench's ``pytest`` ``8.0`` spec asks, the conda shim at ``/opt/miniconda3/bin/activate``), with
  Django and its dependencies uninstalled and ``/testbed`` replaced by the pytest 7.4.0 sdist from PyPI (the last
  release before the row's base commit, 6995257c, on the main branch three days later; it has the bug: its
  traceback lines are those of the issue) as a git repository at the task's base, installed editable
  (``python -m pip install -e .``, offline, no build isolation) with pytest's dependencies and build requirements
  as wheels from PyPI at versions of June 2023 (``WHEELS``). The version the build writes is 7.4.0
  (``SETUPTOOLS_SCM_PRETEND_VERSION``: the repository has no tags for setuptools-scm to read); setuptools-scm
  is uninstalled after the build (``BUILD_ONLY``: SWE-bench's env builds in pip's isolated environment and has
  none), so an offline reinstall keeps ``pytest.__version__`` 7.4.0 and the tree clean (checked).
* The base state: the sdist tree (less its ``PKG-INFO``, egg-info and generated ``_version.py``) with one edit of
  ours, ``BASE_EDITS``: ``AssertionRewriter.run``'s docstring check written as at the row's base commit (pytest's
  main had dropped Python 3.7, so ``ast.Constant`` and ``item.value.value`` instead of 7.4.0's ``astStr`` and a
  version branch; same behaviour on 3.9), so the gold patch has the real one's hunk. Committed with a fixed author
  and date, then a second, small commit with the sdist's own ``.gitignore`` (swebench's eval script runs
  ``git show``, which on a one-commit repository would print the whole tree into every log).
* The gold patch (``GOLD_EDITS``: the docstring check also asks ``isinstance(item.value.value, str)``, the real
  fix) and the test patch (``TEST_EDITS``: ``TestIssue11140::test_constant_not_picked_as_module_docstring``
  appended to ``testing/test_assertrewrite.py``, a pytester run of a module whose first statement is ``0``) are
  ``git diff`` outputs of edits written here. FAIL_TO_PASS is that test, as in the real row; PASS_TO_PASS the
  file's other tests that pass at the base with the test patch, found by running the official eval script and
  read by swebench's parser, so the ids with spaces appear cut at the first space, as in the real row.

The row (``toolkit: "swebench"``, ``repo: pytest-dev/pytest``, ``version: "8.0"`` as the real row, so swebench 4.x
derives its own eval script ``pytest -rA testing/test_assertrewrite.py``, and swe_gym an equivalent one under 5.x)
goes to ``/var/tmp/swe_gym_bench/pytest-dev__pytest-11143.json`` (``--row``), checked at the end: FAIL_TO_PASS
fails at the base and passes with the gold patch, PASS_TO_PASS passes in both, read by swebench's parser from the
official eval script's output in a ``--network none`` container.

Run: ``python benchmarks/pytest_image.py [--image IMG] [--row PATH] [--rebuild]`` after ``real_image.py`` (about a
minute). Needs a Docker engine and PyPI. Containers it starts are removed; the image is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from real_image import (
    CACHE_DIR,
    GIT_ENV,
    BuildError,
    Repo,
    edit,
    image_present,
    in_container,
    run,
)
from real_image import DEFAULT_IMAGE as DJANGO_IMAGE

DEFAULT_IMAGE = "swe-gym-bench-pytest:11143"
INSTANCE_ID = "pytest-dev__pytest-11143"
DEFAULT_ROW = CACHE_DIR / f"{INSTANCE_ID}.json"
PYTEST_VERSION = "7.4.0"
#: The swebench spec the real row names (``MAP_REPO_VERSION_TO_SPECS['pytest-dev/pytest']['8.0']``).
SPEC_VERSION = "8.0"
#: pip of the time (the Django image's 20.3 loses an editable install's ``easy-install.pth`` line when a reinstall
#: fails), pytest 7.4.0's dependencies on Python 3.9 and its build requirements (setuptools >= 45, setuptools-scm
#: >= 6.2.3 and what that needs; wheel for the metadata step): pure-Python wheels at versions of June 2023.
WHEELS = (
    "pip==23.1.2",
    "iniconfig==2.0.0",
    "packaging==23.1",
    "pluggy==1.2.0",
    "exceptiongroup==1.1.1",
    "tomli==2.0.1",
    "setuptools==67.8.0",
    "setuptools-scm==7.1.0",
    "typing-extensions==4.6.3",
    "wheel==0.40.0",
)
#: Uninstalled after the build: SWE-bench's env builds pytest in pip's isolated build environment, so its testbed
#: env holds setuptools and wheel (conda's) but not setuptools-scm. Without it an offline reinstall (what a grader
#: runs in a sandbox without network) leaves ``src/_pytest/_version.py`` (7.4.0) alone, only the distribution's
#: metadata says 0.0.0; with it the reinstall would write the version setuptools-scm reads from a git history
#: without tags, 0.1.devN, which pytest's own ``minversion = "2.0"`` refuses: every test run would be an error.
BUILD_ONLY = ("setuptools-scm", "typing-extensions")
REWRITE = "src/_pytest/assertion/rewrite.py"
TESTS = "testing/test_assertrewrite.py"
FAIL_TO_PASS = [f"{TESTS}::TestIssue11140::test_constant_not_picked_as_module_docstring"]
_INDENT = " " * 16
#: (pytest 7.4.0's text, base text, occurrences): the sdist's docstring check put as the row's base commit has it.
BASE_EDITS = (
    (
        f"{_INDENT}and isinstance(item.value, astStr)\n{_INDENT[4:]}):\n"
        f"{_INDENT}if sys.version_info >= (3, 8):\n{_INDENT}    doc = item.value.value\n"
        f"{_INDENT}else:\n{_INDENT}    doc = item.value.s\n",
        f"{_INDENT}and isinstance(item.value, ast.Constant)\n{_INDENT[4:]}):\n{_INDENT}doc = item.value.value\n",
        1,
    ),
)
#: (fixed text, base text, occurrences): the fix, a constant that is not a string is no docstring.
_CHECK = f"{_INDENT}and isinstance(item.value, ast.Constant)\n"
GOLD_EDITS = ((_CHECK + f"{_INDENT}and isinstance(item.value.value, str)\n", _CHECK, 1),)
#: The end of test_max_increased_verbosity, the file's last test.
_LAST_LINE = '        result = pytester.runpytest("-vv")\n        result.stdout.no_fnmatch_line("*xxx...xxx*")\n'
NEW_TEST = '''

class TestIssue11140:
    def test_constant_not_picked_as_module_docstring(self, pytester: Pytester) -> None:
        pytester.makepyfile(
            """\\
            0

            def test_foo():
                pass
            """
        )
        result = pytester.runpytest()
        assert result.ret == 0
'''
TEST_EDITS = ((_LAST_LINE + NEW_TEST, _LAST_LINE, 1),)
#: The real row's dates: the base commit's author and committer date, ``created_at``.
CREATED_AT = "2023-06-26T06:44:43Z"
GIT = {**GIT_ENV, "GIT_AUTHOR_DATE": CREATED_AT, "GIT_COMMITTER_DATE": CREATED_AT}
PROBLEM_STATEMENT = """\
Rewrite fails when first expression of file is a number and mistaken as docstring

Collecting a test module whose first statement is a number (a file holding just `0` is enough) fails under
assertion rewriting:

```
_pytest/assertion/rewrite.py:695: in run
    if self.is_rewrite_disabled(doc):
_pytest/assertion/rewrite.py:760: in is_rewrite_disabled
    return "PYTEST_DONT_REWRITE" in docstring
E   TypeError: argument of type 'int' is not iterable
```

With `--assert=plain` the module is collected and its tests pass. The assertion rewriter seems to take the first
expression of the module for its docstring even when it is not a string.
"""
DOCKERFILE = """\
FROM {base}
COPY wheels /tmp/wheels
RUN . /opt/miniconda3/bin/activate && conda activate testbed \\
 && python -m pip uninstall -y -q Django asgiref pytz sqlparse \\
 && python -m pip install -q --no-index --find-links /tmp/wheels {pip} \\
 && python -m pip install -q --no-index --find-links /tmp/wheels {pins} \\
 && rm -rf /tmp/wheels /testbed
COPY testbed /testbed
RUN . /opt/miniconda3/bin/activate && conda activate testbed && cd /testbed \\
 && SETUPTOOLS_SCM_PRETEND_VERSION={version} python -m pip install -q --no-index --no-build-isolation -e . \\
 && python -m pip uninstall -y -q {build_only} \\
 && python -c 'import pytest; assert pytest.__file__.startswith("/testbed/"), pytest.__file__' \\
 && test -z "$(git status --porcelain)"
LABEL swe_gym.benchmark_image={instance}
"""


def log(message: str) -> None:
    print(f"[pytest_image] {message}", file=sys.stderr, flush=True)


def git(repo: Path, *args: str) -> str:
    return run(["git", *args], cwd=repo, env={**os.environ, **GIT}).stdout


def download(cache: Path) -> tuple[Path, list[Path]]:
    """(the pytest sdist, the wheels of ``WHEELS``), downloaded from PyPI into ``cache`` once."""
    sdist = cache / f"pytest-{PYTEST_VERSION}.tar.gz"
    wheels = cache / f"pytest-{PYTEST_VERSION}-wheels"

    def have() -> list[Path]:
        # a wheel's file name: typing-extensions==4.6.3 is typing_extensions-4.6.3-py3-none-any.whl
        names = (pin.replace("-", "_").replace("==", "-") for pin in WHEELS)
        found = [sorted(wheels.glob(f"{name}-*.whl")) for name in names]
        return [paths[0] for paths in found] if all(found) else []

    if not sdist.is_file() or not have():
        log(f"downloading the pytest {PYTEST_VERSION} sdist and {len(WHEELS)} wheels from PyPI")
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
        run([*pip, "--no-binary", ":all:", "-d", str(cache), f"pytest=={PYTEST_VERSION}"], timeout=600)
        run([*pip, "--only-binary", ":all:", "-d", str(wheels), *WHEELS], timeout=600)
    if not sdist.is_file() or not have():
        raise BuildError(f"pip download left no {sdist.name} or not every wheel of {WHEELS} in {cache}")
    return sdist, have()


def diff_of(repo: Path, relpath: str, edits: Sequence[tuple[str, str, int]]) -> str:
    """``git diff`` of applying the fix's ``edits`` to ``relpath`` at the base; the tree is back at base after."""
    edit(repo / relpath, edits, to_base=False)
    try:
        return git(repo, "diff", "--", relpath)
    finally:
        git(repo, "checkout", "-q", "--", relpath)


def build_repo(archive: Path, into: Path) -> Repo:
    """The base state of the task as a git repository at ``into`` (which must not exist)."""
    with tempfile.TemporaryDirectory(dir=into.parent) as scratch:
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        (Path(scratch) / f"pytest-{PYTEST_VERSION}").rename(into)
    # sdist metadata and the file setuptools-scm writes: not part of the repository (its .gitignore names them)
    shutil.rmtree(into / "src" / "pytest.egg-info")
    (into / "PKG-INFO").unlink()
    (into / "src" / "_pytest" / "_version.py").unlink()
    gitignore = (into / ".gitignore").read_text()
    (into / ".gitignore").unlink()
    edit(into / REWRITE, BASE_EDITS, to_base=True)
    git(into, "init", "-q")
    git(into, "symbolic-ref", "HEAD", "refs/heads/main")
    git(into, "add", "-A")
    git(into, "commit", "-q", "--no-verify", "-m", f"pytest {PYTEST_VERSION} sdist at the base of {INSTANCE_ID}")
    (into / ".gitignore").write_text(gitignore)  # the small last commit: `git show` prints it in every log
    git(into, "add", ".gitignore")
    git(into, "commit", "-q", "--no-verify", "-m", "Add pytest's own .gitignore")
    base = git(into, "rev-parse", "HEAD").strip()
    patch = diff_of(into, REWRITE, GOLD_EDITS)
    test_patch = diff_of(into, TESTS, TEST_EDITS)
    if git(into, "status", "--porcelain").strip():
        raise BuildError(f"the repository at {into} is not clean after computing the patches")
    return Repo(into, base, patch, test_patch)


def build_image(image: str, repo: Repo, wheels: list[Path], work: Path) -> None:
    if not image_present(DJANGO_IMAGE):
        raise BuildError(f"{DJANGO_IMAGE} is missing: run benchmarks/real_image.py (or .ci/build_django_image.sh)")
    context = work / "context"
    context.mkdir()
    shutil.copytree(repo.path, context / "testbed", symlinks=True)
    (context / "wheels").mkdir()
    for wheel in wheels:
        shutil.copy(wheel, context / "wheels")
    pip, pins = WHEELS[0], " ".join(WHEELS[1:])  # pip first: the Django image's pip 20.3 cannot roll back a develop
    dockerfile = DOCKERFILE.format(
        base=DJANGO_IMAGE,
        pip=pip,
        pins=pins,
        version=PYTEST_VERSION,
        build_only=" ".join(BUILD_ONLY),
        instance=INSTANCE_ID,
    )
    (context / "Dockerfile").write_text(dockerfile)
    log(f"building {image} from {DJANGO_IMAGE}")
    run(["docker", "build", "-q", "--force-rm", "--network", "none", "-t", image, str(context)], timeout=900)


def stale(image: str, repo: Repo) -> bool:
    """Whether ``image`` is missing or holds another base commit."""
    if not image_present(image):
        return True
    head = run(["docker", "run", "--rm", "--network", "none", image, "git", "-C", "/testbed", "rev-parse", "HEAD"])
    return head.stdout.strip() != repo.base_commit


def check_offline_reinstall(image: str) -> None:
    """The eval script's reinstall, run offline as a grading sandbox runs it, leaves pytest 7.4.0 and a clean tree."""
    script = (
        "source /opt/miniconda3/bin/activate && conda activate testbed && cd /testbed && "
        'PIP_NO_INDEX=1 PIP_NO_BUILD_ISOLATION=0 python -m pip install -e . >/dev/null 2>&1; echo "pip exit $?"; '
        "python -c 'import pytest; print(\"pytest\", pytest.__version__)'; git status --porcelain"
    )
    out = in_container(image, script, {}).strip().splitlines()
    log(f"offline reinstall: {', '.join(out)}")
    if out[1:] != [f"pytest {PYTEST_VERSION}"]:
        raise BuildError(f"an offline reinstall changes the install or the tree: {out}")


def make_row(image: str, repo: Repo, pass_to_pass: list[str]) -> dict[str, object]:
    return {
        "instance_id": INSTANCE_ID,
        "repo": "pytest-dev/pytest",
        "version": SPEC_VERSION,
        "base_commit": repo.base_commit,
        "environment_setup_commit": repo.base_commit,
        "created_at": CREATED_AT,
        "problem_statement": PROBLEM_STATEMENT,
        "hints_text": "",
        "patch": repo.patch,
        "test_patch": repo.test_patch,
        "FAIL_TO_PASS": FAIL_TO_PASS,
        "PASS_TO_PASS": pass_to_pass,
        "image": image,
        "toolkit": "swebench",
    }


def official_statuses(row: dict[str, object], image: str, *, gold: bool) -> dict[str, Any]:
    """Statuses of the official eval script's run at the base (+ the gold patch), read by swebench's parser."""
    from swe_gym.grading import swebench_toolkit
    from swe_gym.tasks import SWETask

    task = SWETask.model_validate(row)
    script = swebench_toolkit.eval_script(task)
    if "pytest -rA" not in script or "git apply" not in script:
        raise BuildError("the eval script does not look like SWE-bench's pytest one (pytest -rA, test patch)")
    apply = "git apply /tmp/gold.patch && " if gold else ""
    files = {"/tmp/gold.patch": task.patch, "/tmp/eval.sh": script}
    started = time.perf_counter()
    output = in_container(image, f"cd /testbed && {apply}PIP_NO_INDEX=1 bash /tmp/eval.sh 2>&1", files)
    status = swebench_toolkit.parse_log(task, output)
    elapsed = time.perf_counter() - started
    log(f"official eval script, {'gold' if gold else 'base'}: {len(status)} statuses in {elapsed:.1f} s")
    if not status:
        raise BuildError(f"no test results from the eval script ({'gold' if gold else 'base'}):\n{output[-3000:]}")
    return status


def derive_row(image: str, repo: Repo) -> dict[str, object]:
    """The row, PASS_TO_PASS found by running the eval script at the base and with the gold patch, then checked:
    swebench's report on those runs fails FAIL_TO_PASS at the base and resolves the gold patch."""
    from swe_gym.grading import swebench_toolkit
    from swe_gym.tasks import SWETask

    draft = make_row(image, repo, [])
    runs = {gold: official_statuses(draft, image, gold=gold) for gold in (False, True)}
    base = runs[False]
    pass_to_pass = sorted(t for t, s in base.items() if s == "PASSED" and t not in FAIL_TO_PASS)
    others = {t: str(s) for t, s in base.items() if s != "PASSED" and t not in FAIL_TO_PASS}
    log(
        f"{len(base)} statuses in {TESTS} at the base: FAIL_TO_PASS {len(FAIL_TO_PASS)}, PASS_TO_PASS "
        f"{len(pass_to_pass)}, left out (not passing at the base): {others or 'none'}"
    )
    spaced = [t for t in pass_to_pass if "[" in t and not t.endswith("]")]
    log(f"PASS_TO_PASS ids swebench's parser cut at a space: {spaced}")
    row = make_row(image, repo, pass_to_pass)
    task = SWETask.model_validate(row)
    for gold, status in runs.items():
        resolved, f2p, p2p = swebench_toolkit.judge(task, status)
        log(
            f"{'gold' if gold else 'base'}: FAIL_TO_PASS {len(f2p.success)}/{len(FAIL_TO_PASS)}, PASS_TO_PASS "
            f"{len(p2p.success)}/{len(pass_to_pass)}: {'RESOLVED' if resolved else 'NOT RESOLVED'}"
        )
        if resolved != gold or p2p.failure:
            raise BuildError(
                f"the row does not hold ({'gold' if gold else 'base'}): FAIL_TO_PASS passing {f2p.success}, "
                f"PASS_TO_PASS failing {p2p.failure}"
            )
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"image to build (default: {DEFAULT_IMAGE})")
    parser.add_argument("--row", type=Path, default=DEFAULT_ROW, help=f"task row to write (default: {DEFAULT_ROW})")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help=f"where downloads are kept ({CACHE_DIR})")
    parser.add_argument("--rebuild", action="store_true", help="build the image even if it exists")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="swe_gym_pytest_image.", dir="/var/tmp"))
    started = time.perf_counter()
    try:
        sdist, wheels = download(args.cache)
        repo = build_repo(sdist, work / "testbed")
        log(f"base commit {repo.base_commit}; gold patch {len(repo.patch)} B, test patch {len(repo.test_patch)} B")
        if args.rebuild or stale(args.image, repo):
            build_image(args.image, repo, wheels, work)
        else:
            log(f"image {args.image} exists at the base commit; not rebuilt (--rebuild to rebuild)")
        check_offline_reinstall(args.image)
        row = derive_row(args.image, repo)
        args.row.parent.mkdir(parents=True, exist_ok=True)
        args.row.write_text(json.dumps(row, indent=2) + "\n")
        size = run(["docker", "image", "inspect", "-f", "{{.Size}}", args.image]).stdout.strip()
        log(
            f"task row written to {args.row}; image {args.image} {int(size) / 1e6:.0f} MB; "
            f"{time.perf_counter() - started:.0f} s in all"
        )
    except BuildError as exc:
        log(f"ERROR: {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
