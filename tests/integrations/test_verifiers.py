"""verifiers (0.4) interop: verifiers' own eval runner (`vf-eval`'s `run_eval`) on swe_gym's environment.

(a) the real model (SmolLM2 behind the CI's llama.cpp server) on two bundled tasks: each rollout's score is
    the reward swe_gym's grading gives that episode's patch, graded again here on its own;
(b) a model replaying the gold patch: the rollout scores 1.0 through verifiers' scoring path;
(c) a task whose sandbox cannot start: a rollout error (`MaskedEpisodeError`), no reward;
(d) an eval cancelled while the model answers: the rollout's sandbox goes with it.
Every case ends with no sandbox of this run left.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from swe_gym.grading import grade
from swe_gym.policies.oracle import apply_patch_command
from swe_gym.tasks import load_tasks
from tests.conftest import IN_CI, leftover_sandboxes, provider_setup
from tests.policies.test_llm_policy import _scripted_server, _slow_server, llm_endpoint  # noqa: F401 - a fixture

try:
    import verifiers.v1 as vf
    from verifiers.v1.cli.eval.runner import run_eval
    from verifiers.v1.configs.cli.eval import EvalConfig

    from swe_gym.integrations.verifiers import ENV_ID, OUTCOME_KEY
except ImportError:
    if IN_CI:
        raise
    pytest.skip("verifiers is not installed (pip install 'swe_gym[verifiers]')", allow_module_level=True)

BUNDLED = {task.instance_id: task for task in load_tasks("bundled")}
TWO_TASKS = ["swe-gym__textkit-1", "swe-gym__ttlcache-1"]


def eval_config(out: Path, base_url: str, model: str, taskset: dict[str, Any], **options: Any) -> EvalConfig:
    """What ``vf-eval swe-gym-verifiers`` parses, without the platform push and the dashboard."""
    taskset = {"id": ENV_ID, **taskset}
    client = {"base_url": base_url}
    return EvalConfig(
        env={"taskset": taskset}, model=model, client=client, push=False, rich=None, output_dir=out, **options
    )


def evaluate(out: Path, base_url: str, model: str, taskset: dict[str, Any], **options: Any) -> list[vf.Episode]:
    """verifiers' eval runner (what ``vf-eval`` runs) on this env."""
    return asyncio.run(run_eval(eval_config(out, base_url, model, taskset, **options)))


def only_trace(episode: vf.Episode) -> vf.Trace:
    (trace,) = episode.traces
    return trace


def assert_no_leftover_sandboxes() -> None:
    assert not any(leftover_sandboxes().values()), leftover_sandboxes()


@contextmanager
def fake_model(*replies: str) -> Iterator[dict[str, Any]]:
    """FAKE model endpoint: answers request i with ``replies[i]`` (the last repeats), so the agent's answers are
    fixed; everything else (verifiers' rollout, the sandbox, swe_gym's grading) is real."""
    with _scripted_server(list(replies)) as state:
        yield state


@pytest.mark.timeout(900)  # a CPU-bound model on a busy 2-core machine
def test_real_model_scores_are_swe_gyms_graded_rewards(llm_endpoint: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    taskset = {"instance_ids": TWO_TASKS, "max_steps": 1}  # one reply each: the model is slow on 2 cores
    episodes = evaluate(tmp_path, llm_endpoint["base_url"], llm_endpoint["model"], taskset, sampling={"max_tokens": 32})
    assert sorted(episode.task.data.id for episode in episodes) == TWO_TASKS
    for episode in episodes:
        trace = only_trace(episode)
        assert episode.ok and trace.ok, trace.errors
        outcome = trace.info[OUTCOME_KEY]
        assert outcome["instance_id"] == episode.task.data.id and not outcome["masked"]
        assert outcome["turns"] == trace.num_turns == 1 and outcome["truncated"] != outcome["submitted"]
        assert trace.num_input_tokens > 0 and trace.num_output_tokens > 0  # the real model answered
        regraded = grade(BUNDLED[outcome["instance_id"]], outcome["patch"], provider="local")
        assert trace.reward == regraded.reward() == outcome["reward"]
        assert trace.rewards["swe_gym_reward"].score == regraded.reward()
    assert_no_leftover_sandboxes()


def test_gold_patch_scores_one_through_verifiers_scoring(tmp_path: Path) -> None:
    provider_setup("local")
    task = BUNDLED["swe-gym__textkit-1"]
    apply = f"THOUGHT: apply the fix.\n```bash\n{apply_patch_command(task.patch)}```"
    with fake_model(apply, "THOUGHT: done.\n```bash\nsubmit\n```") as model:
        (episode,) = evaluate(tmp_path, model["base_url"], "fake", {"instance_ids": [task.instance_id]})
    trace = only_trace(episode)
    assert episode.ok and trace.ok, trace.errors
    assert trace.reward == 1.0 and trace.rewards["swe_gym_reward"].score == 1.0
    outcome = trace.info[OUTCOME_KEY]
    assert outcome["resolved"] and outcome["submitted"] and outcome["turns"] == 2
    assert trace.stop_condition == "swe_gym_submitted" and model["requests"] == 2
    saved = [json.loads(line) for line in next(tmp_path.glob("*/traces.jsonl")).read_text().splitlines()]
    assert [record["traces"][0]["rewards"]["swe_gym_reward"]["score"] for record in saved] == [1.0]
    assert_no_leftover_sandboxes()


def test_a_sandbox_that_cannot_start_is_a_rollout_error_not_a_zero(tmp_path: Path) -> None:
    provider_setup("local")
    broken = BUNDLED["swe-gym__textkit-1"].model_copy(update={"setup_script": "echo broken >&2; exit 3"})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(broken.model_dump_json() + "\n")
    with fake_model("```bash\nsubmit\n```") as model:
        (episode,) = evaluate(tmp_path / "out", model["base_url"], "fake", {"tasks": str(tasks)})
    trace = only_trace(episode)
    assert not episode.ok and not trace.ok
    assert trace.last_error is not None and trace.last_error.type == "MaskedEpisodeError"
    assert "sandbox could not start" in trace.last_error.message
    assert "swe_gym_reward" not in trace.rewards and OUTCOME_KEY not in trace.info  # no verdict, no 0
    assert model["requests"] == 0  # the episode failed before the model was asked anything
    assert_no_leftover_sandboxes()


def test_a_cancelled_eval_leaves_no_sandbox(tmp_path: Path) -> None:
    provider_setup("local")

    async def cancel_once_asked(model: dict[str, Any]) -> None:
        taskset = {"instance_ids": ["swe-gym__textkit-1"]}
        run = asyncio.ensure_future(run_eval(eval_config(tmp_path, model["base_url"], "fake", taskset)))
        while not model["requests"]:  # the episode's sandbox is up once the model is asked
            await asyncio.sleep(0.05)
        assert leftover_sandboxes()["local"]  # there while the rollout runs
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run

    with _slow_server(600.0) as model:  # never answers while the test runs
        asyncio.run(cancel_once_asked(model))
    assert_no_leftover_sandboxes()
