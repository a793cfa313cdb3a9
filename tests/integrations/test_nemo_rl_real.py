"""swe_gym driven through NeMo RL's OWN rollout code (a real checkout), not through our stand-ins.

Runs only when ``NEMO_RL_SRC`` points at a NeMo RL source checkout (put on ``sys.path``;
``NEMO_RL_DEPS``, optional, is a ``pip install --target`` folder with its Python deps such as
transformers, torchdata, tensordict). Nothing of NeMo RL is vendored here: the env is made by
NeMo RL's ``create_env``, batches are collated by its ``rl_collate_fn`` and repeated by its
``BatchedDataDict.repeat_interleave`` as GRPO does, rollouts run through its
``run_multi_turn_rollout`` / ``run_async_multi_turn_rollout`` (looked up on ``nemo_rl.algorithms.grpo``,
the names GRPO calls), masks go through GRPO's ``_apply_mask_sample_filter`` and teardown through
its ``shutdown_environments``. The policy is scripted (fixed replies per sample) behind the
generation interface rollouts.py calls; its tokenizer is a byte-level BPE trained here on a few
strings (no hub access). Run with ``-s`` to see each test's summary line.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

NEMO_RL_SRC = os.environ.get("NEMO_RL_SRC", "").strip()
NEMO_RL_DEPS = os.environ.get("NEMO_RL_DEPS", "").strip()
if not NEMO_RL_SRC:
    pytest.skip(
        "NEMO_RL_SRC not set: these tests need a NeMo RL source checkout (github.com/NVIDIA-NeMo/RL; the PyPI "
        "'nemo-rl' is an empty placeholder); set it to a NeMo RL checkout to drive swe_gym through NeMo RL's own "
        "rollout code (and NEMO_RL_DEPS to a folder holding its Python deps, e.g. "
        "`pip install --target DIR transformers tokenizers torchdata tensordict ...`)",
        allow_module_level=True,
    )
if not (Path(NEMO_RL_SRC) / "nemo_rl" / "__init__.py").is_file():
    pytest.fail(f"NEMO_RL_SRC={NEMO_RL_SRC} holds no nemo_rl package (nemo_rl/__init__.py)", pytrace=False)

_PATHS = [p for p in (NEMO_RL_SRC, NEMO_RL_DEPS) if p]
for _path in reversed(_PATHS):
    if _path not in sys.path:
        sys.path.insert(0, _path)
# Ray actors get the driver's environment (create_env passes env_vars=dict(os.environ)): let them import nemo_rl too.
os.environ["PYTHONPATH"] = os.pathsep.join([*_PATHS, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])

if sys.version_info < (3, 12):
    # NeMo RL targets Python >= 3.13; on older Pythons pydantic rejects typing.TypedDict fields in
    # grpo.MasterConfig unless TypedDict is typing_extensions' (what pydantic asks for on < 3.12).
    import typing

    import typing_extensions

    typing.TypedDict = typing_extensions.TypedDict  # type: ignore[misc]

from tests.conftest import IN_CI  # noqa: E402

if IN_CI:  # CI installs the nemo_rl extra: a missing torch or ray there is a failure, not a skip
    import ray
    import torch
else:
    torch = pytest.importorskip("torch", reason="NeMo RL needs torch")
    ray = pytest.importorskip("ray", reason="NeMo RL's environments are Ray actors")

from nemo_rl.algorithms import grpo  # noqa: E402  (the module whose globals GRPO's loop calls)
from nemo_rl.data.collate_fn import rl_collate_fn  # noqa: E402
from nemo_rl.distributed.batched_data_dict import BatchedDataDict  # noqa: E402
from nemo_rl.environments.utils import create_env  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import PreTrainedTokenizerFast  # noqa: E402

from swe_gym.integrations.nemo_rl import SWEGymEnvConfig, build_prompt, register_with_nemo_rl  # noqa: E402
from swe_gym.sandbox import get_provider  # noqa: E402
from swe_gym.sandbox.labels import current_run_id  # noqa: E402
from swe_gym.tasks import load_tasks  # noqa: E402
from tests.conftest import leftover_sandboxes, provider_setup  # noqa: E402

ENV_NAME = "swe_gym"
TASKS = {task.instance_id: task for task in load_tasks("bundled")}
GOLD_TASK, EMPTY_TASK, GROUP_TASK = "swe-gym__datekit-1", "swe-gym__globmatch-1", "swe-gym__semverkit-1"
MAX_SEQ_LEN = 200_000
MARKER = "THOUGHT (scripted policy):"  # once per reply, never inside a command: counts the turns so far
EPISODE_TAG = re.compile(r"^\[swe_gym episode ([^\]\s]+)\]")
PROBE_ID = re.compile(r"probe-id=([0-9a-f]{16})")
#: The sandbox's repo is the host's <home>/work; its .git is never part of the diff that is graded.
PROBE_FILE = ".git/swe_gym_probe_id"
PROBE_COMMAND = f"t=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n'); echo $t > {PROBE_FILE}; echo probe-id=$t"


def _nemo_rl_commit() -> str:
    if os.environ.get("NEMO_RL_COMMIT"):
        return os.environ["NEMO_RL_COMMIT"][:12]
    try:
        out = subprocess.run(
            ["git", "-C", NEMO_RL_SRC, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()[:12]
    except (OSError, subprocess.SubprocessError):
        return "unknown (not a git checkout; set NEMO_RL_COMMIT)"


COMMIT = _nemo_rl_commit()


def summary(test: str, **fields: Any) -> None:
    parts = " ".join(f"{k}={v}" for k, v in fields.items())
    print(f"\n[nemo_rl_real] {test}: nemo_rl@{COMMIT} {parts}", flush=True)


# -- tokenizer and scripted policy ----------------------------------------------------------


def make_tokenizer() -> PreTrainedTokenizerFast:
    """A byte-level BPE (any text round-trips) wrapped as a transformers tokenizer with a chat template."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=800,
        special_tokens=["<|pad|>", "<|end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [build_prompt(TASKS[GOLD_TASK]), TASKS[GOLD_TASK].patch, "```bash\nsubmit\n```", MARKER]
    tok.train_from_iterator(corpus, trainer)
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<|pad|>", eos_token="<|end|>", clean_up_tokenization_spaces=False
    )
    hf.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}<|end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
    )
    return hf


def bash(command: str) -> str:
    return f"{MARKER} next command.\n\n```bash\n{command}\n```\n"


def gold(instance_id: str) -> str:
    return bash(f"git apply <<'EOF_GOLD'\n{TASKS[instance_id].patch}\nEOF_GOLD")


def hermes(name: str, **arguments: Any) -> str:
    """A reply calling a tool as a Qwen-style model writes it: Hermes ``<tool_call>`` text."""
    return f"{MARKER} next call.\n<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>\n"


#: plan name -> replies by turn (the last one repeats)
def plan_replies(plan: str, instance_id: str) -> list[str]:
    return {
        "gold": [gold(instance_id), bash("submit")],
        "empty": [bash("submit")],
        "probe_gold": [bash(PROBE_COMMAND), gold(instance_id), bash("submit")],
        "look": [bash("ls")],
        "sleep": [bash("sleep 2 && echo slept"), bash("submit")],
        "hermes_gold": [
            hermes("bash", command=f"git apply <<'EOF_GOLD'\n{TASKS[instance_id].patch}\nEOF_GOLD"),
            hermes("submit"),
        ],
    }[plan]


class ScriptedPolicy:
    """What rollouts.py calls on ``policy_generation``: ``generate`` (sync rollout) and ``generate_async``
    (async rollout, enabled by ``cfg`` as for vLLM's async engine). Each sample's reply is fixed by its
    task (the prompt it was given) and how many replies its conversation already holds."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerFast,
        plans: dict[str, str],
        cfg: SWEGymEnvConfig,
        before_reply: Callable[[str, str, int], None] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.plans = plans
        self.prompts = {iid: build_prompt(TASKS[iid], cfg) for iid in plans}
        self.before_reply = before_reply
        self.cfg = {"backend": "vllm", "vllm_cfg": {"async_engine": True}}  # what generate_responses_async checks
        self.calls = {"generate": 0, "generate_async": 0}

    def _reply_tokens(self, input_ids: Any, length: int) -> list[int]:
        text = self.tokenizer.decode(input_ids[:length].tolist(), skip_special_tokens=False)
        matches = [iid for iid, prompt in self.prompts.items() if prompt in text]
        assert len(matches) == 1, f"the scripted policy cannot tell the task of this prompt (matches {matches})"
        instance_id = matches[0]
        turn = text.count(MARKER)
        if self.before_reply is not None:
            self.before_reply(text, self.plans[instance_id], turn)
        replies = plan_replies(self.plans[instance_id], instance_id)
        reply = replies[min(turn, len(replies) - 1)]
        return self.tokenizer(reply, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]

    def generate(self, data: BatchedDataDict, greedy: bool = False) -> BatchedDataDict:
        self.calls["generate"] += 1
        input_ids, input_lengths = data["input_ids"], data["input_lengths"]
        rows = len(input_lengths)
        lengths = [int(n) for n in input_lengths]
        generated = [self._reply_tokens(input_ids[i], lengths[i]) for i in range(rows)]
        width = max(n + len(g) for n, g in zip(lengths, generated, strict=True))
        output_ids = torch.full((rows, width), self.tokenizer.pad_token_id, dtype=torch.long)
        for i, (n, g) in enumerate(zip(lengths, generated, strict=True)):
            output_ids[i, :n] = input_ids[i, :n]
            output_ids[i, n : n + len(g)] = torch.tensor(g, dtype=torch.long)
        return BatchedDataDict(
            {
                "output_ids": output_ids,
                "logprobs": torch.zeros((rows, width), dtype=torch.float32),
                "generation_lengths": torch.tensor([len(g) for g in generated], dtype=torch.long),
                "unpadded_sequence_lengths": torch.tensor(
                    [n + len(g) for n, g in zip(lengths, generated, strict=True)], dtype=torch.long
                ),
                "truncated": torch.zeros(rows, dtype=torch.bool),
            }
        )

    async def generate_async(
        self, data: BatchedDataDict, greedy: bool = False
    ) -> AsyncIterator[tuple[int, BatchedDataDict]]:
        self.calls["generate_async"] += 1
        for i in range(len(data["input_lengths"])):
            await asyncio.sleep(0)
            yield i, self.generate(data.select_indices([i]), greedy=greedy)


# -- killing one sandbox from outside, as a crash would --------------------------------------


def _pid_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


class SandboxKiller:
    """At the first sample's second reply, SIGKILL that sample's runner (found by the probe id its
    first command wrote into its repo's .git) before the reply goes to the env."""

    def __init__(self) -> None:
        self.killed_probe: str | None = None

    def __call__(self, text: str, plan: str, turn: int) -> None:
        if plan != "probe_gold" or turn != 1 or self.killed_probe is not None:
            return
        (probe,) = PROBE_ID.findall(text)
        root = get_provider("local").config.root
        homes = [h for h in root.iterdir() if (h / "work" / PROBE_FILE).is_file()]
        (home,) = [h for h in homes if (h / "work" / PROBE_FILE).read_text().strip() == probe]
        pid = json.loads((home / "meta.json").read_text())["runner_pid"]
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while not _pid_gone(pid):
            assert time.monotonic() < deadline, f"runner {pid} survived SIGKILL"
            time.sleep(0.05)
        time.sleep(0.5)  # let the env's process see it dead before the next command is sent
        self.killed_probe = probe


# -- fixtures -------------------------------------------------------------------------------


def env_config(**overrides: Any) -> dict[str, Any]:
    provider, _ = provider_setup("local")
    cfg: dict[str, Any] = {
        "tasks": "bundled",
        "instance_ids": [GOLD_TASK, EMPTY_TASK, GROUP_TASK],
        "provider": provider,
        "max_steps": 5,
        "grade_on_truncation": False,
    }
    cfg.update(overrides)
    return cfg


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    os.environ["SWE_GYM_RUN_ID"] = current_run_id()  # the actor's sandboxes carry this run's label (leak checks)
    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=True)
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def tokenizer() -> PreTrainedTokenizerFast:
    return make_tokenizer()


@pytest.fixture(scope="module")
def env(ray_cluster: None) -> Iterator[Any]:
    assert register_with_nemo_rl(ENV_NAME) == ENV_NAME
    actor = create_env(ENV_NAME, env_config())  # NeMo RL's own: ENV_REGISTRY + ACTOR_ENVIRONMENT_REGISTRY
    yield actor
    grpo.shutdown_environments({ENV_NAME: actor}, None)
    ray.kill(actor)


def input_batch(tokenizer: PreTrainedTokenizerFast, instance_ids: list[str], repeats: int = 1) -> BatchedDataDict:
    """As a NeMo RL data processor + ``rl_collate_fn`` + GRPO's ``repeat_interleave`` make it."""
    cfg = SWEGymEnvConfig(**env_config())
    data = []
    for idx, instance_id in enumerate(instance_ids):
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": build_prompt(TASKS[instance_id], cfg)}],
            tokenize=False,
            add_generation_prompt=True,
            add_special_tokens=False,
        )
        token_ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"][0]
        message_log = [{"role": "user", "content": text, "token_ids": token_ids}]
        data.append(
            {
                "message_log": message_log,
                "length": len(token_ids),
                "extra_env_info": {"instance_id": instance_id},
                "loss_multiplier": 1.0,
                "idx": idx,
                "task_name": ENV_NAME,
            }
        )
    batch = rl_collate_fn(data)
    return batch.repeat_interleave(repeats) if repeats > 1 else batch


ROLLOUTS = {
    "sync": lambda: grpo.run_multi_turn_rollout,
    "async": lambda: grpo.run_async_multi_turn_rollout,
}


def rollout(kind: str, policy: ScriptedPolicy, batch: BatchedDataDict, tokenizer: Any, env: Any, **kw: Any):
    fn = ROLLOUTS[kind]()
    started = time.perf_counter()
    out, metrics = fn(
        policy_generation=policy,
        input_batch=batch,
        tokenizer=tokenizer,
        task_to_env={ENV_NAME: env},
        max_seq_len=MAX_SEQ_LEN,
        **kw,
    )
    return out, metrics, time.perf_counter() - started


def require_mask(out: BatchedDataDict) -> list[bool]:
    assert "mask_sample" in out, (
        f"the rollout returned no mask_sample (keys: {sorted(out.keys())}): register_with_nemo_rl() did not "
        "hook NeMo RL's rollout to run swe_gym's post-processing"
    )
    return [bool(m) for m in torch.as_tensor(out["mask_sample"]).tolist()]


def live_episodes(env: Any) -> list[str]:
    try:
        return list(ray.get(env.live_episodes.remote(), timeout=60))
    except AttributeError:  # a property, not a method: read it through Ray's __ray_call__
        return list(ray.get(env.__ray_call__.remote(lambda self: self.live_episodes), timeout=60))


def first_env_observations(out: BatchedDataDict) -> list[str]:
    return [
        next(m["content"] for m in log if m["role"] not in ("user", "assistant", "system"))
        for log in out["message_log"]
    ]


def check_episode_tags(out: BatchedDataDict) -> list[str]:
    ids = []
    for obs, info in zip(first_env_observations(out), out["extra_env_info"], strict=True):
        match = EPISODE_TAG.match(obs)
        assert match, f"the first env observation does not start with '[swe_gym episode <id>]': {obs[:120]!r}"
        # NeMo RL writes the env's metadata back only for samples that continue, so a sample that
        # ended on its first turn still holds just its dataset entry; where an episode_id is, it matches.
        assert isinstance(info, dict) and info.get("episode_id", match.group(1)) == match.group(1), (match, info)
        ids.append(match.group(1))
    assert len(set(ids)) == len(ids), f"episode ids repeat across samples: {ids}"
    return ids


# -- tests ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_gold_resolves_and_empty_scores_zero(kind: str, env: Any, tokenizer: Any) -> None:
    policy = ScriptedPolicy(tokenizer, {GOLD_TASK: "gold", EMPTY_TASK: "empty"}, SWEGymEnvConfig(**env_config()))
    batch = input_batch(tokenizer, [GOLD_TASK, EMPTY_TASK])
    out, metrics, took = rollout(kind, policy, batch, tokenizer, env, max_rollout_turns=4)
    rewards = out["total_reward"].tolist()
    assert policy.calls["generate_async" if kind == "async" else "generate"] > 0
    assert rewards == [1.0, 0.0], rewards
    mask = require_mask(out)
    assert mask == [False, False]
    grpo._apply_mask_sample_filter(out)
    assert out["loss_multiplier"].tolist() == [1.0, 1.0]
    check_episode_tags(out)
    assert live_episodes(env) == [] and not leftover_sandboxes()["local"]
    summary(
        f"gold/empty[{kind}]",
        rewards=rewards,
        mask=mask,
        loss_multiplier=out["loss_multiplier"].tolist(),
        turns=metrics["total_turns"],
        took=f"{took:.1f}s",
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_group_with_one_sandbox_killed_is_masked_after_grpo_filter(kind: str, env: Any, tokenizer: Any) -> None:
    killer = SandboxKiller()
    policy = ScriptedPolicy(tokenizer, {GROUP_TASK: "probe_gold"}, SWEGymEnvConfig(**env_config()), killer)
    batch = input_batch(tokenizer, [GROUP_TASK], repeats=6)  # one prompt, 6 generations, identical replies
    assert batch["idx"] == [0] * 6
    out, _, took = rollout(kind, policy, batch, tokenizer, env, max_rollout_turns=5)
    assert killer.killed_probe is not None, "the policy never reached the second turn of a probe sample"
    rows = out["message_log"]
    killed_row = [i for i, log in enumerate(rows) if any(killer.killed_probe in m["content"] for m in log)]
    assert len(killed_row) == 1, killed_row
    (killed,) = killed_row
    raw_rewards = out["total_reward"].tolist()
    mask = require_mask(out)
    expected = [i == killed for i in range(6)]
    assert mask == expected, f"mask {mask}, but the sandbox of row {killed} was killed"
    assert "masked" in rows[killed][-1]["content"], rows[killed][-1]["content"][:200]
    unmasked = [r for i, r in enumerate(raw_rewards) if i != killed]
    assert unmasked == [1.0] * 5, raw_rewards
    assert raw_rewards[killed] == pytest.approx(sum(unmasked) / len(unmasked)), (
        f"masked row's total_reward {raw_rewards[killed]} is not the mean of its group's unmasked rows "
        f"(rollout's idx column: {list(out['idx'])}; the input batch had {batch['idx']})"
    )
    num = grpo._apply_mask_sample_filter(out)
    loss_multiplier = out["loss_multiplier"].tolist()
    assert num == 1 and loss_multiplier == [0.0 if m else 1.0 for m in expected], (num, loss_multiplier)
    assert live_episodes(env) == [] and not leftover_sandboxes()["local"]
    summary(
        f"mask-group[{kind}]",
        killed_row=killed,
        idx_after_rollout=list(out["idx"]),
        rewards=raw_rewards,
        mask_after_filter=loss_multiplier,
        num_masked=num,
        took=f"{took:.1f}s",
    )


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_episode_cut_by_max_rollout_turns_is_closed_when_the_rollout_returns(
    kind: str, env: Any, tokenizer: Any
) -> None:
    policy = ScriptedPolicy(tokenizer, {EMPTY_TASK: "look"}, SWEGymEnvConfig(**env_config()))
    batch = input_batch(tokenizer, [EMPTY_TASK])
    out, metrics, took = rollout(kind, policy, batch, tokenizer, env, max_rollout_turns=1)
    assert metrics["max_turns_reached_rate"] == 1.0  # NeMo RL cut it, the env never ended it
    (episode_id,) = check_episode_tags(out)
    live = live_episodes(env)
    leftovers = leftover_sandboxes()["local"]
    mask = require_mask(out)
    assert episode_id not in live and live == [], f"episode still live after the rollout returned: {live}"
    assert not leftovers, f"sandboxes left after the rollout returned: {leftovers}"
    assert mask == [False]  # cut by the trainer is not an infrastructure failure
    summary(
        f"cut[{kind}]",
        episode=episode_id,
        rewards=out["total_reward"].tolist(),
        mask=mask,
        live_after=live,
        took=f"{took:.1f}s",
    )


def test_concurrent_sleeps_sync_vs_async_rollout(env: Any, tokenizer: Any) -> None:
    """Four samples each running `sleep 2`: wall time of both rollouts is printed, only masks are asserted."""
    cfg = SWEGymEnvConfig(**env_config())
    took: dict[str, float] = {}
    masks: dict[str, list[bool]] = {}
    for kind in ("sync", "async"):
        policy = ScriptedPolicy(tokenizer, {GOLD_TASK: "sleep"}, cfg)
        batch = input_batch(tokenizer, [GOLD_TASK], repeats=4)
        out, _, took[kind] = rollout(kind, policy, batch, tokenizer, env, max_rollout_turns=3)
        masks[kind] = require_mask(out)
        assert masks[kind] == [False] * 4, (kind, masks[kind])
        assert out["total_reward"].tolist() == [0.0] * 4
        assert all("slept" in first for first in first_env_observations(out))
    assert live_episodes(env) == [] and not leftover_sandboxes()["local"]
    summary("sleep-2x4", sync=f"{took['sync']:.1f}s", async_=f"{took['async']:.1f}s", masks=masks)


def test_eval_style_step_and_shutdown_environments_leave_nothing(ray_cluster: None, tokenizer: Any) -> None:
    """nemo_rl/evals/eval.py calls ``env.step.remote(to_env, extra_env_info, True)``; GRPO ends with
    ``shutdown_environments``. A fresh env actor, so the shared one stays usable for the tests above."""
    register_with_nemo_rl(ENV_NAME)
    actor = create_env(ENV_NAME, env_config())
    try:
        prompt = build_prompt(TASKS[EMPTY_TASK], SWEGymEnvConfig(**env_config()))
        logs = [
            [{"role": "user", "content": prompt}, {"role": "assistant", "content": bash("submit")}],
            [{"role": "user", "content": prompt}, {"role": "assistant", "content": bash("ls")}],
        ]
        infos = [{"instance_id": EMPTY_TASK}, {"instance_id": EMPTY_TASK}]
        ret = ray.get(actor.step.remote(logs, infos, True), timeout=300)
        assert ret.rewards.tolist() == [0.0, 0.0] and ret.terminateds.tolist() == [True, False]
        live_before = live_episodes(actor)
        assert len(live_before) == 1, live_before
        assert leftover_sandboxes()["local"], "the live episode should hold a sandbox before shutdown"
    finally:
        grpo.shutdown_environments({ENV_NAME: actor}, None)
    leftovers = leftover_sandboxes()["local"]
    ray.kill(actor)
    assert not leftovers, f"shutdown_environments left sandboxes: {leftovers}"
    summary("eval-3arg+shutdown", rewards=ret.rewards.tolist(), live_before=len(live_before), leftovers=leftovers)


def test_actor_options_restart_forever(env: Any) -> None:
    """The actor class NeMo RL instantiates restarts (and retries its tasks) after a crash."""
    from swe_gym.integrations import nemo_rl as integration

    options = getattr(integration.SWEGymEnvironmentActor, "_default_options", {})
    assert options.get("max_restarts") == -1 and options.get("max_task_retries") == -1, options
    summary("actor-options", max_restarts=options.get("max_restarts"), max_task_retries=options.get("max_task_retries"))


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_hermes_tool_calls_through_nemo_rls_rollout(kind: str, env: Any, tokenizer: Any) -> None:
    """NeMo RL's rollout hands an env only each message's role and content (``get_keys_from_message_log``),
    so a Qwen-style model's tool calls reach it as Hermes ``<tool_call>`` text; the results come back as
    tool-role messages, which the rollout appends to the sample's log as they are."""
    policy = ScriptedPolicy(tokenizer, {GOLD_TASK: "hermes_gold"}, SWEGymEnvConfig(**env_config()))
    batch = input_batch(tokenizer, [GOLD_TASK])
    out, metrics, took = rollout(kind, policy, batch, tokenizer, env, max_rollout_turns=4)
    (log,) = out["message_log"]
    roles = [m["role"] for m in log]
    assert out["total_reward"].tolist() == [1.0] and roles == ["user", "assistant", "tool", "assistant", "tool"]
    assert "<tool_call>" in log[1]["content"] and "RESOLVED" in log[-1]["content"]
    assert require_mask(out) == [False]
    check_episode_tags(out)  # the first tool message carries the episode's tag, as an environment one would
    assert live_episodes(env) == [] and not leftover_sandboxes()["local"]
    summary(f"hermes[{kind}]", rewards=out["total_reward"].tolist(), roles=roles, took=f"{took:.1f}s")
