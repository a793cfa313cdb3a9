"""The options of an env, in one model every front end uses: `SWEEnv`, `SWEVectorEnv`, `RayVectorEnv`,
NeMo RL's `SWEGymEnvConfig` (which extends it) and ``swe-gym rollout`` (whose flags are derived from it).
One name, one default and one description per option."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, InstanceOf, ValidationError

from swe_gym.errors import ConfigError, validation_problems
from swe_gym.grading.patch import MAX_PATCH_BYTES, PATCH_TIMEOUT_S
from swe_gym.sandbox import SandboxSpec
from swe_gym.sandbox.protocol import SandboxProvider


class TaskSelection(BaseModel):
    """Which tasks an env draws from (the arguments `swe_gym.load_tasks` takes)."""

    model_config = ConfigDict(extra="forbid")

    tasks: str | list[dict[str, Any]] = Field(
        default="bundled", description="'bundled', a .json/.jsonl/.parquet file, a dataset folder or name"
    )
    split: str = Field(default="test", description="the dataset split, for sources that have splits")
    instance_ids: list[str] | None = Field(
        default=None, description="only these tasks", json_schema_extra={"flag": "instance-id"}
    )
    limit: int | None = Field(default=None, ge=1, description="only the first N rows of the source")


class EnvOptions(BaseModel):
    """How each episode runs and is graded."""

    model_config = ConfigDict(extra="forbid")

    image: str | None = Field(default=None, description="image for tasks that name none (container providers)")
    max_steps: int = Field(default=50, ge=1, description="actions per episode before truncation")
    step_timeout: float = Field(
        default=60.0, gt=0, description="seconds per action; the action's process group is killed after it"
    )
    max_observation_chars: int = Field(default=20_000, ge=64, description="observations keep head and tail to this")
    reward: Literal["binary", "partial"] = Field(
        default="binary", description="binary: 1.0 if resolved; partial: the fraction of FAIL_TO_PASS passing"
    )
    grade_on_truncation: bool = Field(default=True, description="grade the patch when max_steps is reached")
    max_patch_bytes: int = Field(
        default=MAX_PATCH_BYTES,
        ge=1,
        description="the largest patch read from the work tree; a larger diff, or a file larger than this, ends "
        "the episode unresolved with info['patch_error']",
    )
    patch_timeout: float = Field(
        default=PATCH_TIMEOUT_S,
        gt=0,
        description="seconds reading the patch from the work tree may take; past it the episode ends unresolved "
        "with info['patch_error']",
    )
    sandbox: SandboxSpec = Field(
        default_factory=SandboxSpec, description="limits, env vars, network and TTL of every sandbox"
    )
    pool_size: int = Field(default=0, ge=0, description="sandboxes started ahead of need (0: off)")
    scrub_history: bool | Literal["gc"] = Field(
        default=True, description="remove git history after the base from the agent's sandbox"
    )
    prestart_grading: bool = Field(
        default=True, description="start the grading sandbox as the episode starts, so submit pays only the tests"
    )
    tools: list[Literal["bash", "str_replace_editor", "submit"]] | None = Field(
        default=None,
        description="accept tool calls as actions (swe_gym.tools); plain bash strings keep working either way",
    )
    shell: Literal["stateless", "persistent"] = Field(
        default="stateless",
        description="where bash actions run: a fresh bash -c each (stateless) or one bash per episode in which "
        "cd, export and activated virtualenvs persist (persistent)",
    )
    certificate: Path | None = Field(default=None, description="a fidelity certificate from swe-gym validate")
    uncertified: Literal["skip", "flag"] = Field(
        default="flag", description="tasks the certificate does not certify: left out (skip) or kept and flagged"
    )

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> EnvOptions:
        try:
            return cls(**options)
        except ValidationError as exc:
            raise ConfigError(f"invalid env options ({validation_problems(exc)})") from None


class HostConfig(EnvOptions, TaskSelection):
    """Everything an episode host is built from: which tasks, how each episode runs, and on which provider.

    Every front end makes one from its own arguments (`SWEEnv`'s keywords, a NeMo RL YAML section). The
    task source may also be records already loaded (`SWETask` objects or rows), and ``limit`` a ``slice``.
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    tasks: str | Path | list[Any] = Field(
        default="bundled",
        description="'bundled', a .json/.jsonl/.parquet file, a dataset folder or name, or task records",
    )
    limit: Annotated[int, Field(ge=1)] | slice | None = Field(
        default=None, description="only the first N rows of the source (or a slice of them)"
    )
    provider: str | dict[str, Any] | InstanceOf[SandboxProvider] = Field(
        default="local", description="a provider name, a {type: NAME, ...options} config, or a provider instance"
    )
