"""One source of truth for options and settings: the CLI's flags come from the models, NeMo RL's config extends
them, bad values are one-line errors, and ``SWE_GYM_*`` variables are read when used, not at import."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from swe_gym.cli.main import build_parser
from swe_gym.cli.model_flags import add_model_flags, model_values
from swe_gym.envs.options import EnvOptions, HostConfig, TaskSelection
from swe_gym.policies.llm import LLMConfig
from swe_gym.sandbox import current_run_id, get_provider
from swe_gym.tools import TOOL_NAMES
from swe_gym.vector import SWEVectorEnv
from tests.conftest import IN_CI, provider_setup


def _rollout_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["rollout", *argv])


def test_every_env_and_task_option_is_a_rollout_flag_with_the_models_default() -> None:
    args = _rollout_args()
    assert model_values(args, EnvOptions) == {} and model_values(args, TaskSelection) == {}  # the models decide
    given = _rollout_args(
        "--max-steps", "7", "--reward", "partial", "--no-prestart-grading", "--scrub-history", "gc",
        "--limit", "2", "--instance-id", "a", "b", "--split", "dev", "--pool-size", "1",
    )  # fmt: skip
    assert model_values(given, EnvOptions) == {
        "max_steps": 7,
        "reward": "partial",
        "prestart_grading": False,
        "scrub_history": "gc",
        "pool_size": 1,
    }
    assert model_values(given, TaskSelection) == {"limit": 2, "instance_ids": ["a", "b"], "split": "dev"}
    flags = {action.dest for action in build_parser()._subparsers._group_actions[0].choices["rollout"]._actions}  # type: ignore[union-attr]
    assert set(EnvOptions.model_fields) - {"sandbox"} <= flags and set(TaskSelection.model_fields) <= flags


def test_llm_flags_keep_their_names_and_reach_the_config() -> None:
    args = _rollout_args("--llm-context-chars", "9000", "--llm-timeout", "5", "--llm-temperature", "0.5")
    assert model_values(args, LLMConfig, prefix="llm-") == {
        "context_budget_chars": 9000,
        "request_timeout_s": 5.0,
        "temperature": 0.5,
    }


def test_nemo_rl_config_extends_the_one_model() -> None:
    if not IN_CI:  # CI installs every extra: there it must run
        pytest.importorskip("torch")
    from swe_gym.integrations.nemo_rl import SWEGymEnvConfig

    assert issubclass(SWEGymEnvConfig, HostConfig)
    config = SWEGymEnvConfig()
    for name, field in EnvOptions.model_fields.items():
        if field.default_factory is None and name != "tools":
            assert getattr(config, name) == field.default, name
    assert config.tools == list(TOOL_NAMES)  # it accepts tool calls by default, so it takes every tool
    assert SWEGymEnvConfig(accept_actions=["text"]).tools is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rollout", "--policy", "llm", "--llm-model", "m", "--llm-temperature", "5", "--allow-unisolated"],
         "error: invalid options (--llm-temperature: Input should be less than or equal to 2"),
        (["rollout", "--max-steps", "0"], "error: invalid options (--max-steps: Input should be greater than"),
    ],
)  # fmt: skip
def test_bad_option_values_are_one_line_and_exit_2(argv: list[str], message: str) -> None:
    result = subprocess.run([sys.executable, "-m", "swe_gym.cli.main", *argv], capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_bad_provider_options_are_a_config_error() -> None:
    from swe_gym.errors import ConfigError

    with pytest.raises(ConfigError, match=r"invalid options for provider 'docker' \(bogus: Extra inputs"):
        get_provider({"type": "docker", "bogus": 1})


def test_settings_are_read_when_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    before = current_run_id()
    monkeypatch.setenv("SWE_GYM_RUN_ID", "set-after-import")
    assert current_run_id() == "set-after-import"
    monkeypatch.setenv("SWE_GYM_LOCAL_ROOT", str(tmp_path))
    assert get_provider("local").config.root == tmp_path
    monkeypatch.delenv("SWE_GYM_RUN_ID")
    assert current_run_id() == before


def test_model_flags_cover_bools_literals_lists_and_skip_models() -> None:
    parser = argparse.ArgumentParser()
    add_model_flags(parser, EnvOptions)
    assert not any(a.dest == "sandbox" for a in parser._actions)  # a nested model has no flag
    assert model_values(parser.parse_args(["--no-grade-on-truncation"]), EnvOptions) == {"grade_on_truncation": False}
    with pytest.raises(SystemExit):
        parser.parse_args(["--reward", "sometimes"])


def test_vector_env_renders_ansi() -> None:
    provider_setup("local")
    env = SWEVectorEnv(2, provider="local", render_mode="ansi", pool_size=0, prestart_grading=False)
    try:
        observations, _ = env.reset(seed=0)
        assert env.render() == observations
        env.step(["echo hi", "echo there"])
        assert env.render() == ("hi\n", "there\n")
    finally:
        env.close()
