"""`SWEEnv`: one episode is one task in one sandbox.

``reset`` provisions a sandbox holding the task's repository, ``step`` runs a
bash action in it, and the terminal reward comes from grading the agent's patch
in a fresh sandbox with the task's hidden tests. ``fork`` branches a live
episode into new envs that continue on their own.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import gymnasium as gym

from swe_gym.envs.checkpoint import CheckpointLike, EpisodeCheckpoint
from swe_gym.envs.host import EpisodeHost, host_config
from swe_gym.envs.spaces import env_spaces
from swe_gym.errors import ConfigError
from swe_gym.sandbox import AsyncSandbox
from swe_gym.sandbox.checkpoints import DEFAULT_TTL_S
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.tasks import SWETask
from swe_gym.tasks.loader import TaskSource

#: The host key of an `SWEEnv`'s one episode.
SLOT = 0


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
        max_patch_bytes, patch_timeout: the largest patch read from the work tree (5 MiB), and the seconds
            reading it may take (120); a larger diff or file, or a slower read, ends the episode unresolved with
            ``info["patch_error"]`` saying why.
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
        self.host = EpisodeHost(host_config(tasks, provider, instance_ids, split, limit, options))
        self.render_mode = render_mode
        self.observation_space, self.action_space = env_spaces(
            self.host.config.max_observation_chars, self.host.config.tools
        )
        self._owner_pid = os.getpid()  # a forked copy of this env must not close the parent's sandbox

    @property
    def tasks(self) -> list[SWETask]:
        return self.host.tasks

    @property
    def task(self) -> SWETask | None:
        episode = self.host.episode(SLOT)
        return episode.task if episode else None

    @property
    def sandbox(self) -> AsyncSandbox | None:
        """The running episode's sandbox (None before the first reset, or where its start failed)."""
        episode = self.host.episode(SLOT)
        return episode.sandbox if episode else None

    # -- Gymnasium API -----------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        task = self.host.pick(self.np_random, (options or {}).get("task_id"))
        return self.host.call(self.host.start(SLOT, task))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self.host.act_here(SLOT, action)

    def render(self) -> str | None:
        episode = self.host.episode(SLOT)
        return episode.last_observation if self.render_mode == "ansi" and episode else None

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
        return [self._branch(host) for host in self.host.call(self.host.fork_out(SLOT, n))]

    def _branch(self, host: EpisodeHost) -> SWEEnv:
        """A shallow copy of this env (spaces, render mode, seed state) over ``host``, owning only its sandboxes."""
        branch = copy.copy(self)
        branch.host = host
        branch._owner_pid = os.getpid()
        branch._np_random = copy.deepcopy(self._np_random)
        return branch

    def close(self) -> None:
        self.host.close()
        super().close()

    def __del__(self) -> None:
        # At interpreter exit the atexit hook in swe_gym.sandbox.loop closes sandboxes instead.
        host = getattr(self, "host", None)
        if host is not None and getattr(self, "_owner_pid", None) == os.getpid() and not sys.is_finalizing():
            host.close()

    # -- durable episodes (swe_gym.envs.checkpoint; docs/checkpoints.md) ---------------------------------------

    #: After `resume`: the resumed episode's reset, ``(observation, info)`` as ``reset`` returns them (``info`` has
    #: ``resumed_from``, the checkpoint's id, and ``step``); None on an env made otherwise.
    resumed: tuple[str, dict[str, Any]] | None = None

    def checkpoint(self, *, labels: Mapping[str, str] | None = None, ttl_s: float = DEFAULT_TTL_S) -> EpisodeCheckpoint:
        """Save the live episode so that any process can go on with it (`resume`); this env goes on unaffected.

        The handle is small JSON (``handle.save(path)`` / ``EpisodeCheckpoint.load(path)``): the task, this env's
        options and provider config, the step count, last observation, patch base, editor history and the
        provider's saved copy of the sandbox's file system (taken between commands; processes are not saved, as in
        a fork). It carries our labels, the task id, ``labels`` and a TTL (``ttl_s``, default a day); remove it with
        ``handle.remove()``, or ``swe-gym cleanup --expired`` does once it expired.
        """
        return self.host.call(self.host.checkpoint(SLOT, labels=labels, ttl_s=ttl_s))

    @classmethod
    def resume(cls, checkpoint: CheckpointLike, **overrides: Any) -> SWEEnv:
        """A new env going on with the episode ``checkpoint`` saved (a handle, its dict or JSON, or the path of one
        saved), in any process: its next ``step`` continues it (step count, observation, files, patch base) and is
        graded as it would have been; a later ``reset`` starts a fresh episode, as usual. `resumed` holds its reset.

        The env is built with the checkpoint's arguments (its task source, or the task alone for record sources;
        options; provider config) and ``overrides`` replacing any of them (e.g. ``provider=`` with secrets, or a
        ``pool_size``). The checkpoint is not consumed: resuming it again gives another independent episode (a fork
        of the saved one). A checkpoint past its TTL or removed is a `CheckpointNotFoundError` (an expired one:
        `CheckpointExpiredError`), raised, never a masked or zero-reward episode.
        """
        checkpoint = EpisodeCheckpoint.of(checkpoint)
        env = cls(**{**checkpoint.env_arguments(), **overrides})
        try:
            env.resumed = env.host.call(env.host.resume(SLOT, checkpoint))
        except BaseException:
            env.close()
            raise
        return env
