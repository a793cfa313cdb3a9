"""`SWEGymEnv`: the verifiers env whose every rollout is one swe_gym episode, on one `EpisodeHost`.

The host comes up with the env's serving resources (`Env.start`, inside ``env.serving()``, which ``vf-eval``
and every verifiers runner enter) and closes with them (`Env.stop`: every sandbox of every episode removed,
also after an error or a Ctrl-C). Each rollout runs its episode under its own key and ends it when the
rollout ends, however it ends (graded, masked, failed, cancelled). The seat's harness is the taskset's
(`harness.SWEGymHarness`, one chat completion per segment) on the ``subprocess`` runtime: the model's
commands run only in swe_gym's sandbox, never on the host, and the env plays the run's user (`exchange.play`).
"""

from __future__ import annotations

import asyncio
import uuid

import verifiers.v1 as vf

from swe_gym.envs.host import EpisodeHost
from swe_gym.errors import ConfigError
from swe_gym.integrations.verifiers.exchange import play
from swe_gym.integrations.verifiers.taskset import SWEGymTask, SWEGymTaskset


class SWEGymEnvConfig(vf.EnvConfig):
    """The env's one seat, ``agent`` (``--env.agent.*``): the policy under evaluation."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class SWEGymEnv(vf.Env[SWEGymEnvConfig]):
    """One swe_gym episode per rollout; the score is swe_gym's graded reward (`SWEGymTask.swe_gym_reward`)."""

    host: EpisodeHost | None = None

    async def start(self) -> None:
        taskset = self.taskset
        if not isinstance(taskset, SWEGymTaskset):
            raise ConfigError(f"SWEGymEnv runs swe_gym's taskset, not {type(taskset).__name__}")
        # The host starts its pool and archives with blocking calls: off verifiers' event loop.
        self.host = await asyncio.to_thread(EpisodeHost, taskset.config.host_config())

    async def stop(self) -> None:
        host, self.host = self.host, None
        if host is not None:
            await asyncio.to_thread(host.close)

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        host = self.host
        if host is None:
            raise RuntimeError("SWEGymEnv runs rollouts inside env.serving() (as vf-eval and env.run_slot do)")
        if not isinstance(task, SWEGymTask) or task.data.id not in host.by_id:
            raise ConfigError(f"task {task.data.id!r} is not one of this env's {len(host.tasks)} swe_gym tasks")
        key = f"vf-{uuid.uuid4().hex}"
        try:
            async with agents.agent.interaction(task) as interaction:
                await play(host, key, host.by_id[task.data.id], interaction)
        finally:  # shielded: a cancelled rollout still removes its sandboxes (a closed host removed them all)
            if not host.closed:
                await asyncio.shield(host.call_async(host.end(key)))
