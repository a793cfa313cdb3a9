"""Grading at the speed of the tests: `grade()` against a bare run of the same tests, and the terminal step's latency.

Runs on the real-size Django image of ``real_image.py`` (django__django-11099: Django 3.0's tree, 6,000 files, its
own test runner), not a toy repository, so what the grader costs is measured against tests of a real size.

What is compared
----------------
(a) Grade vs bare, provider docker, wall time (``time.perf_counter``) from before the container starts to after it
is removed, in one run, side by side, for each of:

* ``grade(gold, twins)`` and ``grade(gold, no twins)``: ``grade(task, task.patch, provider="docker",
  twins=...)``: everything the grader does (a fresh sandbox, the patch's paths checked, the tree recorded, the
  apply ladder, the restore set, the official swebench 4.x eval script with sealed markers, the log parsed by
  swebench's django parser and judged by its rule), with and without the integrity checks' second "twin" pass
  (run concurrently in a second fresh sandbox). It must resolve the task.
* ``grade(wrong, ...)`` and ``grade(empty, ...)``: the same for a patch that changes the code and fixes nothing (a
  new module in the package the gold patch edits: `WRONG_PATCH`; it runs every pass of the grader) and for the
  empty patch (nothing to twin: one pass), neither of which may resolve it.
  Before `grade` takes ``twins`` (checked with ``inspect.signature``) each patch is graded once, as grade() does
  today (``grade(gold, no twins option)``), and the run says so.
* ``bare``: the plain docker SDK and nothing else: ``containers.run(IMG, "sleep infinity", network_mode="none")``,
  the gold and test patches copied in (one ``put_archive``; the tar is built before timing), ``git apply`` of both,
  the swebench spec's test command (``./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1``) on the
  test patch's modules (swebench's ``get_test_directives``) after ``source /opt/miniconda3/bin/activate && conda
  activate testbed`` and the spec's locale exports (the image has ``en_US.UTF-8`` generated, so the exports cost
  nothing), one ``exec_run`` with the environment variables grade()'s sandbox commands get
  (``SandboxSpec().command_env()``: ``PYTHONDONTWRITEBYTECODE=1`` and the like, so Python behaves alike in both),
  ``container.remove(force=True)``. This is the speed of the tests: the target.
* ``bare + official script`` (shown, not the target): the same container, but the official eval script instead
  of the bare test command, every line of it run. ``bare + official`` - ``bare`` is what the script's steps around
  the tests cost when all of them run (``locale-gen``, ``git status/show/diff``, ``python -m pip install -e .``);
  grade() runs that script too, but may skip or speed up some of it (``GradeReport.install`` says what became of
  the reinstall), so it can be faster than ``bare + official``. One more, untimed, run of the script with a
  timestamp on every ``set -x`` trace line shows which of its commands take the time.

Ratios printed: ``grade/bare`` of the p50s, resolved (gold; target <= 1.6, a resolved patch runs every pass to the
end) and unresolved (wrong and empty; target <= 1.5), the targets judged for grade()'s default (twins when it has
them), and what the twin pass costs. grade's phases and plans are printed too when `GradeReport` exposes them
(``timings_s`` or any other dict of seconds named for phases or timings; ``install``, ``twins``).

(a, bundled) The same on the bundled tasks (``load_tasks("bundled")``), provider docker with the test image
(``swe-gym-test:bookworm``): grade() of the gold, the wrong and the empty patch, with and without twins, against
``bare``:
per task a plain container of the image, the task's repository (the tar grade()'s sandbox gets) and both patches
copied in, ``git apply`` of both, ``task.eval.test_cmd``, removed. One sample is every task in turn (a few rounds:
``--bundled-rounds``, 2 by default); the bare log, read by the task's parser, must show every test passing.

(b) The terminal step: an episode through ``gymnasium.make("swe_gym/SWE-v0", tasks=[task], provider="docker")``:
reset, one step that writes the gold patch with a heredoc and ``git apply``-s it, one ``sleep 1`` step (time for an
overlapped grader to start), then ``submit``, whose wall time is measured (patch extraction, the agent's sandbox
closed, grading). ``before``: ``prestart_grading=False`` (the grading sandbox starts at the submit); ``after``:
``prestart_grading=True`` (it starts at reset, while the agent acts). When `EnvOptions` has no
``prestart_grading`` yet, only ``before`` runs (with the env's defaults) and the run says so.

Why it is fair
--------------
* Same machine, process, image, patches and test modules; both sides start and remove a container of the same
  image with the network off, and the time of both includes that start and removal.
* Rounds interleave the methods, the order rotating each round, so noise hits all alike (R=5 by default), after an
  untimed warm-up of each (docker's caches, the grader's repository listing, the env's prepared image).
* Verdicts are checked, a mismatch fails the run: ``grade()`` must resolve the task with the gold patch and not
  with the empty one (and never be masked), the bare log (parsed by swebench's django parser) must show every
  FAIL_TO_PASS and PASS_TO_PASS test passing, the official script's log must resolve by swebench's rule, and every
  submit in (b) must end resolved with reward 1.0.
* bare does none of the grader's integrity work and none of the official script's set-up steps, so grade - bare
  is all the grader adds on top of the tests (the most a faster grader could save), not a like-for-like overhead.

Run: ``python benchmarks/real_image.py`` once (builds the image and the task row), then
``python benchmarks/grading_speed.py [--row PATH] [--rounds 5] [--parts a bundled b] [--json OUT]`` (on 2 cores,
``--rounds 2``: about 19 minutes, half of it the bundled part; ``--parts a`` alone: about 3).
Containers the benchmark starts carry the ``swe_gym.benchmark`` label and are removed in ``finally``; each part
ends with a leak check of ``swe_gym.managed=true`` containers and its own.
"""

from __future__ import annotations

import argparse
import inspect
import io
import itertools
import re
import sys
import tarfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_common import (
    BENCH_LABEL,
    BenchmarkError,
    Method,
    Summary,
    image_present,
    interleave,
    leak_check,
    leaked,
    machine_info,
    print_machine,
    print_table,
    write_json,
)
from real_image import DEFAULT_ROW

from swe_gym.grading import GradeReport, get_parser, grade, swebench_toolkit
from swe_gym.sandbox import SandboxSpec
from swe_gym.tasks import SWETask

#: grade/bare targets (p50s) for the default grade(): a resolved patch runs every pass to the end, an unresolved one
#: can stop at the first pass that shows it.
TARGET_RESOLVED = 1.6
TARGET_UNRESOLVED = 1.5
BUNDLED_IMAGE = "swe-gym-test:bookworm"
PARTS = ("a", "bundled", "b")
ENV_ID = "swe_gym/SWE-v0"
LOCALE_EXPORTS = "export LANG=en_US.UTF-8 LANGUAGE=en_US:en LC_ALL=en_US.UTF-8"
ACTIVATE = "source /opt/miniconda3/bin/activate && conda activate testbed"


def load_task(path: Path, image: str | None) -> SWETask:
    import json

    if not path.is_file():
        raise BenchmarkError(f"no task row at {path}: run `python benchmarks/real_image.py` first")
    row = json.loads(path.read_text())
    if image:
        row["image"] = image
    return SWETask.model_validate(row)


# -- (a) grade vs bare ---------------------------------------------------------------------------------------------


def bare_test_command(task: SWETask) -> str:
    """The swebench spec's test command on the test patch's modules, as the official script runs it."""
    from swebench.harness.constants import MAP_REPO_VERSION_TO_SPECS
    from swebench.harness.test_spec.python import get_test_directives

    spec = MAP_REPO_VERSION_TO_SPECS[task.repo][str(task.metadata["version"])]
    directives = get_test_directives({"repo": task.repo, "test_patch": task.test_patch})
    return f"{spec['test_cmd']} {' '.join(directives)}"


def patch_tar(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode("utf-8", "surrogateescape")
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@dataclass
class Bare:
    """A container of the task's image driven with the plain docker SDK: start, copy, one exec, remove."""

    task: SWETask
    image: str
    token: str
    client: Any = None

    def __post_init__(self) -> None:
        import docker

        self.client = docker.from_env()
        self.last_phases: dict[str, float] = {}
        self.env = (
            SandboxSpec().command_env()
        )  # the variables grade()'s sandbox commands get (PYTHONDONTWRITEBYTECODE...)
        self.tests = bare_test_command(self.task)
        self.official_script = swebench_toolkit.eval_script(self.task)
        self.archive = patch_tar(
            {"test.patch": self.task.test_patch, "gold.patch": self.task.patch, "eval.sh": self.official_script}
        )

    def script(self, official_script: bool) -> str:
        if official_script:  # the official script applies the test patch itself
            return "cd /testbed && git apply /tmp/gold.patch && bash /tmp/eval.sh 2>&1"
        return (
            f"cd /testbed && git apply /tmp/test.patch && git apply /tmp/gold.patch || exit 97\n"
            f"{ACTIVATE}\n{LOCALE_EXPORTS}\n{self.tests} 2>&1\n"
        )

    def run(self, script: str) -> tuple[float, str, int]:
        """(ms from before the start to after the removal, output, exit code)."""
        started = time.perf_counter()
        container = self.client.containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels={BENCH_LABEL: self.token},
            working_dir="/testbed",
        )
        up = time.perf_counter()
        try:
            container.put_archive("/tmp", self.archive)
            result = container.exec_run(["bash", "-c", script], workdir="/testbed", environment=self.env)
        finally:
            ran = time.perf_counter()
            container.remove(force=True)
        ended = time.perf_counter()
        self.last_phases = {"start": up - started, "copy+exec": ran - up, "remove": ended - ran}
        elapsed_ms = (ended - started) * 1000.0
        return elapsed_ms, result.output.decode("utf-8", "replace"), result.exit_code

    def profile_official(self) -> list[tuple[float, str]]:
        """One untimed run of the official script, each trace line timestamped: (seconds, command), slowest first."""
        lines = self.official_script.split("\n")
        stamped = "\n".join([*lines[:2], 'PS4="+ \\$(date +%s.%N) "', *lines[2:]])
        archive, self.archive = (
            self.archive,
            patch_tar({"test.patch": self.task.test_patch, "gold.patch": self.task.patch, "eval.sh": stamped}),
        )
        try:
            _, output, _ = self.run(self.script(official_script=True))
        finally:
            self.archive = archive
        traces = [m.groups() for m in re.finditer(r"^\++ (\d+\.\d+) (.*)$", output, re.MULTILINE)]
        steps = [(float(b[0]) - float(a[0]), a[1][:100]) for a, b in itertools.pairwise(traces)]
        return sorted(steps, reverse=True)


def phase_times(report: GradeReport) -> dict[str, float]:
    """The phase timings the report exposes (seconds): dicts of numbers named like phases/timings, ``*_s`` floats."""
    found: dict[str, float] = {}
    for name in type(report).model_fields:
        value = getattr(report, name, None)
        if isinstance(value, dict) and ("phase" in name or "timing" in name):
            found.update({str(k): float(v) for k, v in value.items() if isinstance(v, int | float)})
        elif name.endswith("_s") and name != "duration_s" and isinstance(value, int | float):
            found[name] = float(value)
    return found


def p50_phases(samples: Sequence[dict[str, float]]) -> str:
    names = list(dict.fromkeys(k for p in samples for k in p))
    return ", ".join(f"{n} {Summary.of([p[n] for p in samples if n in p]).p50 * 1000:.0f} ms" for n in names)


def twins_supported() -> bool:
    """Whether this grader's `grade` takes ``twins`` (the second, concurrent "twin" pass of its integrity checks)."""
    return "twins" in inspect.signature(grade).parameters


def grade_variants() -> list[tuple[str, dict[str, Any]]]:
    """(label, grade kwargs): with and without the twin pass, or, before grade() has ``twins``, one plain grade."""
    if twins_supported():
        return [("twins", {"twins": True}), ("no twins", {"twins": False})]
    return [("no twins option", {})]


@dataclass
class GradeLog:
    """What the timed grade() calls reported: verdicts checked against the expected one, phases and plans kept."""

    mismatches: list[str] = field(default_factory=list)
    phases: dict[str, list[dict[str, float]]] = field(default_factory=dict)
    plans: dict[str, set[str]] = field(default_factory=dict)

    def method(
        self, name: str, jobs: Sequence[tuple[SWETask, str]], *, resolved: bool, spec: SandboxSpec | None, **kw: Any
    ) -> Method:
        """A Method that grades every (task, patch) of ``jobs`` in turn, provider docker."""

        def call() -> None:
            for task, patch in jobs:
                report = grade(task, patch, provider="docker", spec=spec, **kw)
                self.record(name, task, report, resolved)

        return Method(name, call)

    def record(self, name: str, task: SWETask, report: GradeReport, resolved: bool) -> None:
        if report.masked:
            raise BenchmarkError(f"{name} on {task.instance_id} was masked: {report.masked_reason}")
        if report.resolved != resolved:
            self.mismatches.append(f"{name} on {task.instance_id}: expected resolved={resolved}: {report.summary()}")
        self.phases.setdefault(name, []).append({"duration_s": report.duration_s, **phase_times(report)})
        plan = [f"{n}: {v}" for n in ("install", "eval_plan", "twins") if (v := getattr(report, n, None))]
        self.plans.setdefault(name, set()).add("; ".join(plan) or "(not reported)")


#: A patch that changes the code and fixes nothing (a new module inside the package: no build input, nothing the
#: grader restores): an honest unresolved patch, which, unlike the empty one, runs every pass of the grader.
WRONG_PATCH = """diff --git a/{package}/_swe_gym_bench_note.py b/{package}/_swe_gym_bench_note.py
new file mode 100644
--- /dev/null
+++ b/{package}/_swe_gym_bench_note.py
@@ -0,0 +1 @@
+NOTE = "a change that fixes nothing"
"""


def wrong_patch(task: SWETask) -> str:
    """`WRONG_PATCH` in the package the gold patch edits (its first path's top directory)."""
    first = next(line for line in task.patch.splitlines() if line.startswith("+++ b/"))
    return WRONG_PATCH.format(package=first[len("+++ b/") :].split("/", 1)[0])


#: (patch kind, the verdict it must get, the grade/bare target of that verdict)
KINDS = (("gold", "resolved", TARGET_RESOLVED), ("wrong", "unresolved", TARGET_UNRESOLVED),
         ("empty", "unresolved", TARGET_UNRESOLVED))  # fmt: skip


def grade_methods(
    log: GradeLog, jobs: dict[str, Sequence[tuple[SWETask, str]]], spec: SandboxSpec | None
) -> dict[tuple[str, str], Method]:
    """{(patch kind, variant): Method}: the gold patch (must resolve), a wrong and the empty one (must not)."""
    methods = {}
    for variant, kw in grade_variants():
        for kind, verdict, _ in KINDS:
            if kind in jobs:
                name = f"grade({kind}, {variant})"
                methods[kind, variant] = log.method(name, jobs[kind], resolved=verdict == "resolved", spec=spec, **kw)
    return methods


def print_ratios(methods: dict[tuple[str, str], Method], bare: Method) -> dict[str, float]:
    """grade/bare of the p50s for the resolved (gold) and unresolved (empty) patch; targets hold for the default."""
    b = Summary.of(bare.samples_ms).p50
    ratios: dict[str, float] = {}
    default = grade_variants()[0][0]  # what grade() does when not told: twins when it has them
    if not twins_supported():
        print("  grade() takes no `twins` yet: each patch is graded once, as grade() grades it today")
    for kind, verdict, target in KINDS:
        if (kind, default) not in methods:
            continue
        for variant in dict(grade_variants()):
            method = methods[kind, variant]
            g = Summary.of(method.samples_ms).p50
            ratio = ratios[f"{verdict} ({kind}), {variant}"] = g / b
            judged = f" (target <= {target}): {'MET' if ratio <= target else 'MISSED'}" if variant == default else ""
            print(f"  {verdict:<10} {method.name:<24} p50 {g:7.0f} ms / bare {b:.0f} ms = {ratio:.2f}{judged}")
        if twins_supported():
            with_twins, without = (Summary.of(methods[kind, v].samples_ms).p50 for v in ("twins", "no twins"))
            print(f"  {'':<10} the twin pass costs {with_twins - without:+.0f} ms ({with_twins / without:.2f}x)")
    return ratios


def print_grade_details(log: GradeLog, warmup: int) -> dict[str, list[dict[str, float]]]:
    timed = {name: phases[warmup:] for name, phases in log.phases.items()}
    for name, phases in timed.items():
        if phases:
            print(f"  {name} phases (p50, from GradeReport): {p50_phases(phases)}")
    if any(set().union(*p) == {"duration_s"} for p in timed.values() if p):
        print("  (GradeReport exposes no phase timings yet: only duration_s)")
    for name, plans in log.plans.items():
        print(f"  {name} plan (GradeReport): {' | '.join(sorted(plans))}")
    return timed


@dataclass
class PartA:
    grades: dict[tuple[str, str], Method]
    bare: Method
    official: Method
    log: GradeLog
    bare_mismatches: list[str] = field(default_factory=list)
    bare_phases: list[dict[str, float]] = field(default_factory=list)
    profile: list[tuple[float, str]] = field(default_factory=list)

    @property
    def methods(self) -> list[Method]:
        return [*self.grades.values(), self.bare, self.official]


def part_a_methods(task: SWETask, bare: Bare) -> PartA:
    part: PartA

    def run_bare() -> None:
        _, output, code = bare.run(bare.script(official_script=False))
        part.bare_phases.append(bare.last_phases)
        status = swebench_toolkit.parse_section(task, output)
        failing = [t for t in [*task.fail_to_pass, *task.pass_to_pass] if status.get(t) != "PASSED"]
        if code == 97 or failing:
            part.bare_mismatches.append(f"bare: exit {code}, not passing: {failing[:5]}; log tail: {output[-500:]!r}")

    def run_official() -> None:
        _, output, _ = bare.run(bare.script(official_script=True))
        resolved, _, _ = swebench_toolkit.judge(task, swebench_toolkit.parse_log(task, output))
        if not resolved:
            part.bare_mismatches.append(f"bare + official script did not resolve the gold patch: {output[-500:]!r}")

    log = GradeLog()
    jobs = {"gold": [(task, task.patch)], "wrong": [(task, wrong_patch(task))], "empty": [(task, "")]}
    grades = grade_methods(log, jobs, None)
    part = PartA(grades, Method("bare", run_bare), Method("bare + official script", run_official), log)
    return part


def run_part_a(task: SWETask, image: str, rounds: int, warmup: int, token: str) -> tuple[dict[str, Any], bool]:
    print(f"\n== (a) grade() vs bare, {image}: {rounds} rounds after {warmup} warm-up(s), container start to removal")
    bare = Bare(task, image, token)
    print(f"bare test command: {ACTIVATE}; {LOCALE_EXPORTS}; {bare.tests}")
    part = part_a_methods(task, bare)
    error: BenchmarkError | None = None
    try:
        part.profile = bare.profile_official()
        interleave(part.methods, rounds, warmup=warmup)
    except BenchmarkError as exc:
        error = exc
        print(f"benchmark failed: {exc}", file=sys.stderr)
    finally:
        leftover = leak_check(token)
    ratios: dict[str, float] = {}
    if all(m.samples_ms for m in part.methods):
        print_table("wall time, container start to removal", part.methods, part.bare)
        ratios = print_ratios(part.grades, part.bare)
        b, o = Summary.of(part.bare.samples_ms).p50, Summary.of(part.official.samples_ms).p50
        print(f"  the official script's extra steps, all run: {o - b:+.0f} ms over bare")
    timed_phases = print_grade_details(part.log, warmup)
    if part.bare_phases[warmup:]:
        print(f"  bare phases (p50): {p50_phases(part.bare_phases[warmup:])}")
    if part.profile:
        total = sum(s for s, _ in part.profile)
        print(f"  official eval script, one untimed traced run ({total * 1000:.0f} ms of traced commands), slowest:")
        for seconds, command in part.profile[:6]:
            print(f"    {seconds * 1000:7.0f} ms  {command}")
    mismatches = [*part.log.mismatches, *part.bare_mismatches]
    same = not mismatches and error is None
    print(
        "  verdicts agree (grade resolved gold, not wrong or empty; bare all FAIL_TO_PASS/PASS_TO_PASS passed): "
        + ("yes" if same else "NO")
    )
    for line in mismatches[:10]:
        print(f"    {line}")
    result = {
        "twins_supported": twins_supported(),
        "samples_ms": {m.name: m.samples_ms for m in part.methods},
        "p50_ms": {m.name: Summary.of(m.samples_ms).p50 for m in part.methods},
        "grade_over_bare": ratios,
        "targets": {"resolved": TARGET_RESOLVED, "unresolved": TARGET_UNRESOLVED},
        "grade_phases_s": timed_phases,
        "grade_plans": {name: sorted(plans) for name, plans in part.log.plans.items()},
        "bare_phases_s": part.bare_phases[warmup:],
        "official_script_profile_s": part.profile[:20],
        "bare_test_command": bare.tests,
        "verdicts_agree": same,
        "mismatches": mismatches,
        "error": str(error) if error else None,
        "leftover": leftover,
    }
    return result, same and not leaked(leftover)


# -- (a, bundled) grade vs bare on the bundled tasks -----------------------------------------------------------------


@dataclass
class BundledBare:
    """Each bundled task's own test command in a plain container of the test image, nothing else.

    Per task: ``containers.run(IMG, "sleep infinity", network_mode="none")``, the repository (the tar grade()'s
    sandbox gets, with its base commit) and both patches copied in, ``git apply`` of the test and gold patches,
    ``task.eval.test_cmd`` in one ``exec_run`` with grade()'s command environment, ``container.remove(force=True)``.
    """

    tasks: Sequence[SWETask]
    image: str
    token: str
    mismatches: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        import docker

        from swe_gym.tasks.bundled import repo_archive

        self.client = docker.from_env()
        self.env = SandboxSpec().command_env()
        self.archives = {  # built before timing, as grade()'s repository tar is cached per process
            t.instance_id: (repo_archive(t)[0], patch_tar({"test.patch": t.test_patch, "gold.patch": t.patch}))
            for t in self.tasks
        }

    def run_one(self, task: SWETask) -> None:
        repo, patches = self.archives[task.instance_id]
        script = (
            f"cd {task.workdir} && git apply /tmp/test.patch && git apply /tmp/gold.patch || exit 97\n"
            f"{task.eval.test_cmd} 2>&1\n"
        )
        container = self.client.containers.run(
            self.image,
            ["sleep", "infinity"],
            detach=True,
            network_mode="none",
            labels={BENCH_LABEL: self.token},
            working_dir=task.workdir,
        )
        try:
            container.put_archive(task.workdir, repo)
            container.put_archive("/tmp", patches)
            result = container.exec_run(["bash", "-c", script], workdir=task.workdir, environment=self.env)
        finally:
            container.remove(force=True)
        output = result.output.decode("utf-8", "replace")
        status = get_parser(task.eval.log_parser or "pytest")(output)
        failing = [t for t in [*task.fail_to_pass, *task.pass_to_pass] if not (t in status and status[t].ok)]
        if result.exit_code == 97 or failing:
            self.mismatches.append(
                f"bare {task.instance_id}: exit {result.exit_code}, not passing: {failing[:5]}; {output[-300:]!r}"
            )

    def run_all(self) -> None:
        for task in self.tasks:
            self.run_one(task)


def run_part_bundled(rounds: int, warmup: int, token: str, image: str) -> tuple[dict[str, Any], bool]:
    from swe_gym.tasks import load_tasks

    tasks = [t for t in load_tasks("bundled") if t.eval.test_cmd]
    print(
        f"\n== (a, bundled) grade() vs bare on the {len(tasks)} bundled tasks, provider docker, {image}: one sample = "
        f"every task in turn; {rounds} rounds after {warmup} warm-up(s)"
    )
    if not image_present(image):
        print(f"  image {image!r} is not on this Docker engine: run .ci/build_test_image.sh", file=sys.stderr)
        return {"error": f"image {image} missing"}, False
    bare = BundledBare(tasks, image, token)
    log = GradeLog()
    spec = SandboxSpec(image=image)
    jobs = {"gold": [(t, t.patch) for t in tasks], "wrong": [(t, wrong_patch(t)) for t in tasks]}
    grades = grade_methods(log, {**jobs, "empty": [(t, "") for t in tasks]}, spec)
    bare_method = Method("bare", bare.run_all)
    methods = [*grades.values(), bare_method]
    error: BenchmarkError | None = None
    try:
        interleave(methods, rounds, warmup=warmup)
    except BenchmarkError as exc:
        error = exc
        print(f"benchmark failed: {exc}", file=sys.stderr)
    finally:
        leftover = leak_check(token)
    ratios: dict[str, float] = {}
    if all(m.samples_ms for m in methods):
        print_table(f"wall time for all {len(tasks)} tasks, container start to removal", methods, bare_method)
        ratios = print_ratios(grades, bare_method)
    per_task = warmup * len(tasks)
    for name, phases in log.phases.items():
        if phases[per_task:]:
            print(f"  {name} phases per task (p50, from GradeReport): {p50_phases(phases[per_task:])}")
    mismatches = [*log.mismatches, *bare.mismatches]
    same = not mismatches and error is None
    print(f"  verdicts agree (gold resolved, wrong and empty not; bare all tests passed): {'yes' if same else 'NO'}")
    for line in mismatches[:10]:
        print(f"    {line}")
    result = {
        "twins_supported": twins_supported(),
        "tasks": [t.instance_id for t in tasks],
        "samples_ms": {m.name: m.samples_ms for m in methods},
        "p50_ms": {m.name: Summary.of(m.samples_ms).p50 for m in methods},
        "grade_over_bare": ratios,
        "targets": {"resolved": TARGET_RESOLVED, "unresolved": TARGET_UNRESOLVED},
        "verdicts_agree": same,
        "mismatches": mismatches,
        "error": str(error) if error else None,
        "leftover": leftover,
    }
    return result, same and not leaked(leftover)


# -- (b) the terminal step -----------------------------------------------------------------------------------------


def apply_action(patch: str) -> str:
    delimiter = "SWE_GYM_BENCH_PATCH_EOF"
    if delimiter in patch:
        raise BenchmarkError("the gold patch holds the heredoc delimiter")
    return f"cat > /tmp/fix.patch <<'{delimiter}'\n{patch}{delimiter}\ngit apply /tmp/fix.patch && rm /tmp/fix.patch"


@dataclass
class EpisodeRunner:
    """One env; ``start`` (untimed) resets it and takes the steps before the submit, ``submit`` is timed."""

    name: str
    env: Any
    task: SWETask
    mismatches: list[str]
    grade_s: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)

    def start(self) -> None:
        self.env.reset(options={"task_id": self.task.instance_id})
        _, _, _, _, info = self.env.step(apply_action(self.task.patch))
        if info.get("exit_code") != 0:
            raise BenchmarkError(f"{self.name}: applying the gold patch failed (exit {info.get('exit_code')})")
        self.env.step("sleep 1")

    def submit(self) -> None:
        _, reward, terminated, _, info = self.env.step("submit")
        if info.get("masked"):
            raise BenchmarkError(f"{self.name}: the episode was masked: {info.get('masked_reason')}")
        if not (terminated and info.get("resolved") and reward == 1.0):
            self.mismatches.append(f"{self.name}: not resolved (reward {reward}, resolved {info.get('resolved')})")
        self.grade_s.append(float(info.get("grade_s") or 0.0))
        timings = (info.get("report") or {}).get("timings_s") or {}
        self.phases.append({str(k): float(v) for k, v in timings.items() if isinstance(v, int | float)})


def prestart_supported() -> bool:
    from swe_gym.envs.episode import EnvOptions

    return "prestart_grading" in EnvOptions.model_fields


def run_part_b(task: SWETask, rounds: int, warmup: int, token: str) -> tuple[dict[str, Any], bool]:
    import gymnasium as gym

    import swe_gym  # noqa: F401  (registers the env id)

    supported = prestart_supported()
    print(
        f"\n== (b) terminal-step latency, {ENV_ID}, provider docker: {rounds} episodes each after {warmup} warm-up(s)"
    )
    if not supported:
        print("  EnvOptions has no prestart_grading yet: only the 'before' half runs (the env's defaults)")
    configs: list[tuple[str, dict[str, Any]]] = [("before (prestart_grading=False)", {"prestart_grading": False})]
    if supported:
        configs.append(("after (prestart_grading=True)", {"prestart_grading": True}))
    else:
        configs = [("before (no prestart_grading option)", {})]
    mismatches: list[str] = []
    runners: list[EpisodeRunner] = []
    methods: list[Method] = []
    error: Exception | None = None
    try:
        for name, options in configs:
            env = gym.make(ENV_ID, tasks=[task], provider="docker", disable_env_checker=True, **options)
            runner = EpisodeRunner(name, env, task, mismatches)
            runners.append(runner)
            methods.append(Method(name, runner.submit, before=runner.start))  # the submit alone is timed
        interleave(methods, rounds, warmup=warmup)
    except (BenchmarkError, TypeError, ValueError) as exc:
        error = exc
        print(f"benchmark failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        for runner in runners:
            runner.env.close()
        leftover = leak_check(token)
    ratio = float("nan")
    if methods and all(m.samples_ms for m in methods):
        print_table("submit step wall time (patch read, agent sandbox closed, graded)", methods, methods[0])
        for runner in runners:
            phases = [p for p in runner.phases[warmup:] if p]
            shown = f"; grade phases (p50): {p50_phases(phases)}" if phases else ""
            print(
                f"  {runner.name}: info['grade_s'] p50 {Summary.of(runner.grade_s[warmup:]).p50 * 1000:.0f} ms{shown}"
            )
        if len(methods) == 2:
            before, after = (Summary.of(m.samples_ms).p50 for m in methods)
            ratio = after / before
            print(f"  submit p50 before {before:.0f} ms, after {after:.0f} ms: after/before = {ratio:.2f}")
    same = not mismatches and error is None
    print(f"  verdicts agree (every submit resolved, reward 1.0): {'yes' if same else 'NO'}")
    for line in mismatches[:10]:
        print(f"    {line}")
    result = {
        "prestart_grading_supported": supported,
        "samples_ms": {m.name: m.samples_ms for m in methods},
        "p50_ms": {m.name: Summary.of(m.samples_ms).p50 for m in methods},
        "grade_s": {r.name: r.grade_s for r in runners},
        "grade_phases_s": {r.name: r.phases for r in runners},
        "after_over_before": ratio,
        "verdicts_agree": same,
        "mismatches": mismatches,
        "error": f"{type(error).__name__}: {error}" if error else None,
        "leftover": leftover,
    }
    return result, same and not leaked(leftover)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n", 1)[0])
    parser.add_argument("--row", type=Path, default=DEFAULT_ROW, help=f"task row from real_image.py ({DEFAULT_ROW})")
    parser.add_argument("--image", help="image to use instead of the row's")
    parser.add_argument("--rounds", type=int, default=5, help="timed rounds per method (default: 5)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed warm-up calls per method (default: 1)")
    parser.add_argument(
        "--bundled-rounds", type=int, default=2, help="timed rounds of the bundled part, at most --rounds (default: 2)"
    )
    parser.add_argument(
        "--bundled-image", default=BUNDLED_IMAGE, help=f"image for the bundled tasks (default: {BUNDLED_IMAGE})"
    )
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="parts to run (default: all)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the raw numbers to this JSON file")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0 or args.bundled_rounds < 1:
        parser.error("--rounds and --bundled-rounds must be at least 1 and --warmup at least 0")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    task: SWETask | None = None
    if {"a", "b"} & set(args.parts):
        try:
            task = load_task(args.row, args.image)
        except BenchmarkError as exc:
            print(exc, file=sys.stderr)
            return 2
        if not image_present(task.image or ""):
            print(
                f"image {task.image!r} is not on this Docker engine: run `python benchmarks/real_image.py`",
                file=sys.stderr,
            )
            return 2
    info = machine_info(task.image if task else args.bundled_image)
    print_machine(info)
    twins = "takes" if twins_supported() else "does not take (yet)"
    print(f"grade() {twins} `twins`: {', '.join(name for name, _ in grade_variants())}")
    if task:
        print(f"task {task.instance_id}: FAIL_TO_PASS {len(task.fail_to_pass)}, PASS_TO_PASS {len(task.pass_to_pass)}")
    token = uuid.uuid4().hex[:12]
    payload: dict[str, Any] = {"machine": info, "task": task.instance_id if task else None, "rounds": args.rounds}
    ok = True
    if "a" in args.parts and task:
        payload["grade_vs_bare"], good = run_part_a(task, task.image or "", args.rounds, args.warmup, token)
        ok = ok and good
    if "bundled" in args.parts:
        rounds = min(args.rounds, args.bundled_rounds)
        payload["bundled_grade_vs_bare"], good = run_part_bundled(rounds, args.warmup, token, args.bundled_image)
        ok = ok and good
    if "b" in args.parts and task:
        payload["terminal_step"], good = run_part_b(task, args.rounds, args.warmup, token)
        ok = ok and good
    write_json(args.json, payload)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
