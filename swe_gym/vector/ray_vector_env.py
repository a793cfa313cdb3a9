"""`RayVectorEnv`: `SWEVectorEnv`'s sub-envs in Ray actors spread over the nodes of a Ray cluster.

Each actor hosts an `SWEVectorEnv` over a group of ``envs_per_actor`` sub-envs (default 1) and
creates its provider on its own node (``local`` there, or a shared ``opensandbox`` server), so
sandboxes, resets, steps and gradings run where the actor landed. The driver sends every group
its slice of the batch at once and waits on the futures with a deadline, so a dead or hung actor
never hangs the rollout: its sub-envs end masked (truncated, reward 0, ``infos["masked_reason"]``
``"ray actor died: ..."``) and a new actor takes over on their next reset. Everything else (spaces,
info keys, autoreset modes, masking of sandboxes that cannot start) is `SWEVectorEnv`'s own.

Sandboxes carry the driver's run id (``SWE_GYM_RUN_ID`` is passed to the actors) and a
``swe_gym.ray_actor`` label. An actor's local sandboxes die with its process (bubblewrap's
die-with-parent); what they leave on disk is removed on that node by a task this env schedules
there, and ``swe-gym cleanup --run-id RUN`` finds anything left after a crash of the driver.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
import uuid
import weakref
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from swe_gym.envs.episode import Reset, StepResult
from swe_gym.envs.host import host_config, host_tasks, masked_step
from swe_gym.errors import ConfigError
from swe_gym.sandbox import get_provider
from swe_gym.sandbox.facade import ProviderLike
from swe_gym.sandbox.labels import current_run_id
from swe_gym.tasks import SWETask
from swe_gym.tasks.loader import TaskSource
from swe_gym.vector.batched import BatchedSWEEnv, ResetRequest
from swe_gym.vector.swe_vector_env import SWEVectorEnv

try:
    import ray
    from ray.exceptions import GetTimeoutError, ObjectLostError, RayActorError
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"RayVectorEnv needs Ray: pip install 'swe_gym[ray]' ({exc})") from exc

log = logging.getLogger(__name__)

#: Label (``swe_gym.`` prefixed) naming the actor that created a sandbox.
ACTOR_LABEL = "ray_actor"
#: How long close waits for the actors to close their envs before killing them.
CLOSE_TIMEOUT_S = 60.0
#: How long close waits for the removal of what dead actors left on their nodes.
REAP_TIMEOUT_S = 30.0
#: How long a killed actor may take to be gone.
KILL_WAIT_S = 15.0

_OPEN: weakref.WeakSet[RayVectorEnv] = weakref.WeakSet()
_hooked = False


class RayVectorEnv(BatchedSWEEnv):
    """``num_envs`` SWE episodes stepped together by Ray actors; same options as `SWEVectorEnv`, plus:

    >>> import ray; ray.init()                                             # or an existing cluster
    >>> env = RayVectorEnv(8, provider="local", actor_options={"num_cpus": 0.5}, max_steps=20)
    >>> obs, infos = env.reset(seed=0)
    >>> obs, rewards, terminations, truncations, infos = env.step(["ls"] * 8)
    >>> env.close()

    Args:
        envs_per_actor: sub-envs per actor (they share its node, sandbox pool and fate).
        actor_options: passed to Ray's ``.options()`` for every actor (``num_cpus``, ``memory``,
            ``resources``, ``runtime_env``, ``scheduling_strategy``, ...).
        scheduling_strategy: where actors go (default ``"SPREAD"``: over as many nodes as possible).
        ray_address: the cluster to connect to when Ray is not initialised yet (``None``: Ray's default,
            ``RAY_ADDRESS`` or a new local cluster, shut down again by `close`).
        call_timeout_s: the longest wait for one batch of actor calls (a reset, or a step with its
            grading); an actor that takes longer is killed and its sub-envs end masked.
        pool_size: sandboxes each actor keeps ready (default ``max(1, envs_per_actor // 4)``).
    """

    def __init__(
        self,
        num_envs: int = 1,
        tasks: TaskSource = "bundled",
        provider: ProviderLike = "local",
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        envs_per_actor: int = 1,
        actor_options: dict[str, Any] | None = None,
        scheduling_strategy: Any = "SPREAD",
        ray_address: str | None = None,
        call_timeout_s: float = 1800.0,
        instance_ids: Iterable[str] | None = None,
        split: str = "test",
        limit: int | slice | None = None,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        if envs_per_actor < 1:
            raise ConfigError(f"envs_per_actor must be >= 1, got {envs_per_actor}")
        if call_timeout_s <= 0:
            raise ConfigError(f"call_timeout_s must be > 0, got {call_timeout_s}")
        config = host_config(tasks, provider, instance_ids, split, limit, options)  # a bad option fails here
        # The tasks as the actors' hosts will have them.
        super().__init__(num_envs, config, host_tasks(config), autoreset_mode=autoreset_mode, render_mode=render_mode)
        self.call_timeout_s = call_timeout_s
        self._provider = provider
        self._options = options
        self.groups = [range(i, min(i + envs_per_actor, num_envs)) for i in range(0, num_envs, envs_per_actor)]
        self._owns_ray = not ray.is_initialized()
        if self._owns_ray:
            ray.init(address=ray_address)
        self._uid = uuid.uuid4().hex[:8]
        self._tasks_ref = ray.put(self.tasks)
        runtime_env = dict((actor_options or {}).get("runtime_env") or {})
        runtime_env["env_vars"] = {"SWE_GYM_RUN_ID": current_run_id(), **runtime_env.get("env_vars", {})}
        self._actor_options = {
            "scheduling_strategy": scheduling_strategy,
            "max_concurrency": 2,  # so close() can stop a step that is still running
            **(actor_options or {}),
            "runtime_env": runtime_env,
        }
        self._actor_class = ray.remote(_SubEnvGroup)
        self._actors: list[Any] = [None] * len(self.groups)
        self._names: list[str] = [""] * len(self.groups)
        self._where: list[tuple[str, int] | None] = [None] * len(self.groups)
        self._generation = 0
        self._unreported: list[str | None] = [None] * len(self.groups)  # died in a reset, not yet truncated
        self._reaping: list[Any] = []
        for g in range(len(self.groups)):
            self._spawn(g)
        _OPEN.add(self)
        _hook_exit()

    # -- Gymnasium vector API ------------------------------------------------------------

    def reset(
        self, *, seed: int | Sequence[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        self._check_open()
        request = ResetRequest(self, seed, dict(options or {}))
        for i, source in request.forks:  # a fork copies a sandbox of one actor's node, in that actor
            if self._group_of(i) != self._group_of(source):
                raise ConfigError(
                    f"fork_from[{i}] is {source}, run by another Ray actor: RayVectorEnv forks only within one "
                    f"actor's sub-envs (groups of envs_per_actor={len(self.groups[0])}: {self.groups})"
                )
        super().reset(seed=seed if isinstance(seed, int) else None)
        calls = {}
        for g, group in enumerate(self.groups):
            sub = request.mask[group.start : group.stop]
            if self._actors[g] is None:  # a dead group restarts whole
                self._spawn(g)
                sub = np.ones(len(group), dtype=bool)
            elif not sub.any():
                continue
            fork_from = [None if j is None else j - group.start for j in request.fork_from[group.start : group.stop]]
            calls[g] = self._actors[g].reset.remote(
                request.seeds[group.start : group.stop],
                {
                    **request.options,
                    "reset_mask": sub,
                    "task_ids": request.task_ids[group.start : group.stop],
                    "fork_from": fork_from,
                },
            )
        results = self._gather(calls)
        infos: dict[str, Any] = {}
        for g in calls:
            # A group whose actor died here starts masked; its next step ends that (truncated).
            masked = self._masked(self._unreported[g] or "") if g not in results else None
            dead = [(masked[0], masked[4]) for _ in self.groups[g]] if masked else None
            infos = self.record_resets(infos, zip(self.groups[g], dead or results[g], strict=True))
        return tuple(self.observations), infos

    def _group_of(self, i: int) -> int:
        return next(g for g, group in enumerate(self.groups) if i in group)

    def step(
        self, actions: Sequence[Any]
    ) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        self._check_open()
        commands = self.commands(actions)
        calls, restarting = {}, set()
        for g, group in enumerate(self.groups):
            if self._actors[g] is None and self._unreported[g] is None:  # NEXT_STEP: its new episode starts now
                self._spawn(g)
                calls[g] = self._actors[g].reset.remote(None, {})
                restarting.add(g)
            elif self._actors[g] is not None:
                calls[g] = self._actors[g].step.remote(commands[group.start : group.stop])
        outcomes: list[StepResult | None] = [None] * self.num_envs
        for g, results in self._gather(calls).items():
            for i, result in zip(self.groups[g], results, strict=True):
                outcomes[i] = (result[0], 0.0, False, False, result[1]) if g in restarting else result
        lost = [g for g in range(len(self.groups)) if self._unreported[g] is not None]
        for g in lost:
            for i in self.groups[g]:
                outcomes[i] = self._masked(self._unreported[g])
            self._unreported[g] = None
        rewards, terminations, truncations, infos = self.batch(outcomes)  # type: ignore[arg-type]
        # A live group autoresets itself (its SWEVectorEnv has our mode); a lost one restarts here.
        self.needs_reset[:] = False
        for g in lost:
            self.needs_reset[self.groups[g].start : self.groups[g].stop] = True
        if self.autoreset_mode is AutoresetMode.DISABLED:
            self.needs_reset = terminations | truncations
        elif self.autoreset_mode is AutoresetMode.SAME_STEP and lost:
            finals = {i: (self.observations[i], outcomes[i][4]) for g in lost for i in self.groups[g]}  # type: ignore[index]
            restarted, restart_infos = self.reset(options={"reset_mask": self.needs_reset.copy()})
            for i, (observation, info) in finals.items():
                infos = self._add_info(infos, {"final_obs": observation, "final_info": info}, i)
                infos = self._add_info(infos, unbatch_info(restart_infos, i), i)
                self.observations[i] = restarted[i]
        return tuple(self.observations), rewards, terminations, truncations, infos

    def close_extras(self, **kwargs: Any) -> None:
        """Close every actor's env (and so its sandboxes), kill the actors, clean up after dead ones."""
        _OPEN.discard(self)
        try:
            calls = {g: actor.close.remote() for g, actor in enumerate(self._actors) if actor is not None}
            self._gather(calls, timeout=CLOSE_TIMEOUT_S, closing=True)
        finally:
            _kill(*(actor for actor in self._actors if actor is not None))
            self._actors = [None] * len(self.groups)
            _wait_reapers(self._reaping)
            if self._owns_ray and ray.is_initialized():
                ray.shutdown()

    # -- Ray ---------------------------------------------------------------------------------

    def actor_nodes(self) -> list[str | None]:
        """The Ray node id of each group's actor (``None`` until its first reset, or once it died)."""
        return [
            where[0] if where and actor is not None else None
            for where, actor in zip(self._where, self._actors, strict=True)
        ]

    @property
    def actors(self) -> list[Any]:
        """Each group's actor handle (``None`` where it died and was not replaced yet)."""
        return list(self._actors)

    def _spawn(self, g: int) -> None:
        self._generation += 1
        self._names[g] = f"{self._uid}-{g}-{self._generation}"
        base = self.config.sandbox
        sandbox = base.model_copy(update={"labels": {**base.labels, ACTOR_LABEL: self._names[g]}})
        options = {**self._options, "sandbox": sandbox}
        actor = self._actor_class.options(**self._actor_options).remote(
            len(self.groups[g]), self._tasks_ref, self._provider, self.autoreset_mode, options
        )
        self._actors[g], self._where[g], self._unreported[g] = actor, None, None

    def _gather(self, calls: dict[int, Any], *, timeout: float | None = None, closing: bool = False) -> dict[int, Any]:
        """Each call's result; a group whose actor died or did not answer in time is dropped instead.

        Ctrl-C (any exception but Ray's) while waiting closes the env: nothing keeps running unattended.
        """
        timeout = timeout or self.call_timeout_s
        wheres = {g: self._actors[g].where.remote() for g in calls if self._where[g] is None and not closing}
        waiting = [*calls.values(), *wheres.values()]
        if not waiting:
            return {}
        try:
            _, pending = ray.wait(waiting, num_returns=len(waiting), timeout=timeout)
        except BaseException:
            if not closing:
                self.close()
            raise
        results = {}
        for g, call in calls.items():
            try:
                if call in pending or (g in wheres and wheres[g] in pending):
                    raise GetTimeoutError(f"no answer within {timeout:g}s, so it was killed")
                if g in wheres:
                    self._where[g] = ray.get(wheres[g])
                results[g] = ray.get(call)
            except (RayActorError, ObjectLostError, GetTimeoutError) as exc:
                self._drop(g, f"ray actor died: {_first_line(exc)}", closing=closing)
        return results

    def _drop(self, g: int, reason: str, *, closing: bool = False) -> None:
        """Kill group ``g``'s actor, have its node cleaned, and end its episodes masked (next step)."""
        actor, self._actors[g] = self._actors[g], None
        log.warning("sub-envs %s: %s", list(self.groups[g]), reason)
        if actor is not None:
            _kill(actor)
        if self._where[g] is not None:
            node = self._where[g][0]
            strategy = NodeAffinitySchedulingStrategy(node, soft=False)
            reap = ray.remote(_reap_node).options(num_cpus=0, scheduling_strategy=strategy, max_retries=0)
            self._reaping.append(reap.remote(self._provider, self._names[g]))
        if not closing:
            self._unreported[g] = reason

    def _masked(self, reason: str) -> StepResult:
        return masked_step(reason, self.config.max_observation_chars)

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this vector env is closed")


class _SubEnvGroup:
    """Inside a Ray actor: an `SWEVectorEnv` over one group of sub-envs, returning per-sub-env infos."""

    def __init__(
        self, num_envs: int, tasks: list[SWETask], provider: ProviderLike, mode: AutoresetMode, options: dict
    ) -> None:
        self.env = SWEVectorEnv(num_envs, tasks, provider, autoreset_mode=mode, **options)

    def where(self) -> tuple[str, int]:
        return ray.get_runtime_context().get_node_id(), os.getpid()

    def reset(self, seed: int | list[int | None] | None, options: dict[str, Any]) -> list[Reset]:
        observations, infos = self.env.reset(seed=seed, options=options)
        return [(obs, unbatch_info(infos, j)) for j, obs in enumerate(observations)]

    def step(self, actions: list[str]) -> list[StepResult]:
        observations, rewards, terminations, truncations, infos = self.env.step(actions)
        return [
            (obs, float(rewards[j]), bool(terminations[j]), bool(truncations[j]), unbatch_info(infos, j))
            for j, obs in enumerate(observations)
        ]

    def close(self) -> None:
        self.env.close()


def unbatch_info(infos: dict[str, Any], j: int) -> dict[str, Any]:
    """Sub-env ``j``'s info out of Gymnasium's batched ``infos`` (the inverse of ``VectorEnv._add_info``)."""
    out: dict[str, Any] = {}
    for key, value in infos.items():
        mask = infos.get(f"_{key}")
        if mask is None or not mask[j]:
            continue
        if isinstance(value, dict):
            out[key] = unbatch_info(value, j)
        else:
            item = value[j]
            out[key] = item.item() if isinstance(item, np.generic) else item
    return out


def _reap_node(provider: ProviderLike, actor_name: str) -> list[str]:
    """On a dead actor's node: remove what its sandboxes left there (their processes died with it),
    found by the actor's label through the provider's own cleanup."""
    from swe_gym.sandbox.loop import run_sync

    return run_sync(get_provider(provider).cleanup(labels={ACTOR_LABEL: actor_name}))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _kill(*actors: Any) -> None:
    """Kill the actors and wait (bounded) until they are gone: ``ray.kill`` only asks, and a call sent
    after it may still be served; nothing may create a sandbox after its node was cleaned."""
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
        except Exception as exc:  # already gone, or Ray is shutting down
            log.debug("could not kill actor: %s", exc)
    deadline = time.monotonic() + KILL_WAIT_S
    living = list(actors)
    while living and time.monotonic() < deadline:
        probes = {actor: actor.where.remote() for actor in living}
        ray.wait(list(probes.values()), num_returns=len(probes), timeout=1.0)
        living = [actor for actor, probe in probes.items() if _answers(probe)]
        if living:
            time.sleep(0.1)
    if living:
        log.warning("%d ray actor(s) still answer %ss after being killed", len(living), KILL_WAIT_S)


def _answers(probe: Any) -> bool:
    try:
        ray.get(probe, timeout=0)
    except (RayActorError, ObjectLostError):
        return False
    except GetTimeoutError:
        pass  # no answer yet: ask again
    return True


def _wait_reapers(refs: list[Any]) -> None:
    if not refs:
        return
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=REAP_TIMEOUT_S)
    for ref in refs:
        try:
            if ref in ready:
                log.info("removed what a dead actor left: %s", ray.get(ref))
            else:
                log.warning("cleanup after a dead actor did not finish in %ss; `swe-gym cleanup` will", REAP_TIMEOUT_S)
        except Exception as exc:
            log.warning("cleanup after a dead actor failed (`swe-gym cleanup` will do it): %s", exc)
    refs.clear()


def _hook_exit() -> None:
    """Close envs the program left open at exit; registered after ``ray.init``, so it runs before Ray's."""
    global _hooked
    if not _hooked:
        _hooked = True
        atexit.register(_close_open_envs)


def _close_open_envs() -> None:
    for env in list(_OPEN):
        try:
            env.close()
        except Exception as exc:  # exiting anyway: say so, close the others
            log.warning("could not close a RayVectorEnv at exit: %s", exc)


__all__ = ["RayVectorEnv", "unbatch_info"]
