"""The NeMo RL environment on real sandboxes (bundled tasks, `local` provider), real torch tensors, a real Ray actor."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Iterator
from typing import Any

import pytest

from swe_gym.envs.episode import Episode
from swe_gym.errors import ConfigError
from swe_gym.integrations import nemo_rl
from swe_gym.integrations.nemo_rl import (
    EPISODE_TAG,
    ActionFormatError,
    EnvironmentInterface,
    EnvironmentReturn,
    SWEGymEnvironment,
    build_prompt,
    parse_action,
)
from swe_gym.sandbox import current_run_id
from swe_gym.tasks import load_tasks
from swe_gym.tools import TOOL_NAMES, tool_schemas
from tests.conftest import IN_CI, kill_from_outside, leftover_sandboxes, provider_setup

if IN_CI:  # CI installs the nemo_rl extra: a missing torch there is a failure, not a skip
    import torch
else:
    torch = pytest.importorskip("torch", reason="the NeMo RL env returns torch tensors (pip install torch)")

TASKS = load_tasks("bundled")


def make_env(**overrides: Any) -> SWEGymEnvironment:
    config, _ = provider_setup("local")
    cfg: dict[str, Any] = {"provider": config, "max_steps": 10, "grade_on_truncation": False}
    cfg.update(overrides)
    return SWEGymEnvironment(cfg)


@pytest.fixture
def env() -> Iterator[SWEGymEnvironment]:
    environment = make_env()
    yield environment
    environment.shutdown()
    assert not leftover_sandboxes()["local"]


def tag(metadata: dict[str, Any]) -> str:
    return EPISODE_TAG.format(metadata["episode_id"])


def untagged(content: str, metadata: dict[str, Any]) -> str:
    """An episode's first observation without the tag it starts with (how post-processing finds its row)."""
    assert content.startswith(tag(metadata) + "\n"), content
    return content[len(tag(metadata)) + 1 :]


def bash(command: str) -> str:
    return f"THOUGHT: let me act.\n\n```bash\n{command}\n```\n"


def gold_action(index: int) -> str:
    return bash(f"git apply <<'EOF_GOLD'\n{TASKS[index].patch}\nEOF_GOLD")


class Conversation:
    """One NeMo RL sample: its message log (as ``step`` gets it) and its ``extra_env_info``."""

    def __init__(self, instance_id: str) -> None:
        self.log: list[dict[str, str]] = [{"role": "user", "content": build_prompt(TASKS_BY_ID[instance_id])}]
        self.meta: dict[str, Any] | None = {"instance_id": instance_id}

    def say(self, content: str) -> list[dict[str, str]]:
        self.log.append({"role": "assistant", "content": content})
        return list(self.log)

    def hear(self, out: EnvironmentReturn, i: int) -> None:
        """What NeMo RL's rollout does: append the observation; keep the metadata only while it continues."""
        self.log.append(out.observations[i])
        if not bool(out.terminateds[i]) and out.metadata[i] is not None:
            self.meta = out.metadata[i]


TASKS_BY_ID = {task.instance_id: task for task in TASKS}


def turn(environment: SWEGymEnvironment, convs: list[Conversation], replies: list[str]) -> EnvironmentReturn:
    out = environment.step([c.say(r) for c, r in zip(convs, replies, strict=True)], [c.meta for c in convs])
    for i, conv in enumerate(convs):
        conv.hear(out, i)
    return out


def nemo_batch(convs: list[Conversation]) -> dict[str, Any]:
    """The finished rollout batch NeMo RL hands to ``global_post_process_and_metrics``."""
    return {
        "message_log": [c.log for c in convs],
        "extra_env_info": [c.meta for c in convs],
        "loss_multiplier": torch.ones(len(convs)),
    }


# -- types ----------------------------------------------------------------------------------


def test_types_are_structurally_nemo_rls() -> None:
    # NVIDIA-NeMo/RL nemo_rl/environments/interfaces.py (commit 7ea279ab), lines 26-51:
    #   class EnvironmentReturn(NamedTuple, Generic[MetadataT]):
    #       observations, metadata, next_stop_strings, rewards, terminateds, answers
    assert EnvironmentReturn._fields == (
        "observations",
        "metadata",
        "next_stop_strings",
        "rewards",
        "terminateds",
        "answers",
    )
    # Same file, lines 54-90: an abc.ABC with two abstract methods and these parameters.
    assert inspect.isabstract(EnvironmentInterface)
    assert EnvironmentInterface.__abstractmethods__ == frozenset({"step", "global_post_process_and_metrics"})
    assert list(inspect.signature(EnvironmentInterface.step).parameters) == ["self", "message_log_batch", "metadata"]
    assert list(inspect.signature(EnvironmentInterface.global_post_process_and_metrics).parameters) == [
        "self",
        "batch",
    ]
    assert issubclass(SWEGymEnvironment, EnvironmentInterface) and not inspect.isabstract(SWEGymEnvironment)
    # NeMo RL's eval path (evals/eval.py:387) passes a third positional argument, return_extracted_answer.
    params = ["self", "message_log_batch", "metadata", "return_extracted_answer"]
    assert list(inspect.signature(SWEGymEnvironment.step).parameters) == params
    assert callable(SWEGymEnvironment.shutdown)  # grpo.py calls environment.shutdown.remote()
    if not nemo_rl.NEMO_RL_AVAILABLE:
        assert EnvironmentReturn.__module__ == "swe_gym.integrations.nemo_rl.types"


def test_parse_action() -> None:
    assert parse_action(bash("ls -la")) == "ls -la"
    assert parse_action("```sh\necho 1\necho 2\n```") == "echo 1\necho 2"
    assert parse_action("see\n```python\nprint(1)\n```\n```bash\nls\n```") == "ls"  # non-shell blocks ignored
    assert parse_action("<bash>cat x</bash>", action_format="tag") == "cat x"
    assert parse_action("<cmd>pwd</cmd>", action_format="tag", tag="cmd") == "pwd"
    for bad in ("no command at all", bash("ls") + bash("pwd"), "```bash\n\n```"):
        with pytest.raises(ActionFormatError):
            parse_action(bad)


# -- episodes ---------------------------------------------------------------------------------


def test_batch_runs_concurrently_gold_resolves_format_error_continues(
    env: SWEGymEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    convs = [Conversation(TASKS[i].instance_id) for i in range(3)]
    # Each of the three commands waits, before it runs, until all three are under way: a batch run one
    # sample after another would leave the first waiting alone. No clock is read, so a slow machine cannot
    # fail it; the wait's limit only keeps a serial implementation from hanging the test.
    rendezvous = asyncio.Barrier(3)
    alone: list[str] = []
    real_step = Episode.step

    async def step_together(self: Episode, command: str) -> Any:
        if command.startswith("echo "):
            try:
                await asyncio.wait_for(rendezvous.wait(), 120)
            except TimeoutError:
                alone.append(command)
        return await real_step(self, command)

    monkeypatch.setattr(Episode, "step", step_together)
    out = turn(env, convs, [bash("echo one"), bash("echo two"), bash("echo three")])
    monkeypatch.undo()
    assert not alone, f"{alone} waited alone: the batch did not run its samples concurrently"
    assert [untagged(o["content"], m) for o, m in zip(out.observations, out.metadata, strict=True)] == [
        "one\n",
        "two\n",
        "three\n",
    ]
    assert isinstance(out, EnvironmentReturn)
    assert out.rewards.dtype == torch.float32 and out.rewards.shape == (3,) and not out.rewards.any()
    assert out.terminateds.dtype == torch.bool and not out.terminateds.any()
    assert out.answers == [None, None, None] and out.next_stop_strings == [None, None, None]
    ids = [m["episode_id"] for m in out.metadata]
    assert len(set(ids)) == 3 and all(m["step"] == 1 and m["masked"] is False for m in out.metadata)
    assert sorted(env.live_episodes) == sorted(ids)

    out = turn(env, convs, [gold_action(0), bash("echo untouched > /dev/null"), "I think I should look around."])
    assert all(o["role"] == "environment" for o in out.observations)
    assert not out.terminateds.any()
    assert "format error" in out.observations[2]["content"] and out.metadata[2]["format_error"] is True
    assert out.metadata[2]["episode_id"] == ids[2]

    out = turn(env, convs, [bash("submit"), bash("submit"), bash("echo still here")])
    assert out.rewards.tolist() == [1.0, 0.0, 0.0]
    assert out.terminateds.tolist() == [True, True, False]
    assert out.metadata[0]["resolved"] is True and out.metadata[0]["masked"] is False
    assert out.metadata[1]["resolved"] is False
    assert "diff --git" in out.answers[0] and out.answers[2] is None
    assert "RESOLVED" in out.observations[0]["content"]
    assert out.next_stop_strings[2] is None and env.live_episodes == [ids[2]]

    # The rollout ends here (e.g. max_rollout_turns): NeMo RL never tells the env about episode 2.
    batch, metrics = env.global_post_process_and_metrics(nemo_batch(convs))
    assert batch["mask_sample"].tolist() == [False, False, False]
    assert batch["loss_multiplier"].tolist() == [1.0, 1.0, 1.0]
    assert metrics["swe_gym/num_episodes"] == 3 and metrics["swe_gym/unmatched_samples"] == 0
    assert metrics["swe_gym/resolved_rate"] == pytest.approx(1 / 3)
    assert metrics["swe_gym/masked_rate"] == 0.0 and metrics["swe_gym/abandoned_episodes"] == 1
    assert metrics["swe_gym/mean_steps"] == pytest.approx(3.0)
    assert env.live_episodes == [] and not leftover_sandboxes()["local"]


def test_unknown_or_finished_metadata_is_masked_never_raised(env: SWEGymEnvironment) -> None:
    done = Conversation(TASKS[0].instance_id)
    out = turn(env, [done], [bash("true")])
    turn(env, [done], [bash("submit")])
    finished_meta = out.metadata[0]
    cases: list[tuple[Any, str]] = [
        ({"instance_id": "no-such-task"}, "unknown instance_id"),
        (None, "metadata must be a dict"),
        ({"instance_id": TASKS[1].instance_id, "episode_id": "e-gone", "step": 4}, "unknown episode e-gone"),
        (finished_meta, "already ended"),
        ({"instance_id": TASKS[1].instance_id, "episode_id": 7}, "episode_id must be a string"),
    ]
    logs = [[{"role": "assistant", "content": bash(f"echo {i}")}] for i in range(len(cases))]
    out = env.step(logs, [meta for meta, _ in cases])
    rejected = out.observations
    assert out.terminateds.all() and not out.rewards.any()
    for (_, reason), meta, obs in zip(cases, out.metadata, out.observations, strict=True):
        assert meta["masked"] is True and reason in meta["masked_reason"], meta
        assert "masked" in obs["content"]
    assert env.live_episodes == [] and not leftover_sandboxes()["local"]

    # The same episode twice in one batch: the first runs, the repeat is masked.
    fresh = {"instance_id": TASKS[1].instance_id, "episode_id": "mine-1"}  # a caller-chosen id, step 0
    out = env.step([[{"role": "assistant", "content": bash("echo hi")}]] * 2, [fresh, fresh])
    assert (
        out.observations[0]["content"] == "[swe_gym episode mine-1]\nhi\n" and out.metadata[0]["episode_id"] == "mine-1"
    )
    assert out.terminateds.tolist() == [False, True] and "more than once" in out.metadata[1]["masked_reason"]

    # Masked samples reach NeMo RL's loss mask through post-processing.
    batch = {
        "message_log": [[*log, obs] for log, obs in zip(logs, rejected, strict=True)],
        "extra_env_info": [meta for meta, _ in cases],
        "loss_multiplier": torch.ones(len(cases)),
    }
    batch, metrics = env.global_post_process_and_metrics(batch)
    assert batch["mask_sample"].all() and not batch["loss_multiplier"].any()
    assert metrics["swe_gym/masked_rate"] == 1.0


def test_last_message_must_be_the_assistants(env: SWEGymEnvironment) -> None:
    out = env.step([[{"role": "user", "content": bash("ls")}]], [{"instance_id": TASKS[0].instance_id}])
    assert not out.terminateds[0] and "not the assistant's" in out.observations[0]["content"]
    with pytest.raises(ValueError, match="one of each per sample"):
        env.step([[{"role": "assistant", "content": bash("ls")}]], [])


def test_dead_sandbox_masks_the_sample_and_post_processing_masks_its_loss(env: SWEGymEnvironment) -> None:
    convs = [Conversation(TASKS[0].instance_id), Conversation(TASKS[1].instance_id)]
    out = turn(env, convs, [bash("true"), bash("true")])
    kill_from_outside(env.host.episode(out.metadata[0]["episode_id"]).sandbox)
    out = turn(env, convs, [bash("ls"), bash("echo fine")])
    assert out.terminateds.tolist() == [True, False] and out.rewards.tolist() == [0.0, 0.0]
    assert out.metadata[0]["masked"] is True and "sandbox died" in out.metadata[0]["masked_reason"]
    assert out.observations[1]["content"] == "fine\n"
    batch, metrics = env.global_post_process_and_metrics(nemo_batch(convs))
    assert batch["mask_sample"].tolist() == [True, False]
    assert batch["loss_multiplier"].tolist() == [0.0, 1.0]
    assert metrics["swe_gym/abandoned_episodes"] == 1 and env.live_episodes == []


def test_format_errors_count_toward_max_steps() -> None:
    environment = make_env(max_steps=2)
    try:
        conv = Conversation(TASKS[0].instance_id)
        out = turn(environment, [conv], ["no command"])
        assert not out.terminateds[0] and out.metadata[0]["format_error"] is True
        out = turn(environment, [conv], ["still no command"])
        assert out.terminateds[0] and out.metadata[0]["truncated"] is True and out.metadata[0]["masked"] is False
        assert environment.live_episodes == [] and not leftover_sandboxes()["local"]
    finally:
        environment.shutdown()


def test_tag_format_and_stop_strings() -> None:
    environment = make_env(action_format="tag", observation_role="user")
    try:
        conv = Conversation(TASKS[0].instance_id)
        out = turn(environment, [conv], ["<bash>echo tagged</bash>"])
        assert out.observations == [{"role": "user", "content": f"{tag(out.metadata[0])}\ntagged\n"}]
        assert out.next_stop_strings == [["</bash>"]]
        assert "<bash>" in build_prompt(TASKS[0], environment.config)
    finally:
        environment.shutdown()
    assert not leftover_sandboxes()["local"]
    with pytest.raises(RuntimeError, match="shut down"):
        environment.step([conv.say(bash("ls"))], [conv.meta])


def test_config_errors_are_clear() -> None:
    with pytest.raises(ConfigError, match="max_steps"):
        SWEGymEnvironment({"max_steps": 0})
    with pytest.raises(ConfigError, match="action_format"):
        SWEGymEnvironment({"action_format": "json"})


def test_register_with_nemo_rl() -> None:
    if not nemo_rl.NEMO_RL_AVAILABLE:
        with pytest.raises(ConfigError, match="empty placeholder"):
            nemo_rl.register_with_nemo_rl()
        return
    from nemo_rl.distributed.ray_actor_environment_registry import ACTOR_ENVIRONMENT_REGISTRY
    from nemo_rl.environments.utils import ENV_REGISTRY

    assert nemo_rl.register_with_nemo_rl("swe_gym_test") == "swe_gym_test"
    assert ENV_REGISTRY["swe_gym_test"]["actor_class_fqn"] == nemo_rl.ACTOR_CLASS_FQN
    assert nemo_rl.ACTOR_CLASS_FQN in ACTOR_ENVIRONMENT_REGISTRY


# -- as a Ray actor -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[Any]:
    if IN_CI:
        import ray
    else:
        ray = pytest.importorskip("ray", reason="the Ray actor test needs ray (pip install 'swe_gym[ray]')")
    # address="local": a cluster of our own, never one another process on this machine started
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def test_as_a_ray_actor(ray_cluster: Any) -> None:
    ray = ray_cluster
    actor_class = nemo_rl.SWEGymEnvironmentActor
    assert actor_class is nemo_rl.SWEGymEnvironmentActor  # made once
    config, _ = provider_setup("local")
    # As NeMo RL's create_env does: actor_class.options(runtime_env=...).remote(env_config)
    actor = actor_class.options(runtime_env={"env_vars": {"SWE_GYM_RUN_ID": current_run_id()}}).remote(
        {"provider": config, "max_steps": 5}
    )
    try:
        conv = Conversation(TASKS[0].instance_id)
        for reply in (gold_action(0), bash("submit")):
            out = ray.get(actor.step.remote([conv.say(reply)], [conv.meta]), timeout=240)
            conv.hear(out, 0)
        assert isinstance(out.rewards, torch.Tensor) and out.rewards.tolist() == [1.0]
        assert out.terminateds.tolist() == [True] and out.metadata[0]["resolved"] is True
        batch, metrics = ray.get(actor.global_post_process_and_metrics.remote(nemo_batch([conv])), timeout=60)
        assert metrics["swe_gym/resolved_rate"] == 1.0 and batch["mask_sample"].tolist() == [False]
        ray.get(actor.shutdown.remote(), timeout=10)  # grpo.py gives shutdown 10 s
    finally:
        ray.kill(actor)
    assert not leftover_sandboxes()["local"]


def test_per_sample_calls_to_the_actor_run_concurrently(ray_cluster: Any) -> None:
    """NeMo RL's async rollout sends one ``step`` per sample; the actor serves them at once, not in turn."""
    ray = ray_cluster
    config, _ = provider_setup("local")
    actor = nemo_rl.SWEGymEnvironmentActor.options(
        runtime_env={"env_vars": {"SWE_GYM_RUN_ID": current_run_id()}}
    ).remote({"provider": config, "max_steps": 5})
    try:
        convs = [Conversation(TASKS[0].instance_id) for _ in range(4)]
        command = bash("date +%s.%N; sleep 2; date +%s.%N")
        refs = [actor.step.remote([c.say(command)], [c.meta]) for c in convs]
        outs = ray.get(refs, timeout=240)
        spans = [[float(x) for x in out.observations[0]["content"].split("\n")[1:3]] for out in outs]
        assert max(start for start, _ in spans) < min(end for _, end in spans), spans  # all four overlapped
        ray.get(actor.shutdown.remote(), timeout=10)
    finally:
        ray.kill(actor)
    assert not leftover_sandboxes()["local"]


def test_same_history_different_outcomes_each_row_gets_its_own(env: SWEGymEnvironment) -> None:
    """GRPO repeats a prompt; identical replies give identical histories. The rows are told apart by
    the episode tag of their first observation, never by history."""
    convs = [Conversation(TASKS[0].instance_id) for _ in range(6)]
    out = turn(env, convs, [bash("true")] * 6)
    kill_from_outside(env.host.episode(out.metadata[3]["episode_id"]).sandbox)
    out = turn(env, convs, [bash("true")] * 6)
    assert out.metadata[3]["masked"] is True and not any(m["masked"] for i, m in enumerate(out.metadata) if i != 3)
    for conv in convs:  # the rollout ends (max turns): the metadata NeMo RL keeps is the one sent last
        conv.meta = {"instance_id": TASKS[0].instance_id}
    batch, metrics = env.global_post_process_and_metrics(nemo_batch(convs))
    assert batch["mask_sample"].tolist() == [False, False, False, True, False, False]
    assert metrics["swe_gym/abandoned_episodes"] == 5 and env.live_episodes == []
    assert not leftover_sandboxes()["local"]


def test_rollout_hook_masks_rows_fixes_their_reward_and_closes_cut_episodes(env: SWEGymEnvironment) -> None:
    """`post_process_rollout` (what the hook runs after each NeMo RL rollout) on a batch shaped like
    ``run_multi_turn_rollout``'s: two prompt groups, one masked sample, one sample cut on its first turn."""
    from swe_gym.integrations.nemo_rl.hook import post_process_rollout

    convs = [Conversation(TASKS[0].instance_id) for _ in range(3)] + [Conversation(TASKS[1].instance_id)]
    gold = [gold_action(0), gold_action(0), bash("true"), bash("true")]
    out = turn(env, convs, gold)
    kill_from_outside(env.host.episode(out.metadata[2]["episode_id"]).sandbox)
    out = turn(env, convs[:3], [bash("submit"), bash("submit"), bash("true")])
    # Masked at once, before its group's gradings end: the task's mean the env knew then (none yet: 0).
    assert out.rewards.tolist() == [1.0, 1.0, 0.0] and out.metadata[2]["masked"]
    convs[3].meta = {"instance_id": TASKS[1].instance_id}  # cut on its first turn: NeMo RL dropped its id
    batch = {
        **nemo_batch(convs),
        "task_name": ["swe_gym"] * 4,
        "total_reward": torch.tensor([1.0, 1.0, 0.0, 0.0]),
    }
    batch, metrics = post_process_rollout(batch, {"total_turns": 7}, {"swe_gym": env, "other": object()})
    assert batch["mask_sample"].tolist() == [False, False, True, False]
    assert batch["loss_multiplier"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert batch["total_reward"].tolist() == [1.0, 1.0, 1.0, 0.0]  # the group's unmasked mean: no baseline shift
    assert metrics["total_turns"] == 7 and metrics["swe_gym/abandoned_episodes"] == 1
    assert env.live_episodes == [] and not leftover_sandboxes()["local"]
    untouched = {"message_log": [[]], "task_name": ["other"], "total_reward": torch.tensor([0.5])}
    assert post_process_rollout(untouched, {}, {"other": object()})[0] is untouched and "mask_sample" not in untouched


# -- tool calls: OpenAI tool_calls in the message, Hermes <tool_call> in its text -----------------------


def openai_call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """An OpenAI ``tool_calls`` entry, as an OpenAI-compatible server's tool parser leaves it in the message."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def hermes(name: str, **arguments: Any) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def say_calls(conv: Conversation, content: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    conv.log.append({"role": "assistant", "content": content, "tool_calls": calls})
    return list(conv.log)


GLOB = next(i for i, t in enumerate(TASKS) if t.instance_id == "swe-gym__globmatch-1")  # a one-hunk gold patch


def gold_hunk() -> tuple[str, str, str]:
    lines = TASKS[GLOB].patch.splitlines()
    path = next(line[len("+++ b/") :] for line in lines if line.startswith("+++ b/"))
    body = lines[next(i for i, line in enumerate(lines) if line.startswith("@@")) + 1 :]
    old = "\n".join(line[1:] for line in body if line[:1] in (" ", "-"))
    new = "\n".join(line[1:] for line in body if line[:1] in (" ", "+"))
    return path, old, new


def test_openai_tool_calls_are_actions_and_results_are_tool_messages(env: SWEGymEnvironment) -> None:
    path, old, new = gold_hunk()
    conv = Conversation(TASKS[GLOB].instance_id)
    assert env.tool_schemas() == tool_schemas(list(TOOL_NAMES))  # tool calls accepted: all tools by default
    script = [
        [openai_call("c1", "str_replace_editor", command="view", path=path)],
        [openai_call("c2", "str_replace_editor", command="str_replace", path=path, old_str=old, new_str=new)],
        [openai_call("c3", "submit")],
    ]
    outs = []
    for calls in script:
        out = env.step([say_calls(conv, "", calls)], [conv.meta])
        conv.hear(out, 0)
        outs.append(out)
    first, edit, submit = (out.observations[0] for out in outs)
    assert (
        first["role"] == "tool" and first["tool_call_id"] == "c1" and set(first) == {"role", "tool_call_id", "content"}
    )
    assert "with line numbers" in untagged(first["content"], outs[0].metadata[0])
    assert edit == {"role": "tool", "tool_call_id": "c2", "content": edit["content"]} and "Edited" in edit["content"]
    assert submit["tool_call_id"] == "c3" and "RESOLVED" in submit["content"]
    assert outs[2].rewards.tolist() == [1.0] and outs[2].terminateds.tolist() == [True]
    assert outs[2].metadata[0]["resolved"] is True and path in outs[2].answers[0]
    assert [out.metadata[0].get("step") for out in outs] == [1, 2, 3]
    # A finished row whose observations are tool messages is still matched to its episode.
    batch, metrics = env.global_post_process_and_metrics(nemo_batch([conv]))
    assert metrics["swe_gym/num_episodes"] == 1 and metrics["swe_gym/resolved_rate"] == 1.0
    assert batch["mask_sample"].tolist() == [False]
    assert not leftover_sandboxes()["local"]


def test_hermes_tool_calls_run_in_order_in_one_turn_and_bad_ones_are_answered(env: SWEGymEnvironment) -> None:
    conv = Conversation(TASKS[0].instance_id)
    calls = [hermes("bash", command="echo one > f.txt && echo one"), hermes("bash", command="cat f.txt; echo two")]
    two = "I'll write and read.\n" + "\n".join(calls)
    out = turn(env, [conv], [two])
    message = out.observations[0]
    assert message["role"] == "tool" and message["tool_call_ids"] == [None, None]  # Hermes calls carry no id
    assert untagged(message["content"], out.metadata[0]) == (
        "<tool_response>\none\n\n</tool_response>\n<tool_response>\none\ntwo\n\n</tool_response>"
    )
    assert out.metadata[0]["step"] == 1 and env.host.episode(out.metadata[0]["episode_id"]).steps == 2
    # A well-formed call the env cannot run is answered by the env (a step); its id, when given, comes back.
    unknown = '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}, "id": "h1"}</tool_call>'
    out = turn(env, [conv], [unknown])
    assert out.observations[0] == {
        "role": "tool",
        "tool_call_id": "h1",
        "content": out.observations[0]["content"],
    }
    assert "unknown tool 'grep'" in out.observations[0]["content"] and not out.metadata[0]["format_error"]
    # Broken markup is a format error (no step), shown as the text format's errors are.
    for broken, reason in [
        ('<tool_call>{"name": </tool_call>', "not valid JSON"),
        ('<tool_call>{"name": "bash", "arguments": {"command": "ls"}}', "not closed with </tool_call>"),
    ]:
        out = turn(env, [conv], [broken])
        assert out.observations[0]["role"] == "environment" and reason in out.observations[0]["content"]
        assert out.metadata[0]["format_error"] is True
    out = turn(env, [conv], [bash("cat f.txt")])  # the bash block is still an action
    assert out.observations[0] == {"role": "environment", "content": "one\n"}
    out = turn(env, [conv], [hermes("submit")])
    assert out.terminateds.tolist() == [True] and out.observations[0]["role"] == "tool"
    assert "f.txt" in out.answers[0] and out.metadata[0]["resolved"] is False
    assert env.live_episodes == [] and not leftover_sandboxes()["local"]


def test_accept_actions_decides_what_a_turn_is_and_max_steps_counts_tool_turns() -> None:
    text_only = make_env(accept_actions=["text"])
    try:
        assert text_only.tool_schemas() == [] and "<tool_call>" not in build_prompt(TASKS[0], text_only.config)
        conv = Conversation(TASKS[0].instance_id)
        out = text_only.step(
            [say_calls(conv, bash("echo text wins"), [openai_call("c1", "bash", command="ls")])], [None]
        )
        assert out.observations[0]["role"] == "environment"  # NeMo RL's rollout keeps no tool_calls key anyway
    finally:
        text_only.shutdown()
    tools_only = make_env(accept_actions=["hermes"], tools=["bash", "submit"], max_steps=2)
    try:
        prompt = build_prompt(TASKS[0], tools_only.config)
        assert "think, then call a tool" in prompt and "(bash, submit)" in prompt and "```bash" not in prompt
        assert [t["function"]["name"] for t in tools_only.tool_schemas()] == ["bash", "submit"]
        conv = Conversation(TASKS[0].instance_id)
        out = turn(tools_only, [conv], [bash("ls")])
        assert "your reply calls no tool (write each call as <tool_call>" in out.observations[0]["content"]
        out = turn(tools_only, [conv], [hermes("str_replace_editor", command="view", path=".")])
        assert "unknown tool 'str_replace_editor'; this env's tools: bash, submit" in out.observations[0]["content"]
        assert out.terminateds.tolist() == [True] and out.metadata[0]["truncated"] is True  # 2 turns: max_steps
        assert out.observations[0]["role"] == "tool" and out.metadata[0]["masked"] is False
    finally:
        tools_only.shutdown()
    assert not leftover_sandboxes()["local"]
    with pytest.raises(ConfigError, match="accept_actions"):
        SWEGymEnvironment({"accept_actions": []})
