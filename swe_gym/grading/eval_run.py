"""What both grading harnesses share: one eval run's record, the grading sandbox's start, and the
per-task choice of eval script, reinstall line, log parser and verdict (swebench's for
``toolkit="swebench"`` tasks, our own otherwise)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from swe_gym.grading.parsers import TestStatus, get_parser
from swe_gym.grading.report import GradeReport, TestGroup, classify
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.tasks.model import SWETask
from swe_gym.tasks.provision import provision

log = logging.getLogger("swe_gym.grading.harness")

#: The eval's output kept (a runaway test suite's log must not fill memory), and the tail a report shows.
EVAL_OUTPUT_BYTES = 64 << 20
LOG_TAIL = 4000
#: Beyond the task's eval timeout, how long a grading may take (sandbox start, patch apply) before it is an error.
GRADING_GRACE_S = 600.0


def with_timeout(task: SWETask, timeout_s: float | None) -> SWETask:
    """``task`` with its eval timeout replaced (None: as it is)."""
    if timeout_s is None:
        return task
    return task.model_copy(update={"eval": task.eval.model_copy(update={"timeout_s": timeout_s})})


def swebench_eval_script(task: SWETask) -> str:
    from swe_gym.grading import swebench_toolkit

    return swebench_toolkit.eval_script(task)


def install_command(task: SWETask) -> str | None:
    if task.eval.toolkit != "swebench":
        return None
    from swe_gym.grading import swebench_toolkit

    return swebench_toolkit.install_command(task)


def parse_section(task: SWETask, section: str) -> dict[str, TestStatus]:
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit

        return swebench_toolkit.parse_section(task, section)
    return get_parser(task.eval.log_parser or "pytest")(section)


def judge_status(task: SWETask, status: dict[str, TestStatus]) -> tuple[bool, TestGroup, TestGroup]:
    if task.eval.toolkit == "swebench":
        from swe_gym.grading import swebench_toolkit

        return swebench_toolkit.judge(task, status)
    f2p, p2p = classify(task.fail_to_pass, status), classify(task.pass_to_pass, status)
    return not f2p.failure and not p2p.failure, f2p, p2p


@dataclass
class EvalRun:
    """One eval in one fresh sandbox, and everything odd about it (both harnesses fill it)."""

    empty: bool
    applied: bool = False
    method: str | None = None
    apply_log: str = ""
    restored: dict[str, str] = field(default_factory=dict)
    log: str = ""
    exit_code: int | None = None
    status: dict[str, TestStatus] = field(default_factory=dict)
    canary: str = "not run"
    changed: dict[str, str] = field(default_factory=dict)  # what the apply changed on disk
    install: str = ""  # what became of the eval script's reinstall
    install_log: str = ""  # its output, when it ran on its own before the restore
    timings: dict[str, float] = field(default_factory=dict)
    infra: str | None = None  # failed before the patch was in: masked
    tampered: str | None = None  # only code in the sandbox can do this: unresolved outright
    problems: dict[str, str] = field(default_factory=dict)  # kind -> detail, judged against the control
    twins: set[str] = field(default_factory=set)  # graded test ids whose twin ran in this pass


async def start_sandbox(
    task: SWETask, provider: ProviderLike, spec: SandboxSpec, pool: SandboxPool | None, run: EvalRun
) -> AsyncSandbox | None:
    clock = time.perf_counter()
    try:
        return await provision(task, provider, spec, pool)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # SandboxError, or the task's files could not be put in: the environment's failure
        run.infra = f"grading sandbox could not start: {exc}"
        return None
    finally:
        run.timings["sandbox"] = round(time.perf_counter() - clock, 4)


def masked_report(task: SWETask, reason: str, started: float, **fields: object) -> GradeReport:
    log.warning("grading of %s masked: %s", task.instance_id, reason)
    return GradeReport(
        instance_id=task.instance_id,
        masked=True,
        masked_reason=reason,
        duration_s=time.perf_counter() - started,
        **fields,  # type: ignore[arg-type]
    )
