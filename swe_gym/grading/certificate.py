"""The fidelity certificate: does every task grade as it should, every time?

`validate_async` (`validate`, its blocking form) grades each task's gold patch and the empty patch ``k`` times each,
in fresh sandboxes (all ``2k`` runs of every task under one bound of ``workers`` at a time), and records per task:
how often gold resolved and the empty patch did not, what was masked and why, the tests whose status varied between
runs of the *same* patch (flaky), the image's digest (providers with images) and each run's duration. A task
``passed`` when gold resolved ``k/k``, the empty patch was unresolved ``k/k``, nothing was masked or raised, and no
graded test (FAIL_TO_PASS, PASS_TO_PASS) is flaky; ``problems`` says why not, in words.

`Certificate.write` and `load_certificate` store it as JSON (``swe-gym validate`` writes one);
`screen_tasks` and `env_tasks` let ``evaluate`` and the envs skip or flag tasks that failed it (or that it
does not name).

>>> from swe_gym.tasks import load_tasks
>>> certificate = validate(load_tasks("bundled", limit=1), k=2)  # doctest: +SKIP
>>> certificate.summary.passed  # doctest: +SKIP
1
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from swe_gym.errors import ConfigError, validation_problems
from swe_gym.grading.eval_run import GRADING_GRACE_S, with_timeout
from swe_gym.grading.harness import Harness, grade_async
from swe_gym.grading.report import GradeReport
from swe_gym.jsonl import BadLine, json_document
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import blocking
from swe_gym.sandbox.protocol import ImageInspector
from swe_gym.sandbox.registry import get_provider
from swe_gym.tasks.model import SWETask

log = logging.getLogger(__name__)

#: The version of the certificate's JSON layout.
CERTIFICATE_VERSION = 1
#: A status seen in one run and absent from another run's log that has test results.
MISSING = "MISSING"

PatchKind = Literal["gold", "empty"]
KINDS: tuple[PatchKind, PatchKind] = ("gold", "empty")
Outcome = Literal["resolved", "unresolved", "masked", "error"]
Uncertified = Literal["skip", "flag"]


class RunResult(BaseModel):
    """One grading of one patch."""

    outcome: Outcome
    reason: str | None = Field(default=None, description="the report's summary, why it was masked, or the error")
    unexpected: list[str] = Field(
        default_factory=list,
        description="graded tests off their expected status: for gold, those that failed; for the empty patch, "
        "FAIL_TO_PASS tests that passed and PASS_TO_PASS tests that failed",
    )
    duration_s: float = 0.0


class FlakyTest(BaseModel):
    """A test's status in each run, in run order (None: that run has no test results, e.g. masked)."""

    gold: list[str | None]
    empty: list[str | None]
    graded: bool = Field(description="the task's FAIL_TO_PASS or PASS_TO_PASS names it")


class InstanceCertificate(BaseModel):
    """What ``k`` gradings of the gold patch and ``k`` of the empty patch showed about one task."""

    instance_id: str
    image: str | None = Field(default=None, description="the image graded in (None: the provider's default)")
    image_digest: str | None = Field(default=None, description="the image's content id; None without images")
    image_repo_digests: list[str] = Field(default_factory=list, description="registry digests, when it has any")
    k: int
    gold_resolved: int = 0
    empty_unresolved: int = 0
    gold_masked: int = 0
    empty_masked: int = 0
    masked_reasons: list[str] = Field(default_factory=list, description="'gold run 2: ...', one per masked run")
    errors: list[str] = Field(default_factory=list, description="gradings that raised, one per run")
    flaky: dict[str, FlakyTest] = Field(
        default_factory=dict, description="tests whose status varied between runs of the same patch"
    )
    twins: str | None = Field(
        default=None, description="the twin check under gold: how many graded tests ran a twin (all must have failed)"
    )
    uncovered_tests: dict[str, str] = Field(
        default_factory=dict,
        description="graded tests without a check code under test cannot tell apart (no twin, or inverted), and why",
    )
    weakly_checked: str | None = Field(
        default=None,
        description="set where most graded tests lack a check code under test cannot tell apart: forgery is "
        "then caught by the inverted twins, canaries and the static scan alone",
    )
    gold_runs: list[RunResult] = Field(default_factory=list)
    empty_runs: list[RunResult] = Field(default_factory=list)
    passed: bool = False
    problems: list[str] = Field(default_factory=list, description="why it did not pass, in words")


class CertificateSummary(BaseModel):
    total: int = 0
    passed: int = 0
    failed: int = 0
    failed_ids: list[str] = Field(default_factory=list)
    flaky_ids: list[str] = Field(default_factory=list, description="tasks with any flaky test (graded or not)")
    masked_ids: list[str] = Field(default_factory=list, description="tasks with any masked run")
    wall_s: float = 0.0


class Certificate(BaseModel):
    """The fidelity certificate of a dataset (or of some of its tasks) on one provider."""

    version: int = CERTIFICATE_VERSION
    dataset: str
    split: str | None = None
    created: str = Field(description="when the validation finished, UTC, ISO 8601")
    swe_gym_version: str
    provider: str
    k: int
    harness: str = Field(default="safe", description="the grader: 'safe' or 'official' (see `grade`)")
    timeout_s: float | None = Field(default=None, description="the eval timeout used instead of the tasks' own")
    summary: CertificateSummary
    instances: dict[str, InstanceCertificate]
    path: Path | None = Field(default=None, exclude=True, description="where it was read from or written to")

    def uncertified_reason(self, instance_id: str) -> str | None:
        """Why ``instance_id`` is not certified (failed, or absent), or None when it passed."""
        entry = self.instances.get(instance_id)
        where = f" {self.path}" if self.path is not None else ""
        if entry is None:
            return (
                f"not in the certificate{where} (it validated {len(self.instances)} tasks of {self.dataset!r}); "
                "validate it with swe-gym validate"
            )
        if entry.passed:
            return None
        return f"failed the certificate{where}: {'; '.join(entry.problems) or 'not passed'}"

    def write(self, path: str | Path) -> Path:
        """Write the certificate as JSON to ``path`` (parents created); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=2) + "\n")
        self.path = path
        return path


def load_certificate(path: str | Path) -> Certificate:
    """Read a certificate `Certificate.write` (or ``swe-gym validate``) wrote; `ConfigError` says what is wrong."""
    path = Path(path)
    hint = "create one with: swe-gym validate --dataset DATASET --out FILE"
    if not path.is_file():
        raise ConfigError(f"certificate {path} does not exist; {hint}")
    try:
        data = json_document(path)
    except OSError as exc:
        raise ConfigError(f"certificate {path} cannot be read ({exc}); {hint}") from None
    if isinstance(data, BadLine):
        raise ConfigError(f"certificate {path} is {data.reason}; {hint}")
    if isinstance(data, dict) and data.get("version", CERTIFICATE_VERSION) != CERTIFICATE_VERSION:
        raise ConfigError(
            f"certificate {path} has version {data.get('version')!r}; this swe_gym reads version "
            f"{CERTIFICATE_VERSION}: validate again"
        )
    try:
        certificate = Certificate.model_validate(data)
    except ValidationError as exc:
        problems = validation_problems(exc, whole="file")
        raise ConfigError(f"certificate {path} is not a swe_gym certificate ({problems}); {hint}") from None
    certificate.path = path
    return certificate


# -- accepting a certificate -------------------------------------------------------------------------


def screen_tasks(
    tasks: Iterable[SWETask], certificate: Certificate, uncertified: Uncertified = "flag"
) -> tuple[list[SWETask], dict[str, str]]:
    """(the tasks to use, ``{instance_id: why it is uncertified}``).

    ``"skip"`` drops the uncertified tasks (failed, or absent from ``certificate``); ``"flag"`` keeps them all.
    """
    if uncertified not in ("skip", "flag"):
        raise ConfigError(f"uncertified must be 'skip' or 'flag', got {uncertified!r}")
    tasks = list(tasks)
    reasons = {t.instance_id: r for t in tasks if (r := certificate.uncertified_reason(t.instance_id)) is not None}
    kept = [t for t in tasks if t.instance_id not in reasons] if uncertified == "skip" else tasks
    return kept, reasons


def env_tasks(
    tasks: list[SWETask], certificate: Certificate | str | Path | None, uncertified: Uncertified
) -> list[SWETask]:
    """An env's task list under ``certificate`` (or its file), for `SWEEnv`, `SWEVectorEnv` and `RayVectorEnv`.

    `ConfigError` if ``"skip"`` leaves no task.
    """
    if certificate is None:
        return tasks
    if not isinstance(certificate, Certificate):
        certificate = load_certificate(certificate)
    kept, reasons = screen_tasks(tasks, certificate, uncertified)
    if reasons:
        verb = "skipping" if uncertified == "skip" else "flagging"
        log.warning("%s %d of %d tasks not certified by %s", verb, len(reasons), len(tasks), certificate.path)
    if not kept:
        raise ConfigError(
            f"no task is left: all {len(tasks)} failed or are absent from the certificate {certificate.path} "
            "(use uncertified='flag' to keep them, or validate them again)"
        )
    return kept


# -- validating --------------------------------------------------------------------------------------


class RunEvent(BaseModel):
    """One finished grading, as ``on_progress`` sees it; ``instance`` is set when it was the task's last."""

    instance_id: str
    patch: PatchKind
    run: int = Field(description="1-based, per patch")
    result: RunResult
    instance: InstanceCertificate | None = None


ProgressCallback = Callable[[RunEvent, int, int], None]


def _run_result(report: GradeReport, kind: PatchKind) -> RunResult:
    if report.masked:
        return RunResult(outcome="masked", reason=report.masked_reason)
    f2p, p2p = report.fail_to_pass, report.pass_to_pass
    unexpected = [*f2p.failure, *p2p.failure] if kind == "gold" else [*f2p.success, *p2p.failure]
    return RunResult(
        outcome="resolved" if report.resolved else "unresolved", reason=report.summary(), unexpected=unexpected
    )


def flaky_tests(
    task: SWETask, gold: Sequence[GradeReport | None], empty: Sequence[GradeReport | None]
) -> dict[str, FlakyTest]:
    """Tests whose status differs between two runs of the same patch that both have test results.

    A run without results (masked, raised, nothing parsed) shows None and is not compared; a test absent
    from one run's results but present in another's is `MISSING` there (and so varied).
    """

    def column(reports: Sequence[GradeReport | None], name: str) -> list[str | None]:
        return [
            None if r is None or not r.test_status else (s.value if (s := r.test_status.get(name)) else MISSING)
            for r in reports
        ]

    def varied(values: list[str | None]) -> bool:
        return len({v for v in values if v is not None}) > 1

    names = sorted({name for r in [*gold, *empty] if r is not None for name in r.test_status})
    graded = {*task.fail_to_pass, *task.pass_to_pass}
    flaky: dict[str, FlakyTest] = {}
    for name in names:
        statuses = column(gold, name), column(empty, name)
        if varied(statuses[0]) or varied(statuses[1]):
            flaky[name] = FlakyTest(gold=statuses[0], empty=statuses[1], graded=name in graded)
    return flaky


def _listed(names: Sequence[str], limit: int = 5) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def judge(k: int, gold: Sequence[RunResult], empty: Sequence[RunResult], flaky: dict[str, FlakyTest]) -> list[str]:
    """The problems of a task's ``k`` gold and ``k`` empty runs (none: it passed)."""
    problems: list[str] = []
    gold_resolved = sum(r.outcome == "resolved" for r in gold)
    if gold_resolved < k:
        graded = [r for r in gold if r.outcome == "unresolved"]
        detail = ""
        if graded:
            failing = f"; failing: {_listed(graded[0].unexpected)}" if graded[0].unexpected else ""
            detail = f" ({graded[0].reason}{failing})"
        problems.append(f"gold patch resolved {gold_resolved}/{k} runs{detail}")
    empty_resolved = sum(r.outcome == "resolved" for r in empty)
    if empty_resolved:
        problems.append(
            f"empty patch resolved {empty_resolved}/{k} runs: the tests do not detect the bug (task defect)"
        )
    for kind, runs in (("gold", gold), ("empty", empty)):
        masked = [r for r in runs if r.outcome == "masked"]
        if masked:
            problems.append(f"{kind} patch masked in {len(masked)}/{k} runs ({masked[0].reason})")
        errors = [r for r in runs if r.outcome == "error"]
        if errors:
            problems.append(f"{kind} patch grading failed in {len(errors)}/{k} runs ({errors[0].reason})")
    graded_flaky = [name for name, test in flaky.items() if test.graded]
    if graded_flaky:
        problems.append(f"flaky graded tests (status varied between runs of the same patch): {_listed(graded_flaky)}")
    return problems


def weakly_checked(task: SWETask, uncovered: dict[str, str]) -> str | None:
    """Why a task is weakly checked against forgery: most of its graded tests uncovered (None: it is not)."""
    graded = {*task.fail_to_pass, *task.pass_to_pass}
    count = len(graded & set(uncovered))
    if not graded or count * 2 <= len(graded):
        return None
    return f"{count} of {len(graded)} graded tests have no check code under test cannot tell apart"


async def image_digest(provider: object, image: str | None) -> tuple[str | None, list[str]]:
    """(content id, registry digests) of ``image`` on ``provider``; (None, []) without images or the image."""
    if not image or not isinstance(provider, ImageInspector):
        return None, []
    try:
        info = await provider.image_info(image)
    except Exception as exc:  # a digest is a record, not a reason to lose the validation
        log.warning("could not inspect image %s: %s", image, exc)
        return None, []
    return (info.id, list(info.repo_digests)) if info is not None else (None, [])


class _Instance:
    """One task's runs as they come in."""

    def __init__(self, task: SWETask, k: int) -> None:
        self.task = task
        self.k = k
        self.reports: dict[PatchKind, list[GradeReport | None]] = {"gold": [None] * k, "empty": [None] * k}
        self.results: dict[PatchKind, list[RunResult | None]] = {"gold": [None] * k, "empty": [None] * k}
        self.left = 2 * k

    async def certificate(self, provider: object, image: str | None) -> InstanceCertificate:
        gold = [r for r in self.results["gold"] if r is not None]
        empty = [r for r in self.results["empty"] if r is not None]
        flaky = flaky_tests(self.task, self.reports["gold"], self.reports["empty"])
        problems = judge(self.k, gold, empty, flaky)
        digest, repo_digests = await image_digest(provider, image)
        uncovered = next((r.uncovered_tests for r in self.reports["gold"] if r is not None), {})

        def numbered(outcome: Outcome) -> list[str]:
            runs = (("gold", gold), ("empty", empty))
            return [
                f"{kind} run {i}: {r.reason}" for kind, rs in runs for i, r in enumerate(rs, 1) if r.outcome == outcome
            ]

        return InstanceCertificate(
            instance_id=self.task.instance_id,
            image=image,
            image_digest=digest,
            image_repo_digests=repo_digests,
            k=self.k,
            gold_resolved=sum(r.outcome == "resolved" for r in gold),
            empty_unresolved=sum(r.outcome == "unresolved" for r in empty),
            gold_masked=sum(r.outcome == "masked" for r in gold),
            empty_masked=sum(r.outcome == "masked" for r in empty),
            masked_reasons=numbered("masked"),
            errors=numbered("error"),
            flaky=flaky,
            twins=next((r.twins for r in self.reports["gold"] if r is not None), None),
            uncovered_tests=uncovered,
            weakly_checked=weakly_checked(self.task, uncovered),
            gold_runs=gold,
            empty_runs=empty,
            passed=not problems,
            problems=problems,
        )


class _Validation:
    def __init__(
        self, provider: object, spec: SandboxSpec, harness: Harness, total: int, on_progress: ProgressCallback | None
    ) -> None:
        self.provider = provider
        self.spec = spec
        self.harness = harness
        self.total = total
        self.done = 0
        self.on_progress = on_progress
        self.instances: dict[str, InstanceCertificate] = {}

    async def run(
        self, entry: _Instance, kind: PatchKind, index: int, gate: asyncio.Semaphore, timeout_s: float
    ) -> None:
        task = entry.task
        patch = task.patch if kind == "gold" else ""
        report: GradeReport | None = None
        async with gate:
            started = time.perf_counter()
            try:
                async with asyncio.timeout(timeout_s):
                    report = await grade_async(
                        task,
                        patch,
                        provider=self.provider,
                        spec=self.spec,
                        harness=self.harness,  # type: ignore[arg-type]
                    )
                result = _run_result(report, kind)
            except TimeoutError:
                result = RunResult(outcome="error", reason=f"grading did not finish within {timeout_s:.0f}s")
            except Exception as exc:
                log.warning("%s: grading the %s patch raised %s: %s", task.instance_id, kind, type(exc).__name__, exc)
                log.debug("grading %s raised", task.instance_id, exc_info=True)
                result = RunResult(outcome="error", reason=f"grading failed: {type(exc).__name__}: {exc}")
            result.duration_s = round(time.perf_counter() - started, 3)
        entry.reports[kind][index] = report
        entry.results[kind][index] = result
        entry.left -= 1
        finished = None
        if entry.left == 0:
            finished = await entry.certificate(self.provider, task.image or self.spec.image)
            self.instances[task.instance_id] = finished
            log.info("%s: %s", task.instance_id, "passed" if finished.passed else "; ".join(finished.problems))
        self.done += 1
        if self.on_progress is not None:
            event = RunEvent(instance_id=task.instance_id, patch=kind, run=index + 1, result=result, instance=finished)
            try:
                self.on_progress(event, self.done, self.total)
            except Exception:  # a broken progress display must not cost the validation
                log.exception("the on_progress callback failed")


async def validate_async(
    tasks: Iterable[SWETask],
    *,
    k: int = 3,
    provider: ProviderLike = "local",
    spec: SandboxSpec | None = None,
    workers: int = 4,
    on_progress: ProgressCallback | None = None,
    timeout_s: float | None = None,
    dataset: str = "tasks",
    split: str | None = None,
    harness: Harness = "safe",
) -> Certificate:
    """Grade each task's gold patch and the empty patch ``k`` times each; return the `Certificate`.

    All ``2k`` runs of every task share one bound: at most ``workers`` gradings at once. A grading that
    raises or outlives its timeout is that run's error (a problem of its task), never the end of the run;
    cancelling (Ctrl-C) returns only after every grading in flight has closed its sandbox.
    ``on_progress(event, done, total)`` is called after each run (`RunEvent`). ``timeout_s`` overrides
    every task's eval timeout. ``dataset``, ``split`` and ``harness`` (the grader, as in `grade`) are
    recorded in the certificate.
    """
    from swe_gym import __version__

    if k < 1:
        raise ConfigError(f"k must be >= 1, got {k}")
    if workers < 1:
        raise ConfigError(f"workers must be >= 1, got {workers}")
    if timeout_s is not None and timeout_s <= 0:
        raise ConfigError(f"timeout must be > 0, got {timeout_s}")
    tasks = list(tasks)
    ids = [t.instance_id for t in tasks]
    if len(set(ids)) != len(ids):
        raise ConfigError("validate needs distinct instance ids")
    started = time.perf_counter()
    backend = get_provider(provider)  # one instance for every grading (shared creation limits)
    spec = spec or SandboxSpec()
    spec = spec.model_copy(update={"labels": {**spec.labels, "validation": uuid.uuid4().hex[:12]}})
    state = _Validation(backend, spec, harness, 2 * k * len(tasks), on_progress)
    gate = asyncio.Semaphore(workers)
    # A task group, not gather: when cancelled it returns only after every grading has closed its sandbox.
    async with asyncio.TaskGroup() as group:
        for task in tasks:
            task = with_timeout(task, timeout_s)
            entry = _Instance(task, k)
            for index in range(k):
                for kind in KINDS:
                    group.create_task(state.run(entry, kind, index, gate, task.eval.timeout_s + GRADING_GRACE_S))
    instances = {iid: state.instances[iid] for iid in ids}
    failed = [iid for iid, entry in instances.items() if not entry.passed]
    summary = CertificateSummary(
        total=len(instances),
        passed=len(instances) - len(failed),
        failed=len(failed),
        failed_ids=failed,
        flaky_ids=[iid for iid, entry in instances.items() if entry.flaky],
        masked_ids=[iid for iid, entry in instances.items() if entry.gold_masked or entry.empty_masked],
        wall_s=round(time.perf_counter() - started, 3),
    )
    return Certificate(
        dataset=dataset,
        split=split,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        swe_gym_version=__version__,
        provider=backend.name,
        k=k,
        harness=harness,
        timeout_s=timeout_s,
        summary=summary,
        instances=instances,
    )


validate = blocking(validate_async)
