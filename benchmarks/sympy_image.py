"""Build a SWE-bench-style sympy task image: sympy's own test runner (``bin/test``) graded by the official harness.

Django's ``runtests.py`` has a real image (``real_image.py``); this is the same for sympy, the second runner of
SWE-bench that is not pytest. What it builds:

* A Docker image (``swe-gym-bench-sympy:digits``) ``FROM`` the Django image of ``real_image.py`` (Debian bullseye,
  Python 3.9, the conda shim at ``/opt/miniconda3/bin/activate``), with Django uninstalled and ``/testbed``
  replaced by the sympy 1.12 sdist from PyPI, as a git repository at the task's base, installed editable
  (``python -m pip install -e .``, offline) with its one dependency, mpmath 1.3.0 (a wheel from PyPI).
* The task ``sympy__sympy-90001`` (a made-up number: no SWE-bench instance is this one): at the base,
  ``sympy.ntheory.digits.count_digits`` lost its branch for negative numbers (``rv.pop(b)`` only), so
  ``count_digits(-55)`` raises ``KeyError``; the gold patch puts the branch back (sympy 1.12's own code), the test
  patch adds ``test_count_digits_of_negative_numbers`` to ``sympy/ntheory/tests/test_digits.py``. PASS_TO_PASS: the
  file's other tests that swebench's parser reads. The row is classic (``repo: sympy/sympy``, ``version: "1.12"``),
  so swe_gym derives swebench 4.x's eval script for it (``bin/test -C --verbose sympy/ntheory/tests/test_digits.py``)
  and reads the log with swebench's sympy parser.
* ``/testbed/bin/test``: a swe_gym FIXTURE STAND-IN for sympy's ``bin/test``, which lives in sympy's git repository
  and not in its sdist. Like the real one it hands its arguments to ``sympy.test`` (sympy's own runner,
  ``sympy/testing/runtests.py``, whose report the parser reads); ``-C`` turns the cache off, ``--verbose`` prints a
  line per test.

The row goes to ``/var/tmp/swe_gym_bench/sympy__sympy-90001.json`` (``--row``), checked at the end: FAIL_TO_PASS
fails at the base and passes with the gold patch, PASS_TO_PASS passes in both, read by swebench's parser from the
official eval script's output in a ``--network none`` container.

Run: ``python benchmarks/sympy_image.py [--image IMG] [--row PATH] [--rebuild]`` after ``real_image.py`` (about a
minute). Needs a Docker engine and PyPI. Containers it starts are removed; the image is kept.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path

from real_image import (
    CACHE_DIR,
    BuildError,
    Repo,
    diff_of,
    edit,
    git,
    image_present,
    in_container,
    run,
)
from real_image import DEFAULT_IMAGE as DJANGO_IMAGE

DEFAULT_IMAGE = "swe-gym-bench-sympy:digits"
INSTANCE_ID = "sympy__sympy-90001"
DEFAULT_ROW = CACHE_DIR / f"{INSTANCE_ID}.json"
SYMPY_VERSION = "1.12"
MPMATH = "mpmath==1.3.0"
DIGITS = "sympy/ntheory/digits.py"
TESTS = "sympy/ntheory/tests/test_digits.py"
FAIL_TO_PASS = ["test_count_digits_of_negative_numbers"]
#: The file's other tests but its last: sympy's runner ends a file's last line with the file's verdict
#: (``test_is_palindromic ok   [FAIL]``), which swebench's parser does not read, so SWE-bench rows never list it.
PASS_TO_PASS = ["test_count_digits", "test_digits"]
#: (fixed text, base text, occurrences): the fix, undone in the base state.
GOLD_EDITS = (("    rv.pop(b) if b in rv else rv.pop(-b)  # b or -b is there\n", "    rv.pop(b)\n", 1),)
NEW_TEST = """

def test_count_digits_of_negative_numbers():
    assert count_digits(-55, 10) == {5: 2}
    assert count_digits(-5, 2) == {1: 2, 0: 1}
"""
_LAST_LINE = "    assert n[4] == 0 and type(n[4]) is int\n"  # of test_count_digits: the new test follows it
TEST_EDITS = ((_LAST_LINE + NEW_TEST, _LAST_LINE, 1),)
BIN_TEST = '''#!/usr/bin/env python
"""swe_gym FIXTURE STAND-IN for sympy's bin/test (in sympy's repository, not its sdist): runs sympy's own test
runner, sympy.test, on the paths given. -C: no cache (SYMPY_USE_CACHE=no); --verbose: a line per test."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
args = sys.argv[1:]
if "-C" in args:
    os.environ["SYMPY_USE_CACHE"] = "no"
import sympy  # noqa: E402

paths = [a for a in args if not a.startswith("-")]
sys.exit(0 if sympy.test(*paths, verbose="--verbose" in args, colors=False) else 1)
'''
GITIGNORE = "# swe_gym fixture image: what sympy's .gitignore keeps out of git status\n*.egg-info\n*.pyc\n__pycache__\n"
PROBLEM_STATEMENT = """\
count_digits fails for negative numbers

`sympy.ntheory.count_digits(-55)` raises `KeyError: 10` instead of returning `{5: 2}`: `digits` puts the base's
negative first for a negative number, and count_digits only removes the positive base from the counts.
"""
DOCKERFILE = """\
FROM {base}
RUN rm -rf /testbed
COPY testbed /testbed
COPY wheels /tmp/wheels
RUN . /opt/miniconda3/bin/activate && conda activate testbed \\
 && python -m pip uninstall -y Django >/dev/null \\
 && python -m pip install --no-index --find-links /tmp/wheels mpmath \\
 && cd /testbed && python setup.py -q develop --no-deps >/dev/null \\
 && rm -rf /tmp/wheels
"""


def log(message: str) -> None:
    print(f"[sympy_image] {message}", file=sys.stderr, flush=True)


def download(cache: Path) -> tuple[Path, Path]:
    """(the sympy sdist, the mpmath wheel), downloaded from PyPI into ``cache`` once."""
    found = sorted(cache.glob(f"sympy-{SYMPY_VERSION}.tar.gz")), sorted(cache.glob("mpmath-1.3.0-*.whl"))
    if not all(found):
        log(f"downloading the sympy {SYMPY_VERSION} sdist and {MPMATH} from PyPI")
        pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(cache)]
        run([*pip, "--no-binary", ":all:", f"sympy=={SYMPY_VERSION}"], timeout=600)
        run([*pip, "--only-binary", ":all:", MPMATH], timeout=600)
        found = sorted(cache.glob(f"sympy-{SYMPY_VERSION}.tar.gz")), sorted(cache.glob("mpmath-1.3.0-*.whl"))
    if not all(found):
        raise BuildError(f"pip download left no sympy sdist or mpmath wheel in {cache}")
    return found[0][0], found[1][0]


def build_repo(archive: Path, into: Path) -> Repo:
    """The base state of the task as a git repository at ``into`` (which must not exist)."""
    with tempfile.TemporaryDirectory(dir=into.parent) as scratch:
        with tarfile.open(archive) as tar:
            tar.extractall(scratch, filter="data")
        (Path(scratch) / f"sympy-{SYMPY_VERSION}").rename(into)
    shutil.rmtree(into / "sympy.egg-info", ignore_errors=True)  # sdist metadata: not part of the repository
    (into / "bin" / "test").write_text(BIN_TEST)
    (into / "bin" / "test").chmod(0o755)
    edit(into / DIGITS, GOLD_EDITS, to_base=True)
    git(into, "init", "-q")
    git(into, "symbolic-ref", "HEAD", "refs/heads/master")
    git(into, "add", "-A")
    git(into, "commit", "-q", "--no-verify", "-m", f"sympy {SYMPY_VERSION} sdist at the base of {INSTANCE_ID}")
    (into / ".gitignore").write_text(GITIGNORE)  # and a small last commit: `git show` prints it in every log
    git(into, "add", ".gitignore")
    git(into, "commit", "-q", "--no-verify", "-m", "Add a .gitignore for the editable install's files")
    base = git(into, "rev-parse", "HEAD").strip()
    patch = diff_of(into, DIGITS, GOLD_EDITS)
    test_patch = diff_of(into, TESTS, TEST_EDITS)
    if git(into, "status", "--porcelain").strip():
        raise BuildError(f"the repository at {into} is not clean after computing the patches")
    return Repo(into, base, patch, test_patch)


def build_image(image: str, repo: Repo, wheel: Path, work: Path) -> None:
    if not image_present(DJANGO_IMAGE):
        raise BuildError(f"{DJANGO_IMAGE} is missing: run benchmarks/real_image.py (or .ci/build_django_image.sh)")
    context = work / "context"
    context.mkdir()
    shutil.copytree(repo.path, context / "testbed", symlinks=True)
    (context / "wheels").mkdir()
    shutil.copy(wheel, context / "wheels")
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=DJANGO_IMAGE))
    log(f"building {image} from {DJANGO_IMAGE}")
    run(["docker", "build", "-q", "--force-rm", "--network", "none", "-t", image, str(context)], timeout=900)


def stale(image: str, repo: Repo) -> bool:
    """Whether ``image`` is missing or holds another base commit."""
    if not image_present(image):
        return True
    head = run(["docker", "run", "--rm", "--network", "none", image, "git", "-C", "/testbed", "rev-parse", "HEAD"])
    return head.stdout.strip() != repo.base_commit


def make_row(image: str, repo: Repo) -> dict[str, object]:
    return {
        "instance_id": INSTANCE_ID,
        "repo": "sympy/sympy",
        "version": SYMPY_VERSION,
        "base_commit": repo.base_commit,
        "environment_setup_commit": repo.base_commit,
        "created_at": "2023-05-10T00:00:00Z",
        "problem_statement": PROBLEM_STATEMENT,
        "hints_text": "",
        "patch": repo.patch,
        "test_patch": repo.test_patch,
        "FAIL_TO_PASS": FAIL_TO_PASS,
        "PASS_TO_PASS": PASS_TO_PASS,
        "image": image,
        "toolkit": "swebench",
    }


def check_row(row: dict[str, object], image: str) -> None:
    """The official eval script fails FAIL_TO_PASS at the base and resolves the gold patch (swebench's parser)."""
    from swe_gym.grading import swebench_toolkit
    from swe_gym.tasks import SWETask

    task = SWETask.model_validate(row)
    script = swebench_toolkit.eval_script(task)
    for gold in (False, True):
        apply = "git apply /tmp/gold.patch && " if gold else ""
        files = {"/tmp/gold.patch": task.patch, "/tmp/eval.sh": script}
        output = in_container(image, f"cd /testbed && {apply}bash /tmp/eval.sh 2>&1", files)
        status = swebench_toolkit.parse_log(task, output)
        resolved, f2p, p2p = swebench_toolkit.judge(task, status)
        log(
            f"{'gold' if gold else 'base'}: FAIL_TO_PASS {len(f2p.success)}/{len(FAIL_TO_PASS)}, PASS_TO_PASS "
            f"{len(p2p.success)}/{len(PASS_TO_PASS)}"
        )
        if resolved != gold or len(p2p.success) != len(PASS_TO_PASS):
            raise BuildError(f"the row does not hold ({'gold' if gold else 'base'}):\n{output[-3000:]}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"image to build (default: {DEFAULT_IMAGE})")
    parser.add_argument("--row", type=Path, default=DEFAULT_ROW, help=f"task row to write (default: {DEFAULT_ROW})")
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help=f"where downloads are kept ({CACHE_DIR})")
    parser.add_argument("--rebuild", action="store_true", help="build the image even if it exists")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="swe_gym_sympy_image.", dir="/var/tmp"))
    try:
        sdist, wheel = download(args.cache)
        repo = build_repo(sdist, work / "testbed")
        log(f"base commit {repo.base_commit}; gold patch {len(repo.patch)} B, test patch {len(repo.test_patch)} B")
        if args.rebuild or stale(args.image, repo):
            build_image(args.image, repo, wheel, work)
        row = make_row(args.image, repo)
        check_row(row, args.image)
        args.row.parent.mkdir(parents=True, exist_ok=True)
        args.row.write_text(json.dumps(row, indent=2) + "\n")
        log(f"task row written to {args.row}")
    except BuildError as exc:
        log(f"ERROR: {exc}")
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
