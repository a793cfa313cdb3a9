"""The episode host's one lifecycle, run through every front end: `SWEEnv`, `SWEVectorEnv`, `RayVectorEnv`
and NeMo RL's `SWEGymEnvironment` (mini-swe-agent's adapter drives an `SWEEnv`).

Each front end is driven by the same scenario through a small driver: a sandbox that cannot start masks
its episode (the rest go on), no image named is the caller's mistake and raises, tool calls run, forks
carry the episode's files, and a close from another thread ends a running step and leaves nothing behind.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
import pytest

from swe_gym.errors import ImageNotSetError
from swe_gym.tasks import load_tasks
from swe_gym.vector import SWEVectorEnv
from tests.conftest import IN_CI, TEST_IMAGE, leftover_sandboxes, provider_setup

BUNDLED = load_tasks("bundled")
GOOD = BUNDLED[0]
#: A task whose image no engine has: its sandbox cannot start.
UNSTARTABLE = BUNDLED[1].model_copy(update={"image": "swe-gym-no-such-image:0"})
TASKS = [GOOD, UNSTARTABLE]

Outcome = tuple[str, float, bool, dict[str, Any]]  # observation, reward, episode over, info


def tool_call(command: str) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry running ``command`` with the bash tool."""
    arguments = json.dumps({"command": command})
    return {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": arguments}}


class Driver(Protocol):
    """One front end, seen as one episode: start it on a task, act in it, close the front end."""

    def start(self, task_id: str) -> dict[str, Any] | None: ...
    def act(self, action: Any) -> Outcome: ...
    def close(self) -> None: ...


class EnvDriver:
    def __init__(self, **options: Any) -> None:
        self.env = gym.make("swe_gym/SWE-v0", **options)

    def start(self, task_id: str) -> dict[str, Any]:
        return self.env.reset(seed=0, options={"task_id": task_id})[1]

    def act(self, action: Any) -> Outcome:
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, float(reward), terminated or truncated, info

    def fork_and_run(self, command: str) -> str:
        (branch,) = self.env.unwrapped.fork(1)
        try:
            return branch.step(command)[0]
        finally:
            branch.close()

    def close(self) -> None:
        self.env.close()


def sub_info(infos: dict[str, Any], i: int) -> dict[str, Any]:
    """Sub-env ``i``'s info out of a batched one (numpy scalars as Python's)."""
    picked = {k: v[i] for k, v in infos.items() if not k.startswith("_") and infos[f"_{k}"][i]}
    return {k: v.item() if isinstance(v, np.generic) else v for k, v in picked.items()}


class VectorDriver:
    """Sub-env 1 is the episode under test; sub-env 0 runs ``GOOD`` beside it, and must be unaffected."""

    def __init__(self, make: Callable[..., Any] = SWEVectorEnv, **options: Any) -> None:
        self.env = make(2, autoreset_mode="Disabled", **options)

    def start(self, task_id: str) -> dict[str, Any]:
        _, infos = self.env.reset(seed=0, options={"task_ids": [GOOD.instance_id, task_id]})
        assert not sub_info(infos, 0).get("masked")
        return sub_info(infos, 1)

    def act(self, action: Any) -> Outcome:
        observations, rewards, terminations, truncations, infos = self.env.step(["echo beside", action])
        assert observations[0] == "beside\n"  # the other sub-env goes on
        return observations[1], float(rewards[1]), bool(terminations[1] or truncations[1]), sub_info(infos, 1)

    def fork_and_run(self, command: str) -> str:
        self.env.reset(options={"reset_mask": np.array([True, False]), "fork_from": [1, None]})
        return self.env.step([command, "true"])[0][0]

    def close(self) -> None:
        self.env.close()


class NemoDriver:
    """NeMo RL starts an episode with its first reply: `start` only names the task."""

    def __init__(self, **options: Any) -> None:
        from swe_gym.integrations.nemo_rl import SWEGymEnvironment

        self.env = SWEGymEnvironment({**options, "grade_on_truncation": False})
        self.log: list[dict[str, Any]] = [{"role": "user", "content": "fix it"}]
        self.meta: dict[str, Any] = {}

    def start(self, task_id: str) -> None:
        self.meta = {"instance_id": task_id}

    def act(self, action: Any) -> Outcome:
        if isinstance(action, dict):
            self.log.append({"role": "assistant", "content": "", "tool_calls": [action]})
        else:
            self.log.append({"role": "assistant", "content": f"```bash\n{action}\n```"})
        out = self.env.step([list(self.log)], [self.meta])
        self.meta = out.metadata[0]
        content = re.sub(r"^\[swe_gym episode [\w-]+\]\n", "", out.observations[0]["content"])  # a first turn's tag
        return content, float(out.rewards[0]), bool(out.terminateds[0]), self.meta

    def close(self) -> None:
        self.env.shutdown()


def ray_vector(*args: Any, **kwargs: Any) -> Any:
    if not IN_CI:
        pytest.importorskip("ray")
    from swe_gym.vector.ray_vector_env import RayVectorEnv

    return RayVectorEnv(*args, actor_options={"num_cpus": 0}, envs_per_actor=2, **kwargs)


def nemo(**options: Any) -> NemoDriver:
    if not IN_CI:
        pytest.importorskip("torch")
    return NemoDriver(**options)


FRONT_ENDS: dict[str, Callable[..., Any]] = {
    "SWEEnv": EnvDriver,
    "SWEVectorEnv": VectorDriver,
    "RayVectorEnv": lambda **options: VectorDriver(ray_vector, **options),
    "NeMo RL": nemo,
}


@pytest.fixture
def docker() -> dict[str, Any]:
    config, _ = provider_setup("docker")
    return {"tasks": TASKS, "provider": config, "image": TEST_IMAGE, "max_steps": 5}


@pytest.fixture
def local() -> dict[str, Any]:
    config, _ = provider_setup("local")
    return {"tasks": TASKS, "provider": config, "max_steps": 5, "step_timeout": 60}


@pytest.fixture
def closed_after() -> Iterator[list[Driver]]:
    """Drivers to close after the test; then not one sandbox of this run may be left."""
    drivers: list[Driver] = []
    yield drivers
    for driver in drivers:
        driver.close()
    assert not any(leftover_sandboxes().values())


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_a_sandbox_that_cannot_start_masks_its_episode(
    front_end: str, docker: dict[str, Any], closed_after: list[Driver]
) -> None:
    driver = FRONT_ENDS[front_end](**docker)
    closed_after.append(driver)
    info = driver.start(UNSTARTABLE.instance_id) or {}
    observation, reward, over, step_info = driver.act("ls")
    masked = info if info.get("masked") else step_info  # NeMo RL starts the episode on its first turn
    assert masked["masked"] is True and "swe-gym-no-such-image:0" in masked["masked_reason"]
    assert over and reward == 0.0 and step_info["masked"] is True
    assert "episode masked" in observation
    driver.start(GOOD.instance_id)  # the front end goes on: the next episode runs
    assert driver.act("echo ok")[0] == "ok\n"


@pytest.mark.parametrize("front_end", ["SWEEnv", "SWEVectorEnv", "NeMo RL"])
def test_no_image_named_is_the_callers_mistake_and_raises(
    front_end: str, docker: dict[str, Any], closed_after: list[Driver]
) -> None:
    driver = FRONT_ENDS[front_end](**{**docker, "image": None})
    closed_after.append(driver)
    with pytest.raises(ImageNotSetError, match="needs an image"):
        driver.start(GOOD.instance_id)
        driver.act("ls")


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_tool_calls_run(front_end: str, local: dict[str, Any], closed_after: list[Driver]) -> None:
    driver = FRONT_ENDS[front_end](**local, tools=["bash", "submit"])
    closed_after.append(driver)
    driver.start(GOOD.instance_id)
    observation, _, over, info = driver.act(tool_call("echo from-a-call"))
    assert observation.rstrip("\n") == "from-a-call" and not over
    assert driver.act("echo plain")[0] == "plain\n"  # a plain bash string still works


@pytest.mark.parametrize("front_end", ["SWEEnv", "SWEVectorEnv", "RayVectorEnv"])
def test_a_fork_carries_the_episode_files(front_end: str, local: dict[str, Any], closed_after: list[Driver]) -> None:
    driver = FRONT_ENDS[front_end](**local)
    closed_after.append(driver)
    driver.start(GOOD.instance_id)
    driver.act("echo before-the-fork > /tmp/mark")
    assert driver.fork_and_run("cat /tmp/mark") == "before-the-fork\n"


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_close_from_another_thread_ends_a_running_step(front_end: str, local: dict[str, Any]) -> None:
    driver = FRONT_ENDS[front_end](**local)
    driver.start(GOOD.instance_id)
    driver.act("true")
    errors: list[BaseException] = []

    def stepper() -> None:
        try:
            driver.act("sleep 30")
        except BaseException as exc:  # what the stepping thread sees
            errors.append(exc)

    thread = threading.Thread(target=stepper)
    thread.start()
    time.sleep(1.0)
    driver.close()
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert len(errors) == 1 and "closed" in str(errors[0]), errors
    assert not any(leftover_sandboxes().values())
