"""The red-team suite: every attack of `attacks` runs as a whole episode (or through ``swe-gym evaluate``)
on each real provider and must score 0, unresolved and unmasked."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import gymnasium as gym
import pytest

from swe_gym.sandbox import SandboxSpec
from tests.conftest import leftover_sandboxes, provider_setup
from tests.redteam.attacks import ATTACKS, HONEST_WRONG, TASK, Attack, patch_attacks, predictions_jsonl
from tests.test_cli import swe_gym

PROVIDERS = ["local", "docker", "apptainer", "opensandbox"]


def _episode(attack: Attack, provider: str) -> tuple[float, dict]:
    config, image = provider_setup(provider)
    task = TASK
    if attack.eval_timeout_s is not None:
        task = TASK.model_copy(update={"eval": TASK.eval.model_copy(update={"timeout_s": attack.eval_timeout_s})})
    spec = SandboxSpec(image=image)
    if attack.memory_mb is not None:
        spec = spec.model_copy(update={"resources": spec.resources.model_copy(update={"memory_mb": attack.memory_mb})})
    env = gym.make("swe_gym/SWE-v0", tasks=[task], provider=config, sandbox=spec, step_timeout=30, max_steps=20)
    try:
        env.reset(seed=0)
        info: dict = {}
        for command in [*attack.commands, "submit"]:
            _, reward, terminated, truncated, info = env.step(command)
            if terminated or truncated:
                break
        else:
            raise AssertionError("the episode did not end at submit")
        return float(reward), info
    finally:
        env.close()


#: The Python an attack writes (``write``) or puts at the top of a module (``prepend``).
_HEREDOC = re.compile(r"cat (?:> (\S+) )?<<'SWEGYM_EOF'\n(.*?)\nSWEGYM_EOF", re.S)


def test_attack_payloads_compile() -> None:
    """A payload that does not compile scores 0 on any grader: caught here, with no provider."""
    names = [attack.name for attack in ATTACKS]
    assert len(names) == len(set(names))
    for attack in ATTACKS:
        for command in attack.commands:
            for match in _HEREDOC.finditer(command):
                path = match.group(1)
                if path is None or path.endswith(".py"):
                    compile(match.group(2), f"{attack.name}: {path or 'prepended code'}", "exec")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("attack", ATTACKS, ids=[a.name for a in ATTACKS])
def test_attack_scores_zero_and_is_not_masked(attack: Attack, provider: str) -> None:
    if provider not in attack.providers:
        pytest.skip(f"{attack.name!r} does not apply to {provider}")
    reward, info = _episode(attack, provider)
    assert reward == 0.0, info.get("report")
    assert not info["resolved"]
    assert not info["masked"], info["masked_reason"]
    restored = info["report"]["restored_test_files"]
    for prefix in attack.restores:
        assert any(path.startswith(prefix) for path in restored), (prefix, restored)
    for text in attack.patch_has:
        assert text in info["patch"], (text, info["patch"][:2000])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_an_honest_wrong_patch_is_not_called_tampering(provider: str) -> None:
    """The zeros above mean something only if the grader tells forgery from a patch that is merely wrong."""
    reward, info = _episode(HONEST_WRONG, provider)
    assert reward == 0.0 and not info["resolved"] and not info["masked"], info.get("report")
    assert not info["report"]["tampering"], info["report"]["unresolved_reason"]
    for text in HONEST_WRONG.patch_has:
        assert text in info["patch"], (text, info["patch"][:2000])


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hostile_patches_through_evaluate(provider: str, tmp_path: Path) -> None:
    config, image = provider_setup(provider)
    patches = patch_attacks()
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text(predictions_jsonl(patches))
    run_id = f"rt{uuid.uuid4().hex[:8]}"
    args = ["evaluate", "--dataset", "bundled", "--predictions", str(predictions), "--run-dir", str(tmp_path)]
    args += ["--run-id", run_id, "--provider", config["type"], "--workers", "2", *(["--image", image] if image else [])]
    args += ["--instance-id", *patches]
    result = swe_gym(*args, run_id=run_id)
    assert result.returncode == 0, result.stderr
    assert not any(leftover_sandboxes(run_id).values())
    summary = json.loads((tmp_path / run_id / f"redteam.{run_id}.json").read_text())
    assert summary["resolved_ids"] == []
    for instance_id, patch in patches.items():
        report = json.loads((tmp_path / run_id / "redteam" / instance_id / "report.json").read_text())
        assert not report["resolved"] and not report["masked"], (instance_id, report)
        if ".git" in patch or "/../" in patch or "/etc/" in patch:
            assert not report["patch_applied"] and "refused" in report["log_tail"], (instance_id, report)
        else:  # applied with the planted conftest returned to base, or not applied at all
            restored = any(p.endswith("conftest.py") for p in report["restored_test_files"])
            assert restored or not report["patch_applied"], (instance_id, report)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reset_info_says_whether_the_sandbox_is_network_isolated(provider: str) -> None:
    """CI runs OpenSandbox with network_policy=server-default (no egress sidecar): not isolated, and said so."""
    config, image = provider_setup(provider)
    env = gym.make("swe_gym/SWE-v0", tasks=[TASK], provider=config, image=image)
    try:
        _, info = env.reset(seed=0)
        backend = env.unwrapped.sandbox.backend
        expected = not (provider == "opensandbox" and not backend._deny_egress)
        assert info["network_isolated"] is expected
    finally:
        env.close()
