"""`SWEEnv`: one episode is one task in one sandbox.

``reset`` provisions a sandbox holding the task's repository, ``step`` runs a
bash action in it, and the terminal reward comes from grading the agent's patch
in a fresh sandbox with the task's hidden tests.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Literal

import gymnasium as gym

from swe_gym.envs.prompt import SUBMIT, SUBMIT_MARKER, task_prompt
from swe_gym.envs.text import text_space, to_observation
from swe_gym.errors import ConfigError, GradingError, SandboxDiedError, SandboxError
from swe_gym.grading import GradeReport, extract_patch, grade, snapshot
from swe_gym.sandbox import AsyncSandbox, SandboxSpec, get_provider
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import run_sync
from swe_gym.tasks import SWETask, load_tasks, provision
from swe_gym.tasks.loader import TaskSource

log = logging.getLogger(__name__)

#: Longest action the action space declares (a 1 MiB heredoc is a legitimate action).
MAX_ACTION_CHARS = 1 << 20


class SWEEnv(gym.Env[str, str]):
    """A software-engineering task as a Gymnasium environment.

    >>> import gymnasium as gym, swe_gym
    >>> env = gym.make("swe_gym/SWE-v0")                        # bundled tasks, local provider
    >>> obs, info = env.reset(seed=0)
    >>> obs, reward, terminated, truncated, info = env.step("ls")
    >>> obs, reward, terminated, truncated, info = env.step("submit")
    >>> terminated, reward, info["resolved"]
    (True, 0.0, False)
    >>> env.close()

    Args:
        tasks: ``"bundled"``, a ``.json``/``.jsonl`` path, or task records.
        provider: a provider name (``"local"``, ``"docker"``, ...), a ``{"type": ...}`` config, or an instance.
        image: the image for tasks that name none (needed by container providers for bundled tasks).
        max_steps: actions per episode before truncation.
        step_timeout: seconds per action; the action's whole process group is killed after it.
        max_observation_chars: observations are capped to this (head and tail kept).
        reward: ``"binary"`` (1.0 resolved) or ``"partial"`` (fraction of FAIL_TO_PASS, if PASS_TO_PASS holds).
        grade_on_truncation: grade the patch when ``max_steps`` is reached (else reward 0, no grading).
        sandbox: a `SandboxSpec` (or dict) for limits, env vars, network and TTL of every sandbox.
        instance_ids: restrict ``tasks`` to these ids.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        tasks: TaskSource = "bundled",
        provider: ProviderLike = "local",
        *,
        image: str | None = None,
        max_steps: int = 50,
        step_timeout: float = 60.0,
        max_observation_chars: int = 20_000,
        reward: Literal["binary", "partial"] = "binary",
        grade_on_truncation: bool = True,
        sandbox: SandboxSpec | Mapping[str, Any] | None = None,
        instance_ids: Iterable[str] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if max_steps < 1 or step_timeout <= 0 or max_observation_chars < 64:
            raise ConfigError("need max_steps >= 1, step_timeout > 0 and max_observation_chars >= 64")
        if reward not in ("binary", "partial"):
            raise ConfigError(f"reward must be 'binary' or 'partial', got {reward!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.tasks: list[SWETask] = load_tasks(tasks, instance_ids=instance_ids)
        self._by_id = {task.instance_id: task for task in self.tasks}
        self.provider = get_provider(provider)
        base = sandbox if isinstance(sandbox, SandboxSpec) else SandboxSpec(**dict(sandbox or {}))
        self.spec_base = base.model_copy(
            update={
                "image": image or base.image,
                "exec_timeout_s": step_timeout,
                "max_output_bytes": max_observation_chars * 4,
            }
        )
        self.max_steps = max_steps
        self.step_timeout = step_timeout
        self.max_observation_chars = max_observation_chars
        self.reward_mode = reward
        self.grade_on_truncation = grade_on_truncation
        self.render_mode = render_mode
        self.observation_space = text_space(max_observation_chars)
        self.action_space = text_space(MAX_ACTION_CHARS)
        self.task: SWETask | None = None
        self._sandbox: AsyncSandbox | None = None
        self._base_tree = ""
        self._steps = 0
        self._done = True
        self._reset_s = 0.0
        self._last = ""

    # -- Gymnasium API -----------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._close_sandbox()
        task_id = (options or {}).get("task_id")
        if task_id is not None:
            if task_id not in self._by_id:
                raise ConfigError(f"unknown task_id {task_id!r}; this env has {len(self.tasks)} tasks")
            self.task = self._by_id[task_id]
        else:
            self.task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        started = time.perf_counter()
        self._sandbox = run_sync(provision(self.task, self.provider, self.spec_base))
        try:
            self._base_tree = run_sync(snapshot(self._sandbox))
        except BaseException:
            self._close_sandbox()
            raise
        self._reset_s = time.perf_counter() - started
        self._steps, self._done = 0, False
        prompt = task_prompt(
            self.task, workdir=self._sandbox.workdir, step_timeout=self.step_timeout, max_steps=self.max_steps
        )
        self._last = to_observation(prompt, self.max_observation_chars)
        info = {
            "instance_id": self.task.instance_id,
            "sandbox_id": self._sandbox.id,
            "provider": self.provider.name,
            "reset_s": self._reset_s,
        }
        return self._last, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self._sandbox is None:
            raise RuntimeError("the episode is over (or never started): call reset() before step()")
        command = _as_text(action)
        self._steps += 1
        info: dict[str, Any] = {"step": self._steps}
        if command.strip() == SUBMIT:
            info.update(exit_code=0, timed_out=False, output_truncated=False, duration_s=0.0)
            return self._finish("", info, terminated=True)
        try:
            result = run_sync(self._sandbox.exec(command, timeout=self.step_timeout))
        except SandboxDiedError as exc:
            info.update(exit_code=-1, timed_out=False, output_truncated=False, duration_s=0.0)
            return self._end_masked(f"sandbox died: {exc}", info)
        info.update(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output_truncated=result.output_truncated,
            duration_s=result.duration_s,
        )
        output = result.output
        if result.timed_out:
            output += f"\n[swe_gym: command timed out after {self.step_timeout:g}s and was killed]"
        if output.lstrip().split("\n", 1)[0].strip() == SUBMIT_MARKER:
            return self._finish(output, info, terminated=True)
        if self._steps >= self.max_steps:
            return self._finish(output, info, terminated=False)
        self._last = to_observation(output, self.max_observation_chars)
        return self._last, 0.0, False, False, info

    def render(self) -> str | None:
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        self._close_sandbox()
        super().close()

    # -- episode end -------------------------------------------------------------------

    def _finish(
        self, output: str, info: dict[str, Any], *, terminated: bool
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Extract the patch, free the episode sandbox, grade in a fresh one."""
        assert self._sandbox is not None and self.task is not None
        self._done = True
        truncated = not terminated
        patch, note = "", ""
        try:
            patch = run_sync(extract_patch(self._sandbox, self._base_tree))
        except SandboxDiedError as exc:
            return self._end_masked(f"sandbox died before the patch was read: {exc}", info, truncated=truncated)
        except GradingError as exc:
            note = str(exc)  # the agent broke its repository: graded as an empty patch
        finally:
            self._close_sandbox()
        if truncated and not self.grade_on_truncation:
            info.update(resolved=False, masked=False, masked_reason=None, patch=patch, report=None, grade_s=0.0)
            self._last = to_observation(output + "\n[swe_gym: step limit reached]", self.max_observation_chars)
            return self._last, 0.0, False, True, info
        report = run_sync(grade(self.task, patch, provider=self.provider, spec=self.spec_base))
        info.update(self._terminal_info(report, patch, note))
        ending = "step limit reached; " if truncated else ""
        self._last = to_observation(f"{output}\n[swe_gym: {ending}{report.summary()}]", self.max_observation_chars)
        return self._last, report.reward(self.reward_mode), terminated, truncated, info

    def _end_masked(
        self, reason: str, info: dict[str, Any], *, truncated: bool = True
    ) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Infrastructure failure: the episode ends truncated and masked, never as a plain 0."""
        assert self.task is not None
        self._done = True
        self._close_sandbox()
        report = GradeReport(instance_id=self.task.instance_id, masked=True, masked_reason=reason)
        info.update(self._terminal_info(report, "", ""))
        self._last = to_observation(f"[swe_gym: episode masked: {reason}]", self.max_observation_chars)
        return self._last, 0.0, False, truncated, info

    def _terminal_info(self, report: GradeReport, patch: str, note: str) -> dict[str, Any]:
        return {
            "resolved": report.resolved,
            "masked": report.masked,
            "masked_reason": report.masked_reason,
            "patch": patch,
            "patch_error": note or None,
            "report": report.model_dump(mode="json"),
            "reset_s": self._reset_s,
            "grade_s": report.duration_s,
        }

    def _close_sandbox(self) -> None:
        sandbox, self._sandbox = self._sandbox, None
        if sandbox is not None:
            try:
                run_sync(sandbox.close())
            except SandboxError as exc:
                log.warning("could not close sandbox %s: %s", sandbox.id, exc)

    def __del__(self) -> None:
        # At interpreter exit the atexit hook in swe_gym.sandbox.loop closes sandboxes instead.
        if getattr(self, "_sandbox", None) is not None and not sys.is_finalizing():
            self._close_sandbox()


def _as_text(action: Any) -> str:
    if isinstance(action, str):
        return action
    if isinstance(action, bytes):
        return action.decode("utf-8", errors="surrogateescape")
    raise TypeError(f"an SWEEnv action is a bash command string, got {type(action).__name__}")
