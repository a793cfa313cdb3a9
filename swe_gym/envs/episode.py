"""`Episode`: the async core of one episode, run by `swe_gym.envs.host.EpisodeHost` for every front end.

It owns the episode's sandbox, turns actions into observations, and on the
last step extracts the patch, frees the sandbox and grades in a fresh one. With
``prestart_grading`` that fresh one is started as the episode starts, while the
agent acts, so the last step pays only the patch's apply and the tests.
``fork`` branches a live episode: a new one on a copy of its sandbox.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any

from swe_gym.envs.checkpoint import VERSION as CHECKPOINT_VERSION
from swe_gym.envs.checkpoint import EpisodeCheckpoint, options_of, provider_config
from swe_gym.envs.options import EnvOptions
from swe_gym.envs.prompt import SUBMIT, is_submission, task_prompt
from swe_gym.envs.text import masked_note, to_observation
from swe_gym.errors import (
    ConfigError,
    ForkNotSupportedError,
    GradingError,
    SandboxDiedError,
    SandboxError,
    SWEGymError,
    UnforkableSandboxError,
)
from swe_gym.grading import GradeReport, extract_patch, grade_async, snapshot
from swe_gym.grading.certificate import Certificate
from swe_gym.sandbox import AsyncSandbox, SandboxSpec
from swe_gym.sandbox.checkpoints import DEFAULT_TTL_S
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.sandbox.protocol import SandboxProvider
from swe_gym.sandbox.spec import ExecResult, SandboxStatus
from swe_gym.shown_text import to_bytes
from swe_gym.tasks import SWETask, provision
from swe_gym.tasks.provision import prepared_tree
from swe_gym.tools import BASH, SUBMIT_TOOL, Editor, EditorError, EditorHistory, ToolCall, ToolCallError, as_tool_call

log = logging.getLogger(__name__)

StepResult = tuple[str, float, bool, bool, dict[str, Any]]
Reset = tuple[str, dict[str, Any]]


def _bash_command(call: ToolCall) -> str:
    command = call.arguments.get("command")
    if not isinstance(command, str) or set(call.arguments) - {"command"}:
        raise ToolCallError('bash takes one argument, "command", a string')
    return command


def _with_call(result: StepResult, call: ToolCall) -> StepResult:
    """The step's result, its info naming the tool call it answered (for tool-role replies)."""
    result[4].update(tool=call.name, tool_call_id=call.id)
    return result


def _report_close_failure(closing: asyncio.Future[None]) -> None:
    if not closing.cancelled() and closing.exception() is not None:
        log.warning("could not close a sandbox: %s", closing.exception())


@dataclass(frozen=True)
class EpisodeSettings:
    """What every episode of a host runs with: its options as given, and what they resolved to."""

    options: EnvOptions
    provider: SandboxProvider
    spec: SandboxSpec
    pool: SandboxPool | None = None
    certificate: Certificate | None = None


class Episode:
    """One task in one sandbox. ``start`` once, ``step`` until it ends, ``close`` always."""

    def __init__(self, settings: EpisodeSettings, task: SWETask) -> None:
        self.settings = settings
        self.task = task
        self.sandbox: AsyncSandbox | None = None
        self.steps = 0
        self.done = False
        self.last_observation = ""
        self._base_tree = ""
        self._reset_s = 0.0
        self._grader: asyncio.Task[AsyncSandbox] | None = None
        self._closing: asyncio.Future[None] | None = None
        self.forked_from: str | None = None  # the id of the sandbox this episode's was forked from
        self.editor_history = EditorHistory()  # the file editor tool's undo states (forks get a copy)
        #: A task's own time limit for the agent (a Harbor task's [agent].timeout_sec): the monotonic time past
        #: which the episode ends as a step limit does (graded, truncated); None: steps alone bound it.
        limit = (task.metadata.get("harbor") or {}).get("agent_timeout_s")
        self._limit_s: float | None = float(limit) if limit else None
        self.deadline: float | None = None

    async def start(self) -> tuple[str, dict[str, Any]]:
        settings, started = self.settings, time.perf_counter()
        self.sandbox = await provision(
            self.task,
            settings.provider,
            settings.spec,
            settings.pool,
            agent=True,
            scrub_history=settings.options.scrub_history,
        )
        self._base_tree = await prepared_tree(self.sandbox, settings.provider) or await snapshot(self.sandbox)
        self._reset_s = time.perf_counter() - started
        self.deadline = None if self._limit_s is None else time.monotonic() + self._limit_s
        self._prestart_grader()
        prompt = task_prompt(
            self.task,
            workdir=self.sandbox.workdir,
            step_timeout=settings.options.step_timeout,
            max_steps=settings.options.max_steps,
            shell=settings.options.shell,
        )
        self.last_observation = to_observation(prompt, settings.options.max_observation_chars)
        return self.last_observation, self.reset_info()

    def _prestart_grader(self) -> None:
        settings = self.settings
        # A fresh copy of the task for the grader, ready by the time the agent submits.
        if settings.options.prestart_grading:
            self._grader = asyncio.ensure_future(provision(self.task, settings.provider, settings.spec, settings.pool))

    def reset_info(self) -> dict[str, Any]:
        """What reset's ``info`` says of this episode (a fork's adds ``forked_from`` and ``step``)."""
        assert self.sandbox is not None
        settings = self.settings
        info: dict[str, Any] = {
            "instance_id": self.task.instance_id,
            "sandbox_id": self.sandbox.id,
            "provider": settings.provider.name,
            "network_isolated": self.sandbox.backend.network_isolated,
            "reset_s": self._reset_s,
        }
        if self.forked_from is not None:
            info.update(forked_from=self.forked_from, step=self.steps)
        if settings.options.tools is not None:  # the tool calls it takes (a policy offers these, e.g. in tools=)
            info["tools"] = list(settings.options.tools)
        if settings.certificate is not None:  # "flag": the task is kept, and says why it is not certified
            reason = settings.certificate.uncertified_reason(self.task.instance_id)
            if reason is not None:
                info["uncertified"] = reason
        return info

    async def fork(self, settings: EpisodeSettings | None = None) -> Episode:
        """A new episode in this one's state, continuing on its own (``close`` each); see `forks`."""
        return (await self.forks(1, settings))[0]

    async def forks(self, n: int, settings: EpisodeSettings | None = None) -> list[Episode]:
        """``n`` new episodes in this one's state, each continuing on its own (``close`` each).

        Same task, step count, base snapshot (its patch is taken against the same base), last observation;
        each sandbox is a fork of this one's (the file system copied, no process carried over): made in the
        warm pool's started sandboxes where there is one (`SandboxPool.fork`: one copy of what the episode
        changed, replayed in each), else with `AsyncSandbox.fork`. With ``prestart_grading`` each starts its
        own grading sandbox now. ``settings``: the new episodes' (default: this one's; e.g. without the warm
        pool of an env they must not depend on).

        A fork that fails is judged against a control: a fresh sandbox of the task, forked the same way. If
        that forks, the failure is what the agent did to its sandbox, and `UnforkableSandboxError` is raised
        (its forks end unresolved); otherwise the environment's `SandboxError` stands (masked). A sandbox
        that died, or a provider that cannot fork at all, needs no control.
        """
        if self.done or self.sandbox is None:
            raise RuntimeError("only a live episode can fork: this one is over (or never started); reset() first")
        started = time.perf_counter()
        labels = {"task_id": self.task.instance_id}
        pool = self.settings.pool
        try:
            if pool is not None:
                sandboxes = await pool.fork(self.sandbox, n, labels=labels)
            else:
                sandboxes = await self.sandbox.forks(n, labels=labels)
        except ForkNotSupportedError:
            raise
        except SandboxDiedError as exc:
            if (blame := await self._agents_doing(exc)) is not None:
                raise UnforkableSandboxError(blame) from exc
            raise
        except SandboxError as exc:
            if await self._control_forks(labels):
                raise UnforkableSandboxError(
                    f"this episode's sandbox could not be forked ({exc}), while a fresh sandbox of "
                    f"{self.task.instance_id} can be: the agent's changes to it are the cause"
                ) from exc
            raise
        children = []
        for sandbox in sandboxes:
            child = Episode(settings or self.settings, self.task)
            child.sandbox, child.forked_from = sandbox, self.sandbox.id
            child.steps, child.last_observation, child._base_tree = self.steps, self.last_observation, self._base_tree
            child.editor_history = self.editor_history.copy()
            child.deadline = self.deadline
            child._reset_s = time.perf_counter() - started
            child._prestart_grader()
            children.append(child)
        return children

    async def _control_forks(self, labels: dict[str, str]) -> bool:
        """Whether a fresh sandbox of this task (never the pool's) forks: False when either step fails."""

        async def forks(control: AsyncSandbox) -> None:
            await (await control.fork(labels=labels)).close()

        return await self._control(forks)

    async def _agents_doing(self, exc: SandboxDiedError) -> str | None:
        """Why a sandbox found dead between commands is the agent's doing, or None: the environment's (masked).

        Where the runner is PID 1 of the sandbox's PID namespace (``runner_protected``) nothing inside can end it,
        so the death came from outside. Elsewhere (OpenSandbox's execd, an unisolated local sandbox) a process the
        agent left running can end it after its command returned; then the death is judged against a control: if a
        fresh sandbox of the task starts and runs a command, the environment works and the death is the agent's.
        """
        sandbox = self.sandbox
        if sandbox is None or sandbox.backend.runner_protected:
            return None

        async def runs(control: AsyncSandbox) -> None:
            if not (await control.exec("true", timeout=60)).ok:
                raise SandboxError("the control sandbox could not run a command")

        if not await self._control(runs):
            return None
        return (
            f"its sandbox stopped answering between commands ({exc}); on {sandbox.provider_name} the sandbox's own "
            "processes can end its runner, and a fresh sandbox of the task runs: counted as the agent's doing"
        )

    async def _control(self, check: Callable[[AsyncSandbox], Awaitable[None]]) -> bool:
        """Whether ``check`` passes on a fresh sandbox of this task (never the pool's), made as the agent's is."""
        settings = self.settings
        scrub = settings.options.scrub_history
        try:
            control = await provision(self.task, settings.provider, settings.spec, agent=True, scrub_history=scrub)
        except SWEGymError:
            return False
        try:
            await check(control)
        except SWEGymError:
            return False
        finally:
            await control.close()
        return True

    async def act(self, action: Any) -> StepResult:
        """One action of an env with ``tools``: a tool call (any shape `swe_gym.tools.as_tool_call` takes) or a
        plain bash string. A call that cannot run is an error observation (a step, never an exception)."""
        tools = self.settings.options.tools or ()
        try:
            call = as_tool_call(action)
        except ToolCallError as exc:
            return await self._tool_error(str(exc), None)
        try:
            if call.name not in tools:
                raise ToolCallError(f"unknown tool {call.name!r}; this env's tools: {', '.join(tools)}")
            if call.name == BASH:
                return _with_call(await self.step(_bash_command(call)), call)
            if call.name == SUBMIT_TOOL:
                return _with_call(await self.step(SUBMIT), call)
        except ToolCallError as exc:
            return await self._tool_error(str(exc), call.id)
        return _with_call(await self._edit(call.arguments), call)

    def act_here(self, action: Any) -> StepResult | Coroutine[Any, Any, StepResult] | None:
        """`act` in the calling thread, for a well-formed bash call (`step_here`); None for anything else, with
        nothing done (then `act`)."""
        try:
            call = as_tool_call(action)
            if call.name != BASH or BASH not in (self.settings.options.tools or ()):
                return None
            command = _bash_command(call)
        except ToolCallError:
            return None
        outcome = self.step_here(command)
        if outcome is None:
            return None
        if not inspect.iscoroutine(outcome):
            return _with_call(outcome, call)

        async def finished() -> StepResult:
            return _with_call(await outcome, call)

        return finished()

    async def _edit(self, arguments: dict[str, Any]) -> StepResult:
        if self.done or self.sandbox is None:
            raise RuntimeError("the episode is over (or never started): call reset() before step()")
        self.steps += 1
        started = time.perf_counter()
        info: dict[str, Any] = {"step": self.steps, "timed_out": False, "output_truncated": False}
        try:
            async with asyncio.timeout(self.settings.options.step_timeout):
                output = await Editor(self.sandbox, self.editor_history).run(arguments)
            info["exit_code"] = 0
        except EditorError as exc:
            output, info["exit_code"], info["tool_error"] = f"error: {exc}", 1, str(exc)
        except TimeoutError:
            output, info["exit_code"], info["timed_out"] = "error: the edit timed out", -1, True
        except SandboxDiedError as exc:
            info.update(exit_code=-1, duration_s=time.perf_counter() - started)
            if (blame := await self._agents_doing(exc)) is not None:
                return await self._finish("", info, terminated=True, broken=blame)
            return await self.end_masked(f"sandbox died: {exc}", info)
        info["duration_s"] = time.perf_counter() - started
        if self._out_of_turns():
            return await self._finish(output, info, terminated=False)
        return self._observe(output), 0.0, False, False, info

    async def _tool_error(self, reason: str, call_id: str | None) -> StepResult:
        """A call that cannot run: a step whose observation says why."""
        if self.done or self.sandbox is None:
            raise RuntimeError("the episode is over (or never started): call reset() before step()")
        self.steps += 1
        info: dict[str, Any] = {
            "step": self.steps,
            "exit_code": 2,
            "timed_out": False,
            "output_truncated": False,
            "duration_s": 0.0,
            "tool_error": reason,
            "tool_call_id": call_id,
        }
        output = f"[swe_gym: bad tool call: {reason}]"
        if self._out_of_turns():
            return await self._finish(output, info, terminated=False)
        return self._observe(output), 0.0, False, False, info

    async def step(self, command: str) -> StepResult:
        if command.strip() == SUBMIT:
            info = self._count_step()
            info.update(exit_code=0, timed_out=False, output_truncated=False, duration_s=0.0)
            return await self._finish("", info, terminated=True)
        self._count_step(dry=True)
        timeout, shell = self._step_timeout(), self.settings.options.shell
        try:
            result = await self.sandbox.exec_action(to_bytes(command), timeout=timeout, shell=shell)
        except SandboxDiedError as exc:
            return await self._died(exc, self._count_step())
        outcome = self._outcome(result, timeout, self._count_step())
        return await outcome if inspect.iscoroutine(outcome) else outcome

    def step_here(self, command: str) -> StepResult | Coroutine[Any, Any, StepResult] | None:
        """`step`, blocking, in the calling thread, where the sandbox can take the command right here
        (`AsyncSandbox.exec_action_here`): a step's result, or the coroutine that must finish it on swe_gym's loop
        (the grading of a last step, a dead sandbox's verdict); None where it cannot, with nothing done (then
        `step`). Never from swe_gym's own loop."""
        if command.strip() == SUBMIT:
            return None
        self._count_step(dry=True)
        timeout, shell = self._step_timeout(), self.settings.options.shell
        try:
            result = self.sandbox.exec_action_here(to_bytes(command), timeout=timeout, shell=shell)
        except SandboxDiedError as exc:
            return self._died(exc, self._count_step())
        return None if result is None else self._outcome(result, timeout, self._count_step())

    def _count_step(self, *, dry: bool = False) -> dict[str, Any]:
        """Count a step (``dry``: only check that one may be taken); its info so far."""
        if self.done or self.sandbox is None:
            raise RuntimeError("the episode is over (or never started): call reset() before step()")
        if not dry:
            self.steps += 1
        return {"step": self.steps}

    async def _died(self, exc: SandboxDiedError, info: dict[str, Any]) -> StepResult:
        info.update(exit_code=-1, timed_out=False, output_truncated=False, duration_s=0.0)
        if getattr(exc, "during_call", False):  # the agent's own command broke it: a verdict, not a mask
            return await self._finish("", info, terminated=True, broken=f"the agent's command broke its sandbox: {exc}")
        if (blame := await self._agents_doing(exc)) is not None:
            return await self._finish("", info, terminated=True, broken=blame)
        return await self.end_masked(f"sandbox died: {exc}", info)

    def _outcome(
        self, result: ExecResult, timeout: float, info: dict[str, Any]
    ) -> StepResult | Coroutine[Any, Any, StepResult]:
        """The step that ``result`` makes: observed here, or (the episode ending) the coroutine that grades it."""
        info.update(
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            output_truncated=result.output_truncated,
            duration_s=result.duration_s,
        )
        output = result.output
        if result.timed_out:
            output += f"\n[swe_gym: command timed out after {timeout:g}s and was killed]"
        if is_submission(output, result.exit_code):
            return self._finish(output, info, terminated=True)
        if self._out_of_turns():
            return self._finish(output, info, terminated=False)
        return self._observe(output), 0.0, False, False, info

    async def _artifacts(self) -> bytes | None:
        """What a Harbor task's verifier receives besides the work tree (its artifacts), read before the sandbox
        goes; None for other tasks."""
        paths = (self.task.metadata.get("harbor") or {}).get("artifacts")
        if not paths or self.sandbox is None:
            return None
        from swe_gym.grading.harbor_verifier import collect_artifacts

        return await collect_artifacts(self.sandbox, paths)

    def _out_of_turns(self) -> bool:
        """The step limit reached, or the task's time limit for the agent passed."""
        late = self.deadline is not None and time.monotonic() >= self.deadline
        return self.steps >= self.settings.options.max_steps or late

    def _limit_name(self) -> str:
        return "step limit" if self.steps >= self.settings.options.max_steps else "the task's time limit"

    def _step_timeout(self) -> float:
        """The step timeout, cut to what is left of the task's time limit (never under a second)."""
        timeout = self.settings.options.step_timeout
        return timeout if self.deadline is None else max(1.0, min(timeout, self.deadline - time.monotonic()))

    async def truncate(self, output: str, info: dict[str, Any]) -> StepResult:
        """End the episode now (a caller's own turn limit): graded like a step limit, ``output`` shown."""
        return await self._finish(output, info, terminated=False)

    async def close(self) -> None:
        self._release_agent_sandbox()
        closing, self._closing = self._closing, None
        if closing is not None:
            await closing
        grader = await self._take_grader()
        if grader is not None:
            await grader.close()

    def _release_agent_sandbox(self) -> None:
        """Close the agent's sandbox in the background (the grading does not wait for it; `close` does)."""
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            self._closing = asyncio.ensure_future(sandbox.close())
            self._closing.add_done_callback(_report_close_failure)

    async def _take_grader(self) -> AsyncSandbox | None:
        """The prestarted grading sandbox if it started and still runs (else grade starts one)."""
        task, self._grader = self._grader, None
        if task is None:
            return None
        try:
            grader = await task
        except Exception as exc:  # grade_async() starts its own and reports what fails then
            log.debug("the prestarted grading sandbox of %s failed: %s", self.task.instance_id, exc)
            return None
        if await grader.status() is not SandboxStatus.RUNNING:
            await grader.close()
            return None
        return grader

    async def end_masked(self, reason: str, info: dict[str, Any]) -> StepResult:
        """Infrastructure failure: the episode ends truncated and masked, never as a plain 0."""
        self.done = True
        await self.close()
        report = GradeReport(instance_id=self.task.instance_id, masked=True, masked_reason=reason)
        info.update(self._terminal_info(report, "", None))
        return self._observe(masked_note(reason)), 0.0, False, True, info

    def _observe(self, text: str) -> str:
        self.last_observation = to_observation(text, self.settings.options.max_observation_chars)
        return self.last_observation

    async def _finish(
        self, output: str, info: dict[str, Any], *, terminated: bool, broken: str | None = None
    ) -> StepResult:
        """Read the patch, free the sandbox, grade. ``broken``: the agent broke its sandbox; what can
        still be read is graded, and when nothing can, the episode is unresolved (never masked). A patch that
        cannot be read (`extract_patch`'s reasons: too big, too slow, unreadable files, no repository) ends the
        episode unresolved with that reason as ``patch_error``, ungraded (never masked)."""
        assert self.sandbox is not None
        settings = self.settings
        self.done = True
        patch, note, artifacts = "", broken, None
        try:
            patch = await extract_patch(
                self.sandbox,
                self._base_tree,
                max_bytes=settings.options.max_patch_bytes,
                timeout=settings.options.patch_timeout,
            )
            artifacts = await self._artifacts()
        except SandboxDiedError as exc:
            if broken is None and (broken := await self._agents_doing(exc)) is None:
                return await self.end_masked(f"sandbox died before the patch was read: {exc}", info)
            note = broken
        except GradingError as exc:
            note = str(exc)  # what the agent left cannot be read as a patch
        finally:
            self._release_agent_sandbox()
        unreadable = note is not None and not patch.strip()
        if unreadable:  # no grading: the prestarted sandbox goes (the agent's goes on in the background)
            if (grader := await self._take_grader()) is not None:
                await grader.close()
            report = GradeReport(instance_id=self.task.instance_id, empty_patch=True, unresolved_reason=note)
            info.update(self._terminal_info(report, "", note), grade_s=0.0)
            ended = terminated or broken is not None  # the agent's command ended it, else a step limit did
            ending = "" if ended else f"{self._limit_name()} reached; "
            observation = self._observe(f"{output}\n[swe_gym: {ending}{report.summary()}]")
            return observation, 0.0, ended, not ended, info
        if not terminated and not settings.options.grade_on_truncation:
            await self.close()  # no grading: the prestarted sandbox goes too
            info.update(self._terminal_info(GradeReport(instance_id=self.task.instance_id), patch, note))
            info.update(report=None, grade_s=0.0)
            return self._observe(output + f"\n[swe_gym: {self._limit_name()} reached]"), 0.0, False, True, info
        grader = await self._take_grader()
        report = await grade_async(
            self.task,
            patch,
            provider=settings.provider,
            spec=settings.spec,
            pool=settings.pool,
            sandbox=grader,
            artifacts=artifacts,
        )
        info.update(self._terminal_info(report, patch, note))
        ending = "" if terminated else f"{self._limit_name()} reached; "
        observation = self._observe(f"{output}\n[swe_gym: {ending}{report.summary()}]")
        return observation, report.reward(settings.options.reward), terminated, not terminated, info

    def _terminal_info(self, report: GradeReport, patch: str, note: str | None) -> dict[str, Any]:
        return {
            "resolved": report.resolved,
            "masked": report.masked,
            "masked_reason": report.masked_reason,
            "patch": patch,
            "patch_error": note,
            "report": report.model_dump(mode="json"),
            "reset_s": self._reset_s,
            "grade_s": report.duration_s,
        }

    # -- durable episodes: checkpoint, and resume in any process (swe_gym.envs.checkpoint) ----------------------

    async def checkpoint(
        self, *, labels: Mapping[str, str] | None = None, ttl_s: float = DEFAULT_TTL_S
    ) -> EpisodeCheckpoint:
        """Save this live episode (it goes on): its sandbox's file system (`AsyncSandbox.checkpoint`: a running
        command is waited for) and what the episode holds besides, as a handle `resumed` goes on from."""
        if self.done or self.sandbox is None:
            raise RuntimeError("only a live episode can be checkpointed: this one is over (or never started)")
        saved = await self.sandbox.checkpoint(labels={"task_id": self.task.instance_id, **(labels or {})}, ttl_s=ttl_s)
        options, selection = options_of(self.settings.options)
        return EpisodeCheckpoint(
            task=self.task,
            options=options,
            selection=selection,
            provider=provider_config(self.settings.provider),
            sandbox=saved,
            steps=self.steps,
            last_observation=self.last_observation,
            base_tree=self._base_tree,
            editor_history=self.editor_history.copy().before,
        )

    @classmethod
    async def resumed(cls, settings: EpisodeSettings, checkpoint: EpisodeCheckpoint) -> Episode:
        """The episode ``checkpoint`` saved, going on in a sandbox restored from it (`AsyncSandbox.restore`) with
        its step count, last observation, patch base and editor history; with ``prestart_grading`` it starts its
        own grading sandbox. The checkpoint stays (resume it again for another episode)."""
        if checkpoint.version != CHECKPOINT_VERSION:
            raise ConfigError(
                f"checkpoint {checkpoint.id} is of version {checkpoint.version}; this swe_gym reads version "
                f"{CHECKPOINT_VERSION}: resume it with the swe_gym that took it"
            )
        started = time.perf_counter()
        episode = cls(settings, checkpoint.task)
        labels = {"task_id": checkpoint.task.instance_id}
        episode.sandbox = await AsyncSandbox.restore(checkpoint.sandbox, settings.provider, labels=labels)
        episode.steps, episode.last_observation = checkpoint.steps, checkpoint.last_observation
        episode._base_tree, episode.editor_history = checkpoint.base_tree, checkpoint.history()
        episode._reset_s = time.perf_counter() - started
        episode._prestart_grader()
        return episode
