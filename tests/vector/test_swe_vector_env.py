"""`SWEVectorEnv` and the warm pool, against the real providers."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import swe_gym  # noqa: F401 - registers the env
from swe_gym.errors import ConfigError, SandboxError
from swe_gym.sandbox import AsyncSandbox, SandboxSpec, SandboxStatus
from swe_gym.sandbox.loop import run_sync
from swe_gym.sandbox.pool import SandboxPool
from swe_gym.sandbox.providers.local import LocalProvider
from swe_gym.tasks import load_tasks
from swe_gym.vector import SWEVectorEnv
from tests.conftest import ISOLATED, RUNNER_IS_PID1, kill_from_outside, leftover_sandboxes, provider_setup

TASKS = load_tasks("bundled")


def make(num_envs: int = 3, provider: str = "local", **kwargs: object) -> SWEVectorEnv:
    config, image = provider_setup(provider)
    kwargs.setdefault("grade_on_truncation", False)
    return gym.make_vec("swe_gym/SWE-v0", num_envs=num_envs, provider=config, image=image, **kwargs)


def test_make_vec_returns_ours_with_batched_spaces() -> None:
    env = make(3, max_steps=4)
    try:
        assert isinstance(env, SWEVectorEnv)
        assert isinstance(env.observation_space, gym.spaces.Tuple) and len(env.observation_space) == 3
        obs, infos = env.reset(seed=0)
        assert isinstance(obs, tuple) and env.observation_space.contains(obs)
        assert infos["_instance_id"].all() and len(set(infos["sandbox_id"])) == 3
        obs, rewards, terminations, truncations, infos = env.step(["echo one", "echo two", "exit 3"])
        assert obs == ("one\n", "two\n", "") and env.observation_space.contains(obs)
        assert rewards.dtype == np.float64 and not terminations.any() and not truncations.any()
        assert list(infos["exit_code"]) == [0, 0, 3] and infos["_exit_code"].all()
        assert env.reset(seed=0)[1]["instance_id"].tolist() == infos_ids(env, seed=0)
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())


def infos_ids(env: SWEVectorEnv, seed: int) -> list[str]:
    return env.reset(seed=seed)[1]["instance_id"].tolist()


def test_next_step_autoreset_and_info_masks() -> None:
    env = make(2, max_steps=5)
    try:
        env.reset(seed=1, options={"task_ids": [TASKS[0].instance_id, None]})
        gold = f"git apply <<'EOF_GOLD'\n{TASKS[0].patch}\nEOF_GOLD"
        env.step([gold, "true"])
        obs, rewards, terminations, truncations, infos = env.step(["submit", "echo still"])
        assert terminations.tolist() == [True, False] and rewards.tolist() == [1.0, 0.0]
        assert infos["_resolved"].tolist() == [True, False] and bool(infos["resolved"][0])
        assert obs[1] == "still\n"
        obs, rewards, terminations, truncations, infos = env.step(["ignored", "echo next"])
        assert "<issue>" in obs[0] and obs[1] == "next\n"  # sub-env 0 restarted, its action ignored
        assert infos["_reset_s"].tolist() == [True, False] and rewards[0] == 0.0
    finally:
        env.close()


def test_same_step_autoreset_reports_final_obs() -> None:
    env = make(2, max_steps=1, autoreset_mode=AutoresetMode.SAME_STEP)
    try:
        env.reset(seed=0)
        obs, _, _, truncations, infos = env.step(["echo last", "echo last"])
        assert truncations.all()
        assert all("<issue>" in o for o in obs)
        assert all("last" in o for o in infos["final_obs"])
        assert infos["_final_info"].all()
    finally:
        env.close()


def test_disabled_autoreset_uses_reset_mask() -> None:
    env = make(2, max_steps=1, autoreset_mode="Disabled")
    try:
        _, infos = env.reset(seed=0)
        first = infos["sandbox_id"].tolist()
        env.step(["true", "true"])
        with pytest.raises(RuntimeError, match="reset_mask"):
            env.step(["true", "true"])
        _, infos = env.reset(options={"reset_mask": np.array([True, False])})
        assert infos["_sandbox_id"].tolist() == [True, False] and infos["sandbox_id"][0] != first[0]
    finally:
        env.close()


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_sync_and_async_vectorization_work(mode: str) -> None:
    provider_setup("local")
    vector_kwargs = {"shared_memory": False} if mode == "async" else {}
    env = gym.make_vec("swe_gym/SWE-v0", num_envs=2, vectorization_mode=mode, vector_kwargs=vector_kwargs, max_steps=3)
    try:
        obs, _ = env.reset(seed=0)
        assert all("<issue>" in o for o in obs)
        obs, *_ = env.step(("echo a", "echo b"))
        assert tuple(obs) == ("a\n", "b\n")
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())


class CountingProvider(LocalProvider):
    """The real local provider, counting how many creates run at once (and failing the first, if asked)."""

    def __init__(self, fail_first: bool = False, **options: object) -> None:
        super().__init__(**options)
        self.active = self.peak = self.calls = 0
        self.fail_first = fail_first

    async def create(self, spec: SandboxSpec):
        self.calls += 1
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if self.fail_first and self.calls == 1:
                raise SandboxError("transient: daemon busy")
            return await super().create(spec)
        finally:
            self.active -= 1


def test_creation_is_concurrent_but_bounded_and_retried() -> None:
    provider_setup("local")
    provider = CountingProvider(fail_first=True, max_concurrent_creates=2)
    # The agents' sandboxes only: no grading sandbox started ahead (prestart_grading would add six creates).
    env = SWEVectorEnv(6, provider=provider, pool_size=0, grade_on_truncation=False, prestart_grading=False)
    try:
        _, infos = env.reset(seed=0)
        assert not infos.get("masked", np.zeros(6)).any()
        assert provider.peak == 2 and provider.calls == 7  # six sandboxes, one retried
    finally:
        env.close()


def test_a_permanent_create_failure_masks_only_its_sub_env() -> None:
    provider_setup("docker")
    broken = TASKS[0].model_copy(update={"instance_id": "broken-image", "image": "swe-gym-no-such-image:0"})
    env = make(3, provider="docker", tasks=[broken, *TASKS[1:3]], pool_size=0, max_steps=5)
    try:
        _, infos = env.reset(options={"task_ids": ["broken-image", TASKS[1].instance_id, TASKS[2].instance_id]})
        assert infos["_masked"].tolist() == [True, False, False]
        assert "swe-gym-no-such-image:0" in infos["masked_reason"][0]
        obs, rewards, terminations, truncations, infos = env.step(["ls", "echo ok", "echo ok"])
        assert truncations.tolist() == [True, False, False] and bool(infos["masked"][0])
        assert obs[1:] == ("ok\n", "ok\n")
    finally:
        env.close()


@pytest.mark.parametrize("provider", ISOLATED)
def test_sandbox_killed_mid_episode_masks_that_sub_env_only(provider: str) -> None:
    """Batched creation on each provider; then one sandbox dies and only its sub-env is masked (on OpenSandbox, whose
    runner the sandbox's own processes can end, it ends unresolved: the control says the environment works)."""
    env = make(3, provider=provider, max_steps=10)
    try:
        env.reset(seed=0)
        kill_from_outside(env.host.episode(1).sandbox)
        obs, rewards, terminations, truncations, infos = env.step(["echo a", "echo b", "echo c"])
        if provider in RUNNER_IS_PID1:  # an outside death: masked
            assert truncations.tolist() == [False, True, False]
            assert infos["_masked"].tolist() == [False, True, False] and "sandbox died" in infos["masked_reason"][1]
        else:  # OpenSandbox: its own processes could have ended it, and a control runs: the agent's doing
            assert terminations.tolist() == [False, True, False] and not infos["masked"][1]
        obs, *_ = env.step(["echo a", "echo b", "echo c"])
        assert obs[0] == "a\n" and "<issue>" in obs[1] and obs[2] == "c\n"
    finally:
        env.close()
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("bad", [{"num_envs": 0}, {"render_mode": "human"}])
def test_bad_arguments_are_config_errors_that_leave_no_sandbox(bad: dict[str, object]) -> None:
    config, _ = provider_setup("local")
    with pytest.raises(ConfigError):  # the warm pool started before the check must go with it
        SWEVectorEnv(**{"num_envs": 4, "provider": config, "pool_size": 2, **bad})
    assert not any(leftover_sandboxes().values())


def test_no_leak_after_an_exception_in_the_training_loop() -> None:
    with pytest.raises(ZeroDivisionError):
        env = make(2)
        try:
            env.reset(seed=0)
            env.step(["true", "true"])
            1 / 0  # noqa: B018 - a trainer bug
        finally:
            env.close()
    assert not any(leftover_sandboxes().values())


def test_pool_hands_out_live_sandboxes_refills_and_respects_ttl() -> None:
    config, _ = provider_setup("local")

    async def scenario() -> None:
        pool = SandboxPool(config, size=2)
        spec = SandboxSpec()
        try:
            pool.prefetch([spec])
            await pool.wait_ready()
            assert pool.ready_count(spec) == 2
            box = await pool.take(spec)
            assert await box.status() is SandboxStatus.RUNNING and pool.stats.hits == 1
            await box.close()
            await asyncio_sleep(0.5)
            await pool.wait_ready()
            assert pool.ready_count(spec) == 2  # refilled in the background
            _, dead = pool._ready[next(iter(pool._ready))][0]
            await _kill_processes(dead)  # it dies while waiting in the pool
            box = await pool.take(spec)
            assert pool.stats.discarded == 1 and await box.status() is SandboxStatus.RUNNING
            await box.close()
            short = SandboxSpec(ttl_s=1.0)
            pool.prefetch([short])
            await pool.wait_ready()
            await asyncio_sleep(0.6)  # past half the TTL: too old to hand out
            box = await pool.take(short)
            assert pool.stats.discarded == 3 and pool.stats.misses == 1  # both short-lived ones
            await box.close()
        finally:
            await pool.close()
        assert pool.ready_count() == 0

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


def test_pool_keeps_ready_sandboxes_for_a_bounded_number_of_specs() -> None:
    """One image per task (as in SWE-bench) must not mean ready sandboxes for every image."""
    config, _ = provider_setup("local")
    specs = [SandboxSpec(env={"IMAGE_STANDIN": str(i)}) for i in range(4)]

    async def scenario() -> None:
        pool = SandboxPool(config, size=1, max_specs=2)
        try:
            pool.prefetch(specs)  # only the first two, in task order
            await pool.wait_ready()
            assert [pool.ready_count(s) for s in specs] == [1, 1, 0, 0]
            box = await pool.take(specs[2])  # a third spec evicts the least recently used one
            await box.close()
            await asyncio_sleep(0.5)
            await pool.wait_ready()
            assert pool.ready_count(specs[0]) == 0 and pool.ready_count(specs[2]) == 1
            assert pool.ready_count() <= pool.size * pool.max_specs
        finally:
            await pool.close()

    run_sync(scenario())
    assert not any(leftover_sandboxes().values())


async def _kill_processes(box: AsyncSandbox) -> None:
    """Kill every process of a local sandbox, as an OOM killer or an operator would."""
    backend = box.backend
    if backend._cgroup is not None:
        backend._cgroup.kill_all()
    backend._proc.kill()
    await backend._proc.wait()
    for _ in range(100):
        if await box.status() is not SandboxStatus.RUNNING:
            return
        await asyncio_sleep(0.05)
    raise AssertionError("the sandbox survived its processes being killed")


async def asyncio_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
