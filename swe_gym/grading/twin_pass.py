"""Two passes per grading, each with the twins of a random half of the graded tests (`twins`).

A forger in the code under test can tell a canary of its own file, name or argv position from the task's
tests; it cannot tell a twin: the same file, class, name, fixtures and body, in a fresh sandbox with the same
argv, paths, environment and eval script (only the test patch's text differs, as the test files do). Each
function that runs a graded test is twinned in exactly one of the two passes, chosen at random per grading,
so neither pass is "the real one": a forger that forces results in a pass makes that pass's twins pass, and
one that is honest in a pass leaves its originals failing. A correct fix makes every twin fail (its first
inverted assertion fails), so a twin that passes while its original passes too is tampering, once the task's
gold patch shows that twin failing (`harness`, which also runs the passes concurrently). Where the original
fails, its twin may honestly pass (the inverted assertion was false): that is no sign of anything.
"""

from __future__ import annotations

import random
import re
import secrets
import shlex
from dataclasses import dataclass

from swe_gym.errors import GradingError
from swe_gym.grading import twins
from swe_gym.grading.parsers import TestStatus
from swe_gym.grading.patch import GIT_ENV, SCRATCH, patch_paths
from swe_gym.sandbox import AsyncSandbox
from swe_gym.tasks.model import SWETask

#: A twin's status that only a machinery reporting what it did not see can give.
PASSING = frozenset({TestStatus.PASSED, TestStatus.XFAIL, TestStatus.XPASS})
_DIR = f"{SCRATCH}/twin"


@dataclass(frozen=True)
class TwinSources:
    """The Python files of the task's tests before and after the test patch (read in a sandbox at base): those
    the test patch changes and those other graded tests live in (unchanged by it); and its other sections."""

    base: dict[str, str | None]
    post: dict[str, str]
    verbatim: str  # sections of the files no twin lives in (fixtures, data, deletions), as the task wrote them


def sections(patch: str) -> dict[str, str]:
    """A git diff split per file (``diff --git`` headers), keyed by the new side's path."""
    found: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", patch):
        paths = patch_paths(chunk)
        if paths:
            found[paths[-1]] = chunk if chunk.endswith("\n") else chunk + "\n"
    return found


async def read_twin_sources(sandbox: AsyncSandbox, task: SWETask) -> TwinSources:
    """Read, in a sandbox at base (before any code of a patch ran there), the test files the twins are made from.

    The test patch is applied to a private index only, so the work tree is untouched.
    """
    by_file = sections(task.test_patch)
    paths = sorted(p for p in by_file if p.endswith(".py"))
    listing = await sandbox.exec(f"export {GIT_ENV}; git ls-files -z -- '*.py'", timeout=120, max_output_bytes=64 << 20)
    if listing.exit_code != 0:
        raise GradingError(f"could not list the repository's files: {listing.output[-300:]}")
    graded = [*task.fail_to_pass, *task.pass_to_pass]
    others = twins.files_of(graded, [p for p in listing.output.split("\0") if p])
    paths = sorted({*paths, *(p for p in others if p not in by_file)})
    if not paths:
        return TwinSources({}, {}, task.test_patch)
    await sandbox.write_file(f"{_DIR}/test.patch", task.test_patch.encode("utf-8", "surrogateescape"))
    quoted = " ".join(shlex.quote(p) for p in paths)
    script = (
        f'set -e; export {GIT_ENV} GIT_INDEX_FILE="$PWD/{_DIR}/index"; T="$PWD/{_DIR}"; rm -rf "$T/post" "$T/base"; '
        'git read-tree HEAD; git apply --cached --binary "$T/test.patch"; '
        f'for f in {quoted}; do for side in post base; do rev=""; [ $side = base ] && rev=HEAD; '
        'if git cat-file -e "$rev:$f" 2>/dev/null; then mkdir -p "$T/$side/$(dirname "$f")"; '
        'git show "$rev:$f" > "$T/$side/$f"; echo "$side $f"; fi; done; done'
    )
    result = await sandbox.exec(script, timeout=120)
    if result.exit_code != 0:
        raise GradingError(f"could not read the test files the twins are made from: {result.output[-300:]}")
    found = {tuple(line.split(" ", 1)) for line in result.output.splitlines() if line.startswith(("post ", "base "))}
    post: dict[str, str] = {}
    base: dict[str, str | None] = {}
    for path in paths:
        if ("post", path) not in found:
            continue  # the test patch deletes it: its section stays as written
        post[path] = (await sandbox.read_file(f"{_DIR}/post/{path}")).decode("utf-8", "surrogateescape")
        exists = ("base", path) in found
        base[path] = (
            (await sandbox.read_file(f"{_DIR}/base/{path}")).decode("utf-8", "surrogateescape") if exists else None
        )
    verbatim = "".join(text for path, text in sorted(by_file.items()) if path not in post)
    return TwinSources(base, post, verbatim)


@dataclass(frozen=True)
class PassPlan:
    """The test patch of each pass, the graded ids whose twin runs in it, how each twin is perturbed, and the
    graded ids with no twin."""

    patches: tuple[str, str]
    twinned: tuple[frozenset[str], frozenset[str]]
    missing: dict[str, str]
    choices: dict[str, twins.Choice]
    index: twins.TwinIndex
    #: graded id -> the id its twin runs under, where the perturbation changed a parameter the id is made from
    renamed: dict[str, str]

    def def_of(self, test_id: str) -> str | None:
        return self.index.of_test.get(test_id)


def plan_passes(
    task: SWETask, sources: TwinSources, *, every: bool = False, choices: dict[str, twins.Choice] | None = None
) -> PassPlan | str:
    """Split the twinnable definitions between two passes at random (``every``: all in the first), each twin's
    perturbation drawn at random too unless `choices` fixes it, or say why no twin can be made."""
    graded = [*task.fail_to_pass, *task.pass_to_pass]
    if not sources.post:
        return "no Python file holds the task's tests"
    try:
        index = twins.index_tests(graded, sources.post)
    except (SyntaxError, ValueError, RecursionError) as exc:
        return f"the test files could not be read for twins ({type(exc).__name__})"
    if not index.defs:
        return "no graded test resolves to a function of the task's test files"
    rng = random.Random(secrets.randbits(64))
    keys = sorted(index.defs)
    first = {k for k in keys if every or rng.random() < 0.5}
    halves = (first, set(keys) - first)
    chosen = twins.choose(index, rng) if choices is None else choices
    patches = tuple(
        twins.make_patch(sources.base, twins.render(sources.post, index, half, chosen)) + sources.verbatim
        for half in halves
    )
    twinned = tuple(frozenset(t for t, k in index.of_test.items() if k in half) for half in halves)
    renamed = twins.renamed(sources.post, index, index.defs.keys(), chosen)
    return PassPlan(patches, twinned, dict(index.missing), chosen, index, renamed)  # type: ignore[arg-type]


#: Why a graded test whose twin only inverts its assertions is not covered indistinguishably.
INVERTED_ONLY = (
    "no equality assertion with a literal expected value to perturb: its twin inverts its assertions, which code "
    "reading the test's source can tell from a test"
)


def uncovered(plan: PassPlan) -> dict[str, str]:
    """The graded tests of `plan` with no twin, or with only an inverted one, and why."""
    found = dict(plan.missing)
    for test_id, key in plan.index.of_test.items():
        if not plan.index.defs[key].perturbable:
            found[test_id] = INVERTED_ONLY
    return found
