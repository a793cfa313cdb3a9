"""`RayVectorEnv` on a real two-node Ray cluster (two raylets on this machine), local provider under bwrap."""

from __future__ import annotations

import _thread
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import IN_CI

if IN_CI:  # the dev extra installs ray; CI must never skip these
    import ray
else:
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from ray.cluster_utils import Cluster

from swe_gym.cli.main import main as swe_gym_cli
from swe_gym.sandbox import current_run_id, get_provider
from swe_gym.tasks import load_tasks
from swe_gym.vector.ray_vector_env import RayVectorEnv
from tests.conftest import leftover_sandboxes, provider_setup

TASKS = load_tasks("bundled")


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A head and a worker node, each its own raylet with 2 CPUs, on this machine; shut down at the end."""
    provider_setup("local")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    node = {"num_cpus": 2}
    cluster = Cluster(initialize_head=True, head_node_args={**node, "include_dashboard": False})
    try:
        cluster.add_node(**node)
        ray.init(address=cluster.address, logging_level="warning", log_to_driver=False)
        cluster.wait_for_nodes()
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


def make(num_envs: int, **kwargs: object) -> RayVectorEnv:
    config, image = provider_setup("local")
    kwargs.setdefault("grade_on_truncation", False)
    kwargs.setdefault("pool_size", 0)
    kwargs.setdefault("actor_options", {"num_cpus": 0.5})
    return RayVectorEnv(num_envs, provider=config, image=image, **kwargs)


def alive(actors: list) -> list:
    """The actors that still answer."""
    answering = []
    for actor in actors:
        try:
            ray.get(actor.where.remote(), timeout=10)
            answering.append(actor)
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass
    return answering


def runner_pid(sandbox_id: str) -> int:
    meta = json.loads((get_provider("local").config.root / sandbox_id / "meta.json").read_text())
    return meta["runner_pid"]


def wait_dead(pid: int, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while Path(f"/proc/{pid}").exists():
        assert time.monotonic() < deadline, f"sandbox runner {pid} outlived its actor"
        time.sleep(0.1)


def assert_nothing_left(actors: list) -> None:
    assert not alive(actors)
    assert not any(leftover_sandboxes().values())


def test_actors_spread_over_both_nodes_and_batch_like_swe_vector_env(cluster: Cluster) -> None:
    env = make(4, max_steps=5)
    actors = env.actors
    try:
        obs, infos = env.reset(seed=0, options={"task_ids": [TASKS[0].instance_id, None, None, None]})
        assert env.observation_space.contains(obs) and all("<issue>" in o for o in obs)
        assert infos["_instance_id"].all() and len(set(infos["sandbox_id"])) == 4
        assert infos["instance_id"][0] == TASKS[0].instance_id
        assert len(set(env.actor_nodes())) == 2 == len(ray.nodes())
        # The actors label their sandboxes with our run id, so the leak check sees them (the episodes' own, and
        # the grading sandboxes each episode starts ahead, which may still be starting).
        assert set(infos["sandbox_id"]) <= set(leftover_sandboxes()["local"])

        gold = f"git apply <<'EOF_GOLD'\n{TASKS[0].patch}\nEOF_GOLD"
        obs, rewards, terminations, truncations, infos = env.step([gold, "echo one", "echo two", "exit 3"])
        assert obs[1:] == ("one\n", "two\n", "") and rewards.dtype == np.float64
        assert infos["exit_code"].tolist() == [0, 0, 0, 3] and infos["exit_code"].dtype == np.int64
        obs, rewards, terminations, truncations, infos = env.step(["submit", "echo a", "echo b", "echo c"])
        assert terminations.tolist() == [True, False, False, False] and rewards.tolist() == [1.0, 0.0, 0.0, 0.0]
        assert infos["_resolved"].tolist() == [True, False, False, False] and infos["resolved"][0]
        assert infos["report"]["_resolved"][0] and not infos["_masked"][1:].any()
        obs, rewards, terminations, truncations, infos = env.step(["ignored", "echo x", "echo y", "echo z"])
        assert "<issue>" in obs[0] and obs[1:] == ("x\n", "y\n", "z\n")  # NEXT_STEP autoreset of sub-env 0
        assert infos["_reset_s"].tolist() == [True, False, False, False] and rewards[0] == 0.0
    finally:
        env.close()
    env.close()  # twice is fine
    assert_nothing_left(actors)
    with pytest.raises(RuntimeError, match="closed"):
        env.step(["true"] * 4)


def test_forks_stay_within_one_actor(cluster: Cluster) -> None:
    from swe_gym.errors import ConfigError

    env = make(4, envs_per_actor=2, max_steps=5)
    actors = env.actors
    try:
        env.reset(seed=0)
        env.step(["echo prefix > p", "true", "true", "true"])
        obs, infos = env.reset(options={"reset_mask": [False, True, False, False], "fork_from": [None, 0, None, None]})
        assert infos["_forked_from"].tolist() == [False, True, False, False] and infos["step"][1] == 1
        assert env.step(["true", "cat p", "true", "true"])[0][1] == "prefix\n"
        with pytest.raises(ConfigError, match="another Ray actor"):
            env.reset(options={"reset_mask": [False, False, True, False], "fork_from": [None, None, 0, None]})
    finally:
        env.close()
    assert_nothing_left(actors)


def test_a_killed_actor_masks_only_its_sub_envs_and_a_new_actor_takes_over(cluster: Cluster) -> None:
    env = make(4, envs_per_actor=2, max_steps=10)
    first = env.actors
    try:
        _, infos = env.reset(seed=1)
        doomed = [runner_pid(infos["sandbox_id"][i]) for i in (2, 3)]
        ray.kill(first[1])  # the actor of sub-envs 2 and 3, mid-episode
        for pid in doomed:  # bwrap's die-with-parent: the sandboxes go with the actor's process
            wait_dead(pid)
        started = time.monotonic()
        obs, rewards, terminations, truncations, infos = env.step(["echo a", "echo b", "echo c", "echo d"])
        assert time.monotonic() - started < 30
        assert obs[:2] == ("a\n", "b\n") and truncations.tolist() == [False, False, True, True]
        assert infos["_masked"].tolist() == [False, False, True, True] and not rewards.any()
        assert all(reason.startswith("ray actor died: ") for reason in infos["masked_reason"][2:])
        assert "episode masked" in obs[2]
        obs, rewards, _, truncations, infos = env.step(["echo a", "echo b", "echo c", "echo d"])
        assert obs[:2] == ("a\n", "b\n") and all("<issue>" in o for o in obs[2:]) and not truncations.any()
        assert env.actors[1] is not first[1] and env.actors[0] is first[0]
        obs, *_ = env.step(["echo a", "echo b", "echo c", "echo d"])
        assert obs == ("a\n", "b\n", "c\n", "d\n")
        actors = [*first, *env.actors]
    finally:
        env.close()
    assert_nothing_left(actors)  # what the killed actor's sandboxes left was removed on its node


def test_swe_gym_cleanup_finds_what_a_killed_actor_left(cluster: Cluster, capsys: pytest.CaptureFixture) -> None:
    env = make(1, prestart_grading=False)  # one sandbox to find (with it, the grading sandbox is left too)
    try:
        _, infos = env.reset(seed=0)
        sandbox_id = infos["sandbox_id"][0]
        pid = runner_pid(sandbox_id)
        ray.kill(env.actors[0])
        wait_dead(pid)
        assert leftover_sandboxes()["local"] == [sandbox_id]  # its processes are gone, its home is not
        assert swe_gym_cli(["cleanup", "--provider", "local", "--run-id", current_run_id()]) == 0
        removed = capsys.readouterr().out.split("local: removed ", 1)[1].split("(", 1)[1].split(")")[0].split(", ")
        assert removed[0] == sandbox_id  # the sandbox; the rest are the run's saved homes (prepared tasks)
        assert all(name.startswith("local:") for name in removed[1:])
        actors = env.actors
    finally:
        env.close()
    assert_nothing_left(actors)


def test_a_hung_actor_times_out_masked_instead_of_hanging_the_rollout(cluster: Cluster) -> None:
    env = make(2, step_timeout=60, max_steps=10)
    actors = env.actors
    try:
        env.reset(seed=0)
        env.call_timeout_s = 4
        started = time.monotonic()
        obs, _, _, truncations, infos = env.step(["sleep 60", "true"])
        assert time.monotonic() - started < 15  # 60 s of sleep would be a hung rollout
        assert truncations.tolist() == [True, False] and infos["_masked"].tolist() == [True, False]
        assert "no answer within 4s" in infos["masked_reason"][0]
        env.call_timeout_s = 120  # a new actor for sub-env 0 starts now
        obs, *_ = env.step(["echo back", "echo ok"])
        assert "<issue>" in obs[0] and obs[1] == "ok\n"
        actors += env.actors
    finally:
        env.close()
    assert_nothing_left(actors)


@pytest.fixture
def sigint_raises() -> Iterator[None]:
    """Started in the background by a non-interactive shell (as CI may be), we inherit SIGINT ignored,
    and interrupt_main() then does nothing: give it Python's default handler for the test."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_during_a_step_closes_everything(cluster: Cluster, sigint_raises: None) -> None:
    env = make(2, step_timeout=60, max_steps=10)
    actors = env.actors
    env.reset(seed=0)
    timer = threading.Timer(1.0, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        env.step(["sleep 60", "sleep 60"])
    timer.join()
    assert time.monotonic() - started < 30 and env.closed
    assert_nothing_left(actors)
