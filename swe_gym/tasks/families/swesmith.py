"""SWE-smith (``SWE-bench/SWE-smith`` and its per-language sets): synthetic bugs in real repositories.

A row, as the datasets publish it::

    instance_id  "oauthlib__oauthlib.1fd52536.combine_file__09vlzwgc"  (<owner>__<repo>.<commit8>.<bug>)
    repo         "swesmith/oauthlib__oauthlib.1fd52536"  (SWE-smith's mirror of the repo at that commit)
    patch        the diff that *creates* the bug
    FAIL_TO_PASS, PASS_TO_PASS   lists of test names
    image_name   "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536"
    problem_statement
    (older exports add created_at and base_commit, the bug commit)

One image per repository, its checkout at ``/testbed`` and a git branch per task, named by
the instance id. The branch holds a "Bug Patch" commit and, in current SWE-smith, a
"Remove F2P Tests" commit on top that deletes the test files that would reveal the bug.
The task starts on that branch (``setup_script``); for grading, swesmith's harness checks
out the bug commit (``HEAD~1``) to bring the tests back, applies the patch and reverts the
test files. Here the same files are restored from the bug commit after the agent's patch,
inside ``test_cmd``. The gold patch is the reverse of the bug patch (kept as ``bug_patch``).

Test command and log parser come from the repository's swesmith *profile*. With the
``swesmith`` package importable its profile is used (parser ``swesmith:<repo>``);
without it, Python tasks use the Python profile's defaults (``swesmith:python``), right
for most repositories but not for the few whose profiles override them, and other
languages need the package. A row's ``image``, ``test_cmd``, ``log_parser``,
``setup_script`` and ``workdir`` override the family's.
"""

from __future__ import annotations

import functools
import gc
import logging
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from swe_gym.errors import TaskError
from swe_gym.tasks.families import register_family
from swe_gym.tasks.families.swebench import _optional_text, _test_list, _text
from swe_gym.tasks.model import EvalRecipe, SWETask

log = logging.getLogger(__name__)

#: Docker Hub namespace of the published images (the swesmith package >= 0.0.9 builds under ``swebench``).
DOCKER_ORG = "jyangballin"
WORKDIR = "/testbed"
#: Subject of the commit by which swesmith's ``gather`` hides the FAIL_TO_PASS test files.
TESTS_REMOVED_SUBJECT = "Remove F2P Tests"
#: The test command of swesmith's ``PythonProfile``, used when the package is not installed (the tests
#: check it against the installed package's).
PYTHON_TEST_CMD = (
    "source /opt/miniconda3/bin/activate; conda activate testbed; "
    "pytest --disable-warnings --color=no --tb=no --verbose"
)
EVAL_TIMEOUT_S = 1800.0

_REPO_KEY = re.compile(r"^(?P<owner>[^/\s]+?)__(?P<name>[^/\s]+)\.(?P<commit>[0-9a-f]{8})$")
_DATASET = re.compile(r"swe[-_]?smith", re.IGNORECASE)
#: Row fields that override the family's choices for one task.
OVERRIDES = ("image", "workdir", "setup_script", "test_cmd", "log_parser")
TASK_FIELDS = ("instance_id", "problem_statement", "patch", "FAIL_TO_PASS", "PASS_TO_PASS")
_CONSUMED = {*TASK_FIELDS, "repo", "base_commit", *OVERRIDES}


def swesmith_image(repo_key: str, org: str = DOCKER_ORG) -> str:
    """The published image of a SWE-smith repository (``__`` is written ``_1776_`` on Docker Hub).

    >>> swesmith_image("oauthlib__oauthlib.1fd52536")
    'jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536'
    """
    return f"{org}/swesmith.x86_64.{repo_key.replace('__', '_1776_')}".lower()


def _published_image(image_name: str) -> str:
    """``image_name`` as pulled: older exports name the local retag (``swesmith.x86_64.o__r.c``)."""
    if "/" not in image_name and image_name.startswith("swesmith."):
        return f"{DOCKER_ORG}/{image_name.replace('__', '_1776_')}".lower()
    return image_name


def reverse_patch(patch: str) -> str:
    """The git diff that undoes ``patch`` (text diffs; a binary one raises ValueError).

    Headers swap sides (paths, ``index``, modes, renames, new/deleted files), hunk ranges swap,
    and ``+``/``-`` lines trade signs. ``git apply`` reads a hunk's old and new sides
    separately, so the order of its lines may stay.
    """
    out: list[str] = []
    lines = patch.splitlines(keepends=True)
    i, old_left, new_left = 0, 0, 0
    while i < len(lines):
        line = lines[i]
        if old_left > 0 or new_left > 0:
            sign = line[:1]
            if sign == "-":
                old_left -= 1
                out.append("+" + line[1:])
            elif sign == "+":
                new_left -= 1
                out.append("-" + line[1:])
            elif sign == "\\":
                out.append(line)
            else:  # context (a blank line is an empty context line)
                old_left, new_left = old_left - 1, new_left - 1
                out.append(line)
            i += 1
            continue
        hunk = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$", line.rstrip("\n"))
        if hunk:
            a, alen, b, blen, rest = hunk.groups()
            old_left = int(alen) if alen is not None else 1
            new_left = int(blen) if blen is not None else 1
            old = a if alen is None else f"{a},{alen}"
            new = b if blen is None else f"{b},{blen}"
            out.append(f"@@ -{new} +{old} @@{rest}\n")
        elif line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path, new_path = line[4:].rstrip("\n"), lines[i + 1][4:].rstrip("\n")
            out.append(f"--- {_swap_side(new_path, 'a/')}\n+++ {_swap_side(old_path, 'b/')}\n")
            i += 1
        elif line.startswith("diff --git "):
            match = re.match(r"^diff --git a/(.+) b/(.+)$", line.rstrip("\n"))
            out.append(f"diff --git a/{match.group(2)} b/{match.group(1)}\n" if match else line)
        elif line.startswith("GIT binary patch"):
            raise ValueError("cannot reverse a binary patch")
        else:
            out.append(_swap_header(line))
        i += 1
    return "".join(out)


_HEADER_SWAPS = (
    ("new file mode ", "deleted file mode "),
    ("old mode ", "new mode "),
    ("rename from ", "rename to "),
    ("copy from ", "copy to "),
)


def _swap_header(line: str) -> str:
    for one, other in _HEADER_SWAPS:
        if line.startswith(one):
            return other + line[len(one) :]
        if line.startswith(other):
            return one + line[len(other) :]
    index = re.match(r"^index ([0-9a-f]+)\.\.([0-9a-f]+)(.*)$", line, re.DOTALL)
    if index:
        return f"index {index.group(2)}..{index.group(1)}{index.group(3)}"
    return line


def _swap_side(path: str, prefix: str) -> str:
    """A ``---``/``+++`` path moved to the other side: ``a/x`` <-> ``b/x``; /dev/null stays."""
    if path.startswith(("a/", "b/")):
        return prefix + path[2:]
    return path


def swesmith_registry() -> Any:
    """The optional swesmith package's profile registry (its import errors propagate).

    Each of its profile modules registers its classes while iterating ``list(globals().items())``. If the
    cyclic garbage collector runs inside that ``list`` and finalises an object that warns from C (an unclosed
    file or socket: a ResourceWarning), the warning's registry is added to those very globals and the import
    fails with "dictionary changed size during iteration". The collector is paused for the import.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        from swesmith.profiles import registry
    finally:
        if collecting:
            gc.enable()
    return registry


@functools.cache
def _swesmith_registry() -> Any:
    """swesmith's profile registry, or None when the optional package cannot be imported."""
    try:
        return swesmith_registry()
    except ModuleNotFoundError as exc:
        if exc.name not in ("swesmith", "swesmith.profiles"):
            _broken(exc)
        else:
            log.info("swesmith package not installed: using the Python profile's defaults")
        return None
    except Exception as exc:  # one of its own imports failing
        _broken(exc)
        return None


def _broken(exc: Exception) -> None:
    hint = " (swesmith 0.0.9 needs swebench 4.x: pip install 'swebench<5')" if "swebench" in str(exc) else ""
    log.warning(
        "the swesmith package is installed but cannot be imported (%s)%s: SWE-smith rows get the Python "
        "profile's defaults, not its per-repo profiles",
        exc,
        hint,
    )


def _profile(repo_key: str) -> Any:
    registry = _swesmith_registry()
    if registry is None:
        return None
    try:
        return registry.get(repo_key)
    except KeyError:
        log.warning("the swesmith package has no profile for %s: using the Python profile's defaults", repo_key)
        return None


def _profile_test_cmd(profile: Any, instance: dict[str, Any]) -> str:
    """The profile's command, as its ``get_test_cmd`` builds it where that needs no network.

    Non-Python profiles with ``min_testing`` find test files by cloning the mirror; for them
    the whole suite runs (a superset of what swesmith runs, and the same verdict).
    """
    if not profile.min_testing or ".py" in profile.exts:
        return profile.get_test_cmd(instance)[0]
    return profile.test_cmd


@dataclass(frozen=True)
class SWESmithFamily:
    name: str = "swe-smith"
    priority: int = 10

    def matches(self, row: Mapping[str, Any], dataset: str | None) -> bool:
        if "eval" in row:  # a swe_gym record
            return False
        if dataset and _DATASET.search(dataset) and "instance_id" in row:
            return True
        image = row.get("image_name")
        repo = row.get("repo")
        return (isinstance(image, str) and "swesmith." in image) or (
            isinstance(repo, str) and repo.startswith("swesmith/")
        )

    def to_task(self, row: Mapping[str, Any]) -> SWETask:
        instance_id = _text(row, "instance_id", None)
        where = f"swe-smith row {instance_id!r}"
        repo = row.get("repo")
        if repo is not None and not isinstance(repo, str):
            raise TaskError(f"{where}: field 'repo' must be a string, got {type(repo).__name__}")
        repo_key = (repo or instance_id.rsplit(".", 1)[0]).removeprefix("swesmith/")
        f2p, p2p = _test_list(row, "FAIL_TO_PASS", instance_id), _test_list(row, "PASS_TO_PASS", instance_id)
        if not f2p:
            raise TaskError(f"{where}: field 'FAIL_TO_PASS' is empty or missing: no test would grade the task")
        image = _optional_text(row, "image", instance_id) or _optional_text(row, "image_name", instance_id)
        if image is None and not _REPO_KEY.match(repo_key):
            raise TaskError(
                f"{where}: field 'repo' ({repo!r}) is not a SWE-smith repository (swesmith/<owner>__<repo>.<commit8>)"
                " and the row names no image_name"
            )
        bug_patch = _optional_text(row, "patch", instance_id) or ""
        try:
            gold = reverse_patch(bug_patch)
        except ValueError as exc:
            log.warning("%s: no gold patch (%s)", where, exc)
            gold = ""
        test_cmd, parser = self._tests(row, where, repo_key, {**row, "FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p})
        return SWETask(
            instance_id=instance_id,
            family=self.name,
            repo=repo or f"swesmith/{repo_key}",
            problem_statement=_text(row, "problem_statement", instance_id),
            base_commit=_optional_text(row, "base_commit", instance_id),
            image=_published_image(image) if image else swesmith_image(repo_key),
            workdir=_optional_text(row, "workdir", instance_id) or WORKDIR,
            setup_script=_optional_text(row, "setup_script", instance_id) or checkout_script(instance_id),
            # The bug is a commit on top of the fixed code: any history would hand the agent the fix.
            hide_history="all",
            eval=EvalRecipe(
                toolkit="swe_gym",
                test_cmd=restore_tests_script(f2p + p2p) + "\n" + test_cmd,
                log_parser=parser,
                timeout_s=EVAL_TIMEOUT_S,
            ),
            FAIL_TO_PASS=f2p,
            PASS_TO_PASS=p2p,
            patch=gold,
            metadata={**{k: v for k, v in row.items() if k not in _CONSUMED}, "bug_patch": bug_patch},
        )

    @staticmethod
    def _tests(row: Mapping[str, Any], where: str, repo_key: str, instance: dict[str, Any]) -> tuple[str, str]:
        """(test command, log parser name): the row's, else the profile's, else the Python defaults."""
        test_cmd = _optional_text(row, "test_cmd", instance["instance_id"])
        parser = _optional_text(row, "log_parser", instance["instance_id"])
        if test_cmd and parser:
            return test_cmd, parser
        profile = _profile(repo_key)
        if profile is not None:
            return test_cmd or _profile_test_cmd(profile, instance), parser or f"swesmith:{repo_key}"
        tests = instance["FAIL_TO_PASS"] + instance["PASS_TO_PASS"]
        if not any(".py" in t.split("::", 1)[0] for t in tests):
            raise TaskError(
                f"{where}: not a Python task, and its test command and log parser come from the swesmith "
                "package's profile for its repository: pip install swesmith swebench ghapi python-dotenv unidiff "
                "(or give the row test_cmd and log_parser)"
            )
        return test_cmd or PYTHON_TEST_CMD, parser or "swesmith:python"


def checkout_script(instance_id: str) -> str:
    """The task's starting state: its branch, fetched first when the image predates it (needs network)."""
    branch = shlex.quote(instance_id)
    return f"git checkout -q {branch} 2>/dev/null || {{ git fetch -q origin && git checkout -q {branch}; }}"


def restore_tests_script(tests: list[str]) -> str:
    """Bash that brings back, from the bug commit, the tests the task branch hides and the test files named.

    swesmith's harness checks out ``HEAD~1`` when the branch ends in the test-removal commit,
    and reverts the test files of FAIL_TO_PASS and PASS_TO_PASS (Python: the part before ``::``).
    """
    files = sorted({t.split("::", 1)[0] for t in tests if ".py" in t.split("::", 1)[0]})
    lines = [
        "swesmith_bug=HEAD",
        f'if [ "$(git log -1 --format=%s)" = {shlex.quote(TESTS_REMOVED_SUBJECT)} ]; then swesmith_bug=HEAD~1; fi',
        'git diff -z --name-only --no-renames --diff-filter=AM HEAD "$swesmith_bug" '
        '| xargs -0 -r git checkout -q "$swesmith_bug" --',
    ]
    if files:
        lines += [
            f"for f in {' '.join(shlex.quote(f) for f in files)}; do",
            '  if git cat-file -e "$swesmith_bug:$f" 2>/dev/null; then git checkout -q "$swesmith_bug" -- "$f"; fi',
            "done",
        ]
    return "\n".join(lines)


register_family(SWESmithFamily())
