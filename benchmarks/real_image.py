"""Build a real-size task image for the grading benchmarks: Django as in SWE-bench Lite's django__django-11099.

What it builds
--------------
A Docker image (``swe-gym-bench-django:11099``, also tagged
``swebench/sweb.eval.x86_64.django_1776_django-11099:latest``, the name swebench 4.x's ``run_evaluation`` looks
for with ``--namespace swebench``) laid out like a SWE-bench instance image:

* Debian bullseye (``debootstrap --variant=minbase``, Python 3.9: Django 3.0 predates 3.11) with python3,
  python3-venv, python3-pip, git, patch, ca-certificates and locales (``en_US.UTF-8`` generated). The Debian mirror
  is the one this machine's apt already uses (read as ``.ci/lib.sh``'s ``debian_mirror`` reads it).
* ``/testbed``: the Django 3.0 sdist from PyPI, put back into the base state of django__django-11099 (both username
  validators' ``regex`` back to ``r'^[\\w.@+-]+$'``, which accepts a trailing newline, and the two trailing-newline
  cases removed from ``tests/auth_tests/test_validators.py``), committed with a fixed author and date, so the base
  commit is the same on every machine. The base is a second, small commit adding a ``.gitignore`` (egg-info,
  bytecode; it stands in for Django's own, so the editable install leaves the work tree clean): swebench's eval
  script runs ``git show``, which on a one-commit repository would print the whole tree into every log.
* ``/opt/miniconda3/envs/testbed``: a venv with Django installed editable (``python -m pip install -e .``, as
  swebench's ``MAP_REPO_VERSION_TO_SPECS['django/django']['3.0']`` says) and its dependencies (asgiref, pytz,
  sqlparse, pinned to versions of Django 3.0's time) from PyPI; the host's CA bundle is copied in only for that
  install and removed afterwards.
* ``/opt/miniconda3/bin/activate``: a swe_gym BENCHMARK SHIM standing in for conda (there is no conda here): it
  defines a ``conda`` shell function, so ``source /opt/miniconda3/bin/activate && conda activate testbed`` (what
  swebench's eval scripts run) activates that venv.

The gold patch (the validators change) and the test patch (the test additions) are ``git diff`` outputs computed
here from the two states of the tree; together with FAIL_TO_PASS (the two validator tests) and PASS_TO_PASS (the
other tests of ``auth_tests.test_validators`` that pass at the base with the test patch, found by running them) they
make a SWE-bench-format task row (``toolkit: "swebench"``, ``image``: the image), written to
``/var/tmp/swe_gym_bench/django__django-11099.json`` (``--row``), which ``grading_speed.py`` and
``evaluate_vs_official.py`` read.

Checks at the end: the row's FAIL_TO_PASS tests fail at the base and pass with the gold patch; Django's own test
runner runs ``auth_tests.test_validators`` in a ``--network none`` container; the official swebench 4.x eval script
(``swe_gym.grading.swebench_toolkit.eval_script``) runs there with the gold patch and its log, read by swebench's
parser, resolves the task.

Run: ``python benchmarks/real_image.py [--image IMG] [--row PATH] [--rebuild]`` (about 3 minutes the first time;
seconds when the image exists, which is kept unless ``--rebuild``). Needs root (debootstrap, chroot), a Docker
engine, PyPI and the Debian archive. Containers it starts are removed; the images are kept.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent
DEFAULT_IMAGE = "swe-gym-bench-django:11099"
SWEBENCH_IMAGE = "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
INSTANCE_ID = "django__django-11099"
CACHE_DIR = Path("/var/tmp/swe_gym_bench")
DEFAULT_ROW = CACHE_DIR / f"{INSTANCE_ID}.json"
DJANGO_VERSION = "3.0"
SUITE = "bullseye"
PACKAGES = "python3,python3-venv,python3-pip,git,patch,ca-certificates,locales"
ENV_DIR = "/opt/miniconda3/envs/testbed"
#: Django 3.0's dependencies (setup.py: pytz, sqlparse >= 0.2.2, asgiref ~= 3.2), at versions of its time.
DEPENDENCIES = ("asgiref==3.2.10", "pytz==2019.3", "sqlparse==0.3.1")
TEST_MODULE = "auth_tests.test_validators"
VALIDATORS = "django/contrib/auth/validators.py"
TESTS = "tests/auth_tests/test_validators.py"
FAIL_TO_PASS = [
    "test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)",
    "test_unicode_validator (auth_tests.test_validators.UsernameValidatorsTests)",
]
#: (fixed text, base text): the fix, undone in the base state. Each must occur as often as said.
GOLD_EDITS = ((r"regex = r'^[\w.@+-]+\Z'", r"regex = r'^[\w.@+-]+$'", 2),)
TEST_EDITS = (
    ("\"en\\u2013dash\", 'trailingnewline\\u000A',", '"en\\u2013dash",', 1),
    ("\"أحمد\", 'trailingnewline\\n']", '"أحمد"]', 1),
)
GITIGNORE = (
    "# swe_gym benchmark image: what Django's own .gitignore keeps out of git status\n*.egg-info\n*.pyc\n__pycache__\n"
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "swe_gym benchmark",
    "GIT_AUTHOR_EMAIL": "bench@swe-gym.invalid",
    "GIT_COMMITTER_NAME": "swe_gym benchmark",
    "GIT_COMMITTER_EMAIL": "bench@swe-gym.invalid",
    "GIT_AUTHOR_DATE": "2019-03-14T00:00:00Z",
    "GIT_COMMITTER_DATE": "2019-03-14T00:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}
ACTIVATE_SHIM = """\
# swe_gym BENCHMARK SHIM standing in for conda: this image has no conda. Sourcing this file defines a shell
# function `conda` whose `conda activate NAME` activates the venv /opt/miniconda3/envs/NAME (PATH, VIRTUAL_ENV),
# which is all swebench's eval scripts ask of conda. Safe under `set -u`.
conda() {
  case "${1:-}" in
    activate)
      local env="${2:-testbed}"
      if [ ! -x "/opt/miniconda3/envs/$env/bin/python" ]; then
        echo "conda (swe_gym benchmark shim): no env $env" >&2
        return 1
      fi
      if [ -n "${_SWE_GYM_SHIM_OLD_PATH:-}" ]; then PATH="$_SWE_GYM_SHIM_OLD_PATH"; fi
      export _SWE_GYM_SHIM_OLD_PATH="$PATH"
      export VIRTUAL_ENV="/opt/miniconda3/envs/$env" CONDA_DEFAULT_ENV="$env" CONDA_PREFIX="/opt/miniconda3/envs/$env"
      export PATH="$VIRTUAL_ENV/bin:$PATH"
      hash -r 2>/dev/null || true
      ;;
    deactivate)
      if [ -n "${_SWE_GYM_SHIM_OLD_PATH:-}" ]; then export PATH="$_SWE_GYM_SHIM_OLD_PATH"; fi
      unset VIRTUAL_ENV CONDA_DEFAULT_ENV CONDA_PREFIX _SWE_GYM_SHIM_OLD_PATH
      hash -r 2>/dev/null || true
      ;;
    *)
      echo "conda (swe_gym benchmark shim): only 'conda activate ENV' and 'conda deactivate' are supported" >&2
      return 1
      ;;
  esac
}
"""
PROBLEM_STATEMENT = """\
UsernameValidator allows trailing newline in usernames

ASCIIUsernameValidator and UnicodeUsernameValidator use the regex r'^[\\w.@+-]+$'. In Python, '$' also matches
before a trailing newline, so usernames that end with a newline are accepted. Anchor the regex with \\A and \\Z
(or end it with \\Z) so that a trailing newline is rejected.
"""


class BuildError(RuntimeError):
    """A build step failed."""


def log(message: str) -> None:
    print(f"[real_image] {message}", file=sys.stderr, flush=True)


def run(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    check: bool = True,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        list(argv), cwd=cwd, env=env, capture_output=True, text=True, errors="replace", check=False, timeout=timeout
    )
    if check and result.returncode != 0:
        raise BuildError(
            f"{' '.join(argv)[:200]} failed (exit {result.returncode}):\n{(result.stdout + result.stderr)[-3000:]}"
        )
    return result


def git(repo: Path, *args: str) -> str:
    return run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}).stdout


def image_present(image: str) -> bool:
    return run(["docker", "image", "inspect", image], check=False).returncode == 0


def debian_mirror() -> str:
    """The mirror this machine's apt uses, read by ``.ci/lib.sh``'s ``debian_mirror`` itself."""
    script = f'die() {{ echo "$*" >&2; exit 1; }}; source {REPO_ROOT / ".ci" / "lib.sh"}; debian_mirror'
    return run(["bash", "-c", script]).stdout.strip()


# -- the repository ------------------------------------------------------------------------------------------------


def sdist(cache: Path) -> Path:
    """The Django 3.0 sdist from PyPI (downloaded once into ``cache``)."""
    found = sorted(cache.glob(f"Django-{DJANGO_VERSION}.tar.gz"))
    if found:
        return found[0]
    cache.mkdir(parents=True, exist_ok=True)
    log(f"downloading the Django {DJANGO_VERSION} sdist from PyPI")
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(cache)]
    run([*argv, f"Django=={DJANGO_VERSION}"], timeout=600)
    found = sorted(cache.glob(f"Django-{DJANGO_VERSION}.tar.gz"))
    if not found:
        raise BuildError(f"pip download left no Django-{DJANGO_VERSION}.tar.gz in {cache}")
    return found[0]


def edit(path: Path, edits: Sequence[tuple[str, str, int]], *, to_base: bool) -> None:
    text = path.read_text(encoding="utf-8")
    for fixed, base, count in edits:
        old, new = (fixed, base) if to_base else (base, fixed)
        if text.count(old) != count:
            raise BuildError(f"{path}: expected {count} occurrence(s) of {old!r}, found {text.count(old)}")
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


@dataclass(frozen=True)
class Repo:
    path: Path
    base_commit: str
    patch: str
    test_patch: str


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
            tar.extractall(scratch, filter="data")  # owned by whoever extracts (root), not the packer
        (Path(scratch) / f"Django-{DJANGO_VERSION}").rename(into)
    shutil.rmtree(into / "Django.egg-info", ignore_errors=True)  # sdist metadata: not part of the repository
    edit(into / VALIDATORS, GOLD_EDITS, to_base=True)
    edit(into / TESTS, TEST_EDITS, to_base=True)
    git(into, "init", "-q")
    git(into, "symbolic-ref", "HEAD", "refs/heads/main")
    git(into, "add", "-A")
    git(into, "commit", "-q", "--no-verify", "-m", f"Django {DJANGO_VERSION} sdist at the base of {INSTANCE_ID}")
    # A second, small commit as the base: swebench's eval script runs `git show`, which on a one-commit repository
    # would print the whole tree (26 MB) into every eval log. It holds nothing of the fix.
    (into / ".gitignore").write_text(GITIGNORE)
    git(into, "add", ".gitignore")
    git(into, "commit", "-q", "--no-verify", "-m", "Add a .gitignore for the editable install's files")
    base = git(into, "rev-parse", "HEAD").strip()
    patch = diff_of(into, VALIDATORS, GOLD_EDITS)
    test_patch = diff_of(into, TESTS, TEST_EDITS)
    if git(into, "status", "--porcelain").strip():
        raise BuildError(f"the repository at {into} is not clean after computing the patches")
    return Repo(into, base, patch, test_patch)


# -- the image -----------------------------------------------------------------------------------------------------


def chroot(rootfs: Path, script: str, *, timeout: float = 900) -> str:
    env = {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
    }
    return run(["chroot", str(rootfs), "/bin/bash", "-euo", "pipefail", "-c", script], env=env, timeout=timeout).stdout


def unmount_under(rootfs: Path) -> None:
    prefix = f"{rootfs}/"
    mounts = [
        line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[1].startswith(prefix)
    ]
    for mount in sorted(mounts, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def build_image(image: str, repo: Repo, work: Path) -> None:
    rootfs = work / "rootfs"
    mirror = debian_mirror()
    started = time.perf_counter()
    log(f"debootstrap {SUITE} ({PACKAGES}) from {mirror}")
    try:
        run(["debootstrap", "--variant=minbase", f"--include={PACKAGES}", SUITE, str(rootfs), mirror], timeout=1800)
    except BuildError:
        debootstrap_log = rootfs / "debootstrap" / "debootstrap.log"
        if debootstrap_log.exists():
            log(debootstrap_log.read_text()[-2000:])
        raise
    log(f"debootstrap done in {time.perf_counter() - started:.0f} s; copying the repository to /testbed")
    shutil.copytree(repo.path, rootfs / "testbed", symlinks=True)
    shutil.copy2("/etc/resolv.conf", rootfs / "etc" / "resolv.conf")
    ca = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    shutil.copy2(ca, rootfs / "tmp" / "host-ca.crt")
    (rootfs / "opt" / "miniconda3" / "bin").mkdir(parents=True)
    (rootfs / "opt" / "miniconda3" / "bin" / "activate").write_text(ACTIVATE_SHIM)
    pins = " ".join(DEPENDENCIES)
    script = f"""
sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen >/dev/null
git config --system user.email swe-gym-bench@localhost
git config --system user.name swe-gym-bench
git config --system --add safe.directory '*'
python3 -m venv {ENV_DIR}
export SSL_CERT_FILE=/tmp/host-ca.crt PIP_CERT=/tmp/host-ca.crt PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
{ENV_DIR}/bin/python -m pip install -q {pins}
source /opt/miniconda3/bin/activate && conda activate testbed
cd /testbed && python -m pip install -q -e .
python -c 'import django, sys; print(django.__file__, django.get_version(), sys.version.split()[0])'
test -z "$(git status --porcelain)"
"""
    log("installing (locale, git config, venv, Django editable with its dependencies from PyPI)")
    try:
        print(chroot(rootfs, script).strip(), file=sys.stderr)
    finally:
        unmount_under(rootfs)
        (rootfs / "tmp" / "host-ca.crt").unlink(missing_ok=True)
    (rootfs / "etc" / "resolv.conf").write_text("")
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "root/.cache"):
        for child in (rootfs / junk).glob("*"):
            if child.is_file():
                child.unlink()
            elif child.is_dir() and child.name != "partial":
                shutil.rmtree(child)
    log(f"importing {image}")
    tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    assert tar.stdout is not None
    imported = subprocess.run(
        [
            "docker",
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            "WORKDIR /testbed",
            "--change",
            'CMD ["/bin/bash"]',
            "--change",
            "LABEL swe_gym.benchmark_image=django__django-11099",
            "-",
            image,
        ],
        stdin=tar.stdout,
        capture_output=True,
        text=True,
        check=False,
    )
    tar.stdout.close()
    if tar.wait() != 0 or imported.returncode != 0:
        raise BuildError(f"docker import failed: {imported.stderr[-2000:]}")


# -- checks and the task row ---------------------------------------------------------------------------------------


def test_command(module: str = TEST_MODULE) -> str:
    """The swebench spec's test command for Django 3.0 on ``module``, with the conda (shim) activation."""
    return (
        "source /opt/miniconda3/bin/activate; conda activate testbed; cd /testbed; "
        f"./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 {module}"
    )


def in_container(image: str, script: str, files: dict[str, str], timeout: float = 600) -> str:
    """Run ``script`` (bash) in a fresh ``--network none`` container of ``image`` with ``files`` copied in; output."""
    name = f"swe-gym-real-image-check-{os.getpid()}-{time.monotonic_ns()}"
    run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            "--network",
            "none",
            "--label",
            "swe_gym.benchmark=real_image",
            image,
            "sleep",
            "infinity",
        ]
    )
    try:
        with tempfile.TemporaryDirectory() as scratch:
            for dest, text in files.items():
                local = Path(scratch) / Path(dest).name
                local.write_text(text)
                run(["docker", "cp", str(local), f"{name}:{dest}"])
        result = run(["docker", "exec", name, "bash", "-c", script], check=False, timeout=timeout)
        return result.stdout + result.stderr
    finally:
        run(["docker", "rm", "-f", name], check=False)


def statuses(image: str, repo: Repo, *, gold: bool) -> dict[str, str]:
    """Test statuses of the module at base + test patch (+ the gold patch), read by swebench's django parser."""
    from swe_gym.grading.swebench_api import parsers_by_name  # swebench 4.x or 5.x; fails early without it

    files = {"/tmp/test.patch": repo.test_patch, "/tmp/gold.patch": repo.patch}
    apply = "git apply /tmp/test.patch" + (" && git apply /tmp/gold.patch" if gold else "")
    output = in_container(image, f"set -e; cd /testbed; {apply}; set +e; {test_command()} 2>&1", files)
    return dict(parsers_by_name()["parse_log_django"](output, None))


def make_row(image: str, repo: Repo, pass_to_pass: list[str]) -> dict[str, object]:
    return {
        "instance_id": INSTANCE_ID,
        "repo": "django/django",
        "version": DJANGO_VERSION,
        "base_commit": repo.base_commit,
        "environment_setup_commit": repo.base_commit,
        "created_at": "2019-03-20T03:46:18Z",
        "problem_statement": PROBLEM_STATEMENT,
        "hints_text": "",
        "patch": repo.patch,
        "test_patch": repo.test_patch,
        "FAIL_TO_PASS": FAIL_TO_PASS,
        "PASS_TO_PASS": pass_to_pass,
        "image": image,
        "toolkit": "swebench",
    }


def derive_row(image: str, repo: Repo) -> dict[str, object]:
    base = statuses(image, repo, gold=False)
    fixed = statuses(image, repo, gold=True)
    if not base:
        raise BuildError("no test results at the base (is the image broken?)")
    for test in FAIL_TO_PASS:
        if base.get(test) == "PASSED":
            raise BuildError(f"{test} passes at the base: the base state is wrong")
        if fixed.get(test) != "PASSED":
            raise BuildError(f"{test} does not pass with the gold patch ({fixed.get(test)})")
    pass_to_pass = sorted(t for t, s in base.items() if s == "PASSED" and t not in FAIL_TO_PASS)
    broken = [t for t in pass_to_pass if fixed.get(t) != "PASSED"]
    if broken:
        raise BuildError(f"the gold patch breaks PASS_TO_PASS tests: {broken}")
    log(
        f"{len(base)} tests in {TEST_MODULE}: FAIL_TO_PASS {len(FAIL_TO_PASS)} (fail at base), "
        f"PASS_TO_PASS {len(pass_to_pass)}"
    )
    return make_row(image, repo, pass_to_pass)


def check_official(row: dict[str, object], image: str) -> None:
    """The classic row's eval script (swebench 4.x's, or swe_gym's under 5.x) resolves the gold patch in the image."""
    from swe_gym.grading import swebench_toolkit
    from swe_gym.tasks import SWETask

    task = SWETask.model_validate(row)
    script = swebench_toolkit.eval_script(task)
    if "pip install -e ." not in script or "git apply" not in script:
        raise BuildError("the eval script does not look like a SWE-bench one (reinstall, test patch)")
    started = time.perf_counter()
    output = in_container(
        image,
        "cd /testbed && git apply /tmp/gold.patch && bash /tmp/eval.sh 2>&1",
        {"/tmp/gold.patch": task.patch, "/tmp/eval.sh": script},
    )
    elapsed = time.perf_counter() - started
    status = swebench_toolkit.parse_log(task, output)
    resolved, f2p, p2p = swebench_toolkit.judge(task, status)
    log(
        f"official eval script in a --network none container: {elapsed:.1f} s (start to removal), "
        f"FAIL_TO_PASS {len(f2p.success)}/{len(task.fail_to_pass)}, PASS_TO_PASS {len(p2p.success)}/"
        f"{len(task.pass_to_pass)}: {'RESOLVED' if resolved else 'NOT RESOLVED'}"
    )
    if not resolved:
        raise BuildError(f"the official eval script did not resolve the gold patch:\n{output[-3000:]}")


def check_runtests(image: str) -> None:
    argv = ["docker", "run", "--rm", "--network", "none", image, "bash", "-lc", test_command()]
    started = time.perf_counter()
    result = run(argv, check=False, timeout=600)
    tail = (result.stdout + result.stderr).strip().splitlines()[-4:]
    log(
        f"runtests.py {TEST_MODULE} at base: exit {result.returncode} in {time.perf_counter() - started:.1f} s; "
        + " | ".join(tail)
    )
    if "Ran " not in result.stdout + result.stderr:
        raise BuildError("Django's test runner did not run")


def stale_because(image: str, repo: Repo) -> str | None:
    """Why an existing ``image`` differs from what this script builds (its base commit, its shim), or None."""
    probe = "git -C /testbed rev-parse HEAD; cat /opt/miniconda3/bin/activate"
    argv = ["docker", "run", "--rm", "--network", "none", image, "bash", "-c", probe]
    out = run(argv, check=False).stdout
    head, _, shim = out.partition("\n")
    if head.strip() != repo.base_commit:
        return f"/testbed is at {head.strip() or 'nothing'}, not {repo.base_commit}"
    if shim != ACTIVATE_SHIM:
        return "its conda shim is an older one"
    return None


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--image", default=DEFAULT_IMAGE, help=f"image to build (default: {DEFAULT_IMAGE})")
    parser.add_argument(
        "--row", type=Path, default=DEFAULT_ROW, help=f"task row JSON to write (default: {DEFAULT_ROW})"
    )
    parser.add_argument("--cache", type=Path, default=CACHE_DIR, help=f"where the sdist is kept (default: {CACHE_DIR})")
    parser.add_argument("--rebuild", action="store_true", help="build the image even if it exists")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if run(["docker", "info"], check=False).returncode != 0:
        log("no Docker engine answers")
        return 2
    args.cache.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="swe_gym_real_image.", dir="/var/tmp"))
    try:
        repo = build_repo(sdist(args.cache), work / "testbed")
        log(f"base commit {repo.base_commit}; gold patch {len(repo.patch)} B, test patch {len(repo.test_patch)} B")
        if image_present(args.image) and not args.rebuild:
            stale = stale_because(args.image, repo)
            if stale:
                raise BuildError(f"{args.image} is not what this script builds ({stale}): pass --rebuild")
            log(f"image {args.image} exists at the base commit; not rebuilt (--rebuild to rebuild)")
        else:
            build_image(args.image, repo, work)
        run(["docker", "tag", args.image, SWEBENCH_IMAGE])
        row = derive_row(args.image, repo)
        args.row.parent.mkdir(parents=True, exist_ok=True)
        args.row.write_text(json.dumps(row, indent=2) + "\n")
        log(f"task row written to {args.row}")
        check_runtests(args.image)
        check_official(row, args.image)
        size = run(["docker", "image", "inspect", "-f", "{{.Size}}", args.image]).stdout.strip()
        log(f"image {args.image} (also {SWEBENCH_IMAGE}): {int(size) / 1e6:.0f} MB")
    except (BuildError, subprocess.TimeoutExpired) as exc:
        log(f"ERROR: {exc}")
        return 1
    finally:
        unmount_under(work / "rootfs")
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
