"""`SWEEnv`: one episode is one task in one sandbox.

``reset`` provisions a sandbox holding the task's repository, ``step`` runs a
bash action in it, and the terminal reward comes from grading the agent's patch
in a fresh sandbox with the task's hidden tests. ``fork`` branches a live
episode into new envs that continue on their own.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import logging
import os
import sys
from collections.abc import Iterable
from concurrent.futures import Future
from typing import Any, ClassVar

import gymnasium as gym

from swe_gym.envs.episode import Episode, EpisodeSettings, make_settings, pick_task, warm_up
from swe_gym.envs.options import EnvOptions
from swe_gym.envs.spaces import env_spaces
from swe_gym.errors import ConfigError, SandboxError
from swe_gym.grading.certificate import env_tasks
from swe_gym.sandbox import AsyncSandbox
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.loop import background_loop, in_loop_thread, run_sync
from swe_gym.tasks import SWETask, load_tasks
from swe_gym.tasks.loader import TaskSource

log = logging.getLogger(__name__)


class SWEEnv(gym.Env[str, Any]):
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
        tasks: ``"bundled"``, a Hugging Face dataset name, a ``.json``/``.jsonl``/``.parquet`` path, or task
            records (see `swe_gym.load_tasks`).
        provider: a provider name (``"local"``, ``"docker"``, ...), a ``{"type": ...}`` config, or an instance.
        image: the image for tasks that name none (needed by container providers for bundled tasks).
        max_steps: actions per episode before truncation.
        step_timeout: seconds per action; the action's whole process group is killed after it.
        max_observation_chars: observations are capped to this (head and tail kept).
        reward: ``"binary"`` (1.0 resolved) or ``"partial"`` (fraction of FAIL_TO_PASS, if PASS_TO_PASS holds).
        grade_on_truncation: grade the patch when ``max_steps`` is reached (else reward 0, no grading).
        sandbox: a `SandboxSpec` (or dict) for limits, env vars, network and TTL of every sandbox.
        instance_ids: restrict ``tasks`` to these ids.
        split, limit: the dataset split, and how many of its rows (an int or a ``slice``).
        scrub_history: remove git history after the base from the agent's sandbox (``True``: every ref,
            reflog and object the base does not reach, so no git command can show the fix; done once per
            image on providers that commit images, e.g. docker; ``"gc"``: the same; ``False``: keep).
        pool_size: keep this many sandboxes started ahead of need (0: off), so a reset only hands one over.
        prestart_grading: start the grading sandbox as the episode starts (default ``True``), so the last
            step pays only the patch's apply and the tests; ``False`` starts it at the last step (one
            sandbox per episode instead of two while the agent acts).
        shell: ``"stateless"`` (default): each bash action in a fresh ``bash -c``; ``"persistent"``: one bash
            per episode in which ``cd``, ``export`` and activated virtualenvs persist (same timeout, output
            and stdin rules; an action that ends the shell gets a new one, and the observation says so).
        certificate, uncertified: a fidelity certificate file (``swe-gym validate``) and what to do with the
            tasks it does not certify (failed, or absent): ``"skip"`` leaves them out of ``tasks`` (an error if
            none is left), ``"flag"`` (default) keeps them and says why in reset's ``info["uncertified"]``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}

    def __init__(
        self,
        tasks: TaskSource = "bundled",
        provider: ProviderLike = "local",
        *,
        instance_ids: Iterable[str] | None = None,
        split: str = "test",
        limit: int | slice | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        parsed = EnvOptions.parse(options)
        self.settings = make_settings(provider, parsed)
        loaded = load_tasks(tasks, split=split, instance_ids=instance_ids, limit=limit)
        self.tasks: list[SWETask] = env_tasks(loaded, self.settings.certificate, parsed.uncertified)
        self._by_id = {task.instance_id: task for task in self.tasks}
        self.provider = self.settings.provider
        self.spec_base = self.settings.spec
        self.pool = self.settings.pool
        self.render_mode = render_mode
        self.observation_space, self.action_space = env_spaces(parsed.max_observation_chars, parsed.tools)
        self._episode: Episode | None = None
        self._closing: list[Future[None]] = []
        self._owner_pid = os.getpid()  # a forked copy of this env must not close the parent's sandbox
        run_sync(warm_up(self.settings, self.tasks))

    @property
    def task(self) -> SWETask | None:
        return self._episode.task if self._episode else None

    @property
    def _sandbox(self) -> AsyncSandbox | None:
        return self._episode.sandbox if self._episode else None

    @property
    def _done(self) -> bool:
        return self._episode is None or self._episode.done

    # -- Gymnasium API -----------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = pick_task(self.tasks, self._by_id, self.np_random, (options or {}).get("task_id"))
        previous, self._episode = self._episode, Episode(self.settings, task)
        try:
            return run_sync(self._episode.start())
        except BaseException:
            self._release(self._episode, wait=True)
            self._episode = None
            raise
        finally:
            # The old sandbox goes after the new one is up, so its teardown does not slow this reset.
            self._release(previous)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._episode is None:
            raise RuntimeError("the episode is over (or never started): call reset() before step()")
        if self.settings.tools is not None:  # a tool call, or a plain bash string
            return run_sync(self._episode.act(action))
        return run_sync(self._episode.step(as_command(action)))

    def render(self) -> str | None:
        return self._episode.last_observation if self.render_mode == "ansi" and self._episode else None

    def fork(self, n: int = 1) -> list[SWEEnv]:
        """``n`` new envs in this episode's state, each continuing (and graded) on its own.

        Each has the same task, step count, base snapshot (its patch is taken against the reset's
        repository) and last observation (`render`), on a fork of this env's sandbox (its file system
        copied: repository, build output, installed packages, ``/tmp``; no process carried over), with its
        own grading sandbox when ``prestart_grading``. This env goes on unaffected. The new envs share its
        settings and tasks but not its warm pool; close each (closing one never touches another). A reset
        of a branch starts a fresh episode as usual. With ``gym.make``, call ``env.unwrapped.fork(n)``.

        >>> env = SWEEnv()                                   # doctest: +SKIP
        >>> _ = env.reset(seed=0); _ = env.step("ls")
        >>> branches = env.fork(2)                           # two copies of the episode after "ls"
        >>> [b.step("submit")[1] for b in branches]          # each graded on its own
        [0.0, 0.0]
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ConfigError(f"fork(n) needs an int n >= 1, got {n!r}")
        if self._episode is None or self._episode.done:
            raise RuntimeError("only a live episode can fork: call reset() (and do not end the episode) first")
        settings = dataclasses.replace(self.settings, pool=None)  # the branches must not depend on our pool
        episodes = run_sync(_fork_episodes(self._episode, settings, n))
        return [self._branch(episode, settings) for episode in episodes]

    def _branch(self, episode: Episode, settings: EpisodeSettings) -> SWEEnv:
        """A shallow copy of this env (tasks, spaces, provider) running ``episode``, owning only its sandboxes."""
        branch = copy.copy(self)
        branch.settings, branch.pool, branch._episode = settings, None, episode
        branch._closing = []
        branch._owner_pid = os.getpid()
        branch._np_random = copy.deepcopy(self._np_random)
        return branch

    def close(self) -> None:
        episode, self._episode = self._episode, None
        self._release(episode, wait=True)
        for future in self._closing:
            try:
                future.result()
            except SandboxError as exc:
                log.warning("could not close a sandbox: %s", exc)
        self._closing.clear()
        if self.pool is not None:
            run_sync(self.pool.close())
        super().close()

    def _release(self, episode: Episode | None, *, wait: bool = False) -> None:
        """Close an episode's sandbox; in the background unless ``wait``."""
        self._closing = [f for f in self._closing if not f.done()]
        if episode is None or episode.sandbox is None:
            return
        future = asyncio.run_coroutine_threadsafe(episode.close(), background_loop())
        if not wait or in_loop_thread():  # e.g. __del__ run by the GC on the loop: never block it
            self._closing.append(future)
            return
        try:
            future.result()
        except SandboxError as exc:
            log.warning("could not close sandbox of %s: %s", episode.task.instance_id, exc)

    def __del__(self) -> None:
        # At interpreter exit the atexit hook in swe_gym.sandbox.loop closes sandboxes instead.
        owner = getattr(self, "_owner_pid", None) == os.getpid()
        if owner and getattr(self, "_episode", None) is not None and not sys.is_finalizing():
            self._release(self._episode, wait=True)


async def _fork_episodes(episode: Episode, settings: EpisodeSettings, n: int) -> list[Episode]:
    """``n`` forks of ``episode``; if one fails, the others are closed and its error raised."""
    results = await asyncio.gather(*(episode.fork(settings) for _ in range(n)), return_exceptions=True)
    made = [result for result in results if isinstance(result, Episode)]
    failures = [result for result in results if not isinstance(result, Episode)]
    if failures:
        await asyncio.gather(*(branch.close() for branch in made), return_exceptions=True)
        raise failures[0]
    return made


def as_command(action: Any) -> str:
    """An action as the command it runs (text as an observation shows it: `swe_gym.shown_text`)."""
    if isinstance(action, str):
        return action
    raise TypeError(
        f"an SWEEnv action is a bash command string (or, with tools=..., a tool call), got {type(action).__name__}"
    )
