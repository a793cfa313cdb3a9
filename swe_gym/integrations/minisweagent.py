"""mini-swe-agent interop: our sandboxes as its ``Environment``, its agent as the policy of an `SWEEnv` episode.

- `SandboxEnvironment` implements mini-swe-agent's ``Environment`` protocol (``execute``,
  ``get_template_vars``, ``serialize``, and ``cleanup`` as its own environments have) on a swe_gym
  sandbox of any provider, so its ``DefaultAgent`` (or its ``mini`` command, with
  ``environment_class: swe_gym.integrations.minisweagent.SandboxEnvironment``) runs unchanged on
  ``local``, ``docker``, ``apptainer`` or ``opensandbox``.
- `run_episode` runs mini-swe-agent's own agent loop as the policy of one `SWEEnv` episode: every
  action it takes is an ``env.step``, its submission (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``)
  ends the episode through SWEEnv's submit, and the `EpisodeResult` holds our graded reward and
  terminal info next to the agent's messages and trajectory.

Example (mini-swe-agent's scripted test model, so no LLM is called)::

    from minisweagent.agents.default import DefaultAgent
    from minisweagent.models.test_models import DeterministicModel, make_output

    outputs = [make_output("", [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && uname -s"}])]
    with SandboxEnvironment(provider="docker", image="swe-gym-test:bookworm") as env:
        DefaultAgent(DeterministicModel(outputs=outputs), env, **default_agent_config()).run("say hi")
    # -> {'exit_status': 'Submitted', 'submission': 'Linux\n'}

Needs the ``minisweagent`` extra (``pip install 'swe_gym[minisweagent]'``, mini-swe-agent 2.4).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import shlex
import sys
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
from pydantic import BaseModel, Field

from swe_gym.envs.prompt import SUBMIT, SUBMIT_MARKER
from swe_gym.errors import SandboxError
from swe_gym.sandbox import AsyncSandbox, Sandbox, SandboxSpec
from swe_gym.sandbox.loop import background_loop, in_loop_thread

# mini-swe-agent prints a banner when imported; a library never prints (its users can unset this).
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
try:
    from minisweagent.agents.default import DefaultAgent
    from minisweagent.config import get_config_from_spec
    from minisweagent.exceptions import LimitsExceeded, Submitted
    from minisweagent.utils.serialize import recursive_merge
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "swe_gym.integrations.minisweagent needs mini-swe-agent: pip install 'swe_gym[minisweagent]'"
    ) from exc

log = logging.getLogger(__name__)

#: mini-swe-agent's bundled config whose agent section `run_episode` uses by default (tool-call models).
DEFAULT_CONFIG = "mini.yaml"
_UNAME_KEYS = ("system", "node", "release", "version", "machine")


def default_agent_config(spec: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """The ``agent`` section of a mini-swe-agent config (a bundled name such as ``"mini.yaml"``, or a path)."""
    return dict(get_config_from_spec(spec).get("agent", {}))


def _serialize(environment: Any, **info: Any) -> dict:
    """mini-swe-agent's environment ``serialize`` layout (``info.config.environment``/``environment_type``)."""
    kind = f"{type(environment).__module__}.{type(environment).__name__}"
    config = {"environment": environment.config.model_dump(mode="json"), "environment_type": kind}
    return {"info": {"config": config, **info}}


def _host_uname() -> dict[str, str]:
    return platform.uname()._asdict()


def _output(text: str, exit_code: int, *, timed_out: bool, timeout: float | None, extra: dict[str, Any]) -> dict:
    """An ``execute`` result as mini-swe-agent's environments return it (``output``, ``returncode``,
    ``exception_info``, ``extra``); a timeout is its ``returncode`` -1 with an ``exception_info``."""
    if not timed_out:
        return {"output": text, "returncode": exit_code, "exception_info": "", "extra": extra}
    limit = f" after {timeout:g}s" if timeout else ""
    return {
        "output": text,
        "returncode": -1,
        "exception_info": f"The command timed out{limit}; it was killed with its whole process group.",
        "extra": {**extra, "exception_type": "TimeoutError", "exception": f"timed out{limit}"},
    }


# -- (a) a swe_gym sandbox as a mini-swe-agent Environment ---------------------------------------


class SandboxEnvironmentConfig(BaseModel):
    """`SandboxEnvironment`'s keyword arguments, named as in mini-swe-agent's own environment configs.

    Unknown keys are ignored, as in mini-swe-agent (so its benchmark configs, which carry
    ``interpreter`` or ``run_args`` for its Docker environment, still load).
    """

    provider: str | dict[str, Any] = "local"
    """A swe_gym provider name (``local``, ``docker``, ``apptainer``, ``opensandbox``) or a ``{"type": ...}`` config."""
    image: str | None = None
    """The image (container providers); overrides ``sandbox.image``."""
    cwd: str = ""
    """Where commands run; empty: the sandbox's workdir (``sandbox.workdir``, default ``/testbed``)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of every command (added to the sandbox's non-interactive defaults)."""
    forward_env: list[str] = Field(default_factory=list)
    """Host variables passed to every command when set on the host; ``env`` wins on a clash."""
    timeout: float = 60.0
    """Seconds per command; then the command's whole process group is killed."""
    max_output_bytes: int | None = None
    """Output cap per command (head and tail kept); None: ``sandbox.max_output_bytes`` (1 MiB)."""
    sandbox: SandboxSpec = Field(default_factory=SandboxSpec)
    """Everything else about the sandbox created: resources, network, ttl_s, workdir, labels, files."""


class SandboxEnvironment:
    """mini-swe-agent ``Environment`` backed by a swe_gym sandbox on any provider.

    Commands run with swe_gym's exec semantics: a fresh ``bash -c`` per command, stdout and stderr
    merged, stdin at EOF, a timeout that kills the command's whole process group, output capped.
    As in mini-swe-agent, a command that exits 0 and whose output's first line is
    ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` raises ``Submitted`` with the rest of the output as
    the submission. A sandbox that stops answering raises `SandboxError` (nothing the agent can fix).

    Args:
        sandbox: run in this existing `Sandbox` (or `AsyncSandbox` of swe_gym's background loop)
            instead of creating one from the config.
        close_sandbox: whether `cleanup` removes the sandbox; default: only one this object created.
        config_class: as in mini-swe-agent's environments, the pydantic class of ``**kwargs``.
        **kwargs: `SandboxEnvironmentConfig` fields.

    Use it as a context manager, or call `cleanup` (alias `close`); mini-swe-agent's own scripts
    rely on garbage collection, which removes it too (and swe_gym's exit hook and the sandbox's TTL
    catch the rest).
    """

    def __init__(
        self,
        *,
        sandbox: Sandbox | AsyncSandbox | None = None,
        close_sandbox: bool | None = None,
        config_class: type[SandboxEnvironmentConfig] = SandboxEnvironmentConfig,
        **kwargs: Any,
    ) -> None:
        self.config = config_class(**kwargs)
        self._closed = False
        self._system: dict[str, str] | None = None
        if sandbox is None:
            spec = self.config.sandbox
            if self.config.image:
                spec = spec.model_copy(update={"image": self.config.image})
            sandbox = Sandbox.create(spec, self.config.provider)
            close_sandbox = True if close_sandbox is None else close_sandbox
        elif isinstance(sandbox, AsyncSandbox):
            sandbox = Sandbox(sandbox)
        self.sandbox: Sandbox = sandbox
        self._owns = bool(close_sandbox)

    @classmethod
    def from_sandbox(
        cls, sandbox: Sandbox | AsyncSandbox, *, close_sandbox: bool = False, **kwargs: Any
    ) -> SandboxEnvironment:
        """Wrap an existing sandbox; `cleanup` leaves it to its owner unless ``close_sandbox``."""
        return cls(sandbox=sandbox, close_sandbox=close_sandbox, **kwargs)

    @property
    def cwd(self) -> str:
        return self.config.cwd or self.sandbox.workdir

    # -- mini-swe-agent's Environment protocol --

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        """Run ``action["command"]``; the result has mini-swe-agent's keys (see `_output`)."""
        command = action.get("command", "")
        limit = timeout or self.config.timeout
        env = {key: os.environ[key] for key in self.config.forward_env if key in os.environ} | self.config.env
        result = self.sandbox.exec(
            command, timeout=limit, cwd=cwd or self.cwd, env=env, max_output_bytes=self.config.max_output_bytes
        )
        output = _output(
            result.output,
            result.exit_code,
            timed_out=result.timed_out,
            timeout=limit,
            extra={
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "output_truncated": result.output_truncated,
                "duration_s": result.duration_s,
            },
        )
        self._raise_if_submitted(output)
        return output

    @staticmethod
    def _raise_if_submitted(output: dict[str, Any]) -> None:
        first, _, rest = output["output"].lstrip().partition("\n")
        if output["returncode"] == 0 and first.strip() == SUBMIT_MARKER:
            raise Submitted(
                {"role": "exit", "content": rest, "extra": {"exit_status": "Submitted", "submission": rest}}
            )

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The config, the sandbox's ``uname`` (``system``, ``release``, ``version``, ``machine``: what
        mini-swe-agent's templates use), ``cwd``, ``sandbox_id``, ``provider_name``; then ``kwargs``."""
        sandbox_vars = {"cwd": self.cwd, "sandbox_id": self.sandbox.id, "provider_name": self.sandbox.aio.provider_name}
        return recursive_merge(self.config.model_dump(), self._system_vars(), sandbox_vars, kwargs)

    def serialize(self) -> dict:
        sandbox = {"id": self.sandbox.id, "provider": self.sandbox.aio.provider_name, "workdir": self.sandbox.workdir}
        return _serialize(self, sandbox=sandbox)

    # -- lifetime --

    def cleanup(self) -> None:
        """Remove the sandbox (if this environment owns it); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._owns:
            self.sandbox.close()

    close = cleanup

    def __enter__(self) -> SandboxEnvironment:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def __del__(self) -> None:
        if not getattr(self, "_owns", False) or getattr(self, "_closed", True) or sys.is_finalizing():
            return
        self._closed = True
        if in_loop_thread():  # the GC ran us on swe_gym's loop: never block it
            asyncio.run_coroutine_threadsafe(self.sandbox.aio.close(), background_loop())
            return
        with contextlib.suppress(Exception):
            self.sandbox.close()

    def _system_vars(self) -> dict[str, str]:
        """``uname`` of the sandbox (asked once), else of the host (as mini-swe-agent's Docker environment)."""
        if self._system is None:
            probe = "; ".join(f"uname -{flag}" for flag in "snrvm")
            system = _host_uname()
            try:
                result = self.sandbox.exec(probe, timeout=15)
                lines = result.output.splitlines()
                if result.ok and len(lines) == len(_UNAME_KEYS):
                    system |= dict(zip(_UNAME_KEYS, lines, strict=True))
            except SandboxError as exc:
                log.warning("could not ask sandbox %s for its uname: %s", self.sandbox.id, exc)
            self._system = system
        return self._system


# -- (b) mini-swe-agent's agent as the policy of an SWEEnv episode -------------------------------


class EpisodeEnvironmentConfig(BaseModel):
    """What `EpisodeEnvironment` serializes into the trajectory."""

    instance_id: str = ""
    sandbox_id: str = ""
    provider: str = ""
    max_steps: int | None = None
    step_timeout: float | None = None


class EpisodeEnvironment:
    """mini-swe-agent ``Environment`` over a running `SWEEnv` episode: ``execute`` is one ``env.step``.

    The episode's rules are SWEEnv's: its step timeout, observation cap and ``max_steps``, its
    submission (the ``submit`` action, or output whose first line is the marker — whatever the exit
    code). When a step ends the episode, ``execute`` raises mini-swe-agent's ``Submitted``
    (terminated) or ``LimitsExceeded`` (truncated: step limit, or a sandbox that died, masked), so
    the agent's loop stops; `final` then holds that step's ``(obs, reward, terminated, truncated, info)``.
    ``execute``'s ``timeout`` is ignored (SWEEnv's ``step_timeout`` applies); a ``cwd`` is a ``cd`` first.
    """

    def __init__(self, env: gym.Env, reset_info: Mapping[str, Any]) -> None:
        self.env = env
        settings = getattr(env.unwrapped, "settings", None)
        self.config = EpisodeEnvironmentConfig(
            instance_id=str(reset_info.get("instance_id", "")),
            sandbox_id=str(reset_info.get("sandbox_id", "")),
            provider=str(reset_info.get("provider", "")),
            max_steps=getattr(settings, "max_steps", None),
            step_timeout=getattr(settings, "step_timeout", None),
        )
        self.steps = 0
        self.final: tuple[str, float, bool, bool, dict[str, Any]] | None = None

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        if self.final is not None:
            raise RuntimeError("the SWEEnv episode is over; the agent cannot act in it any more")
        command = action.get("command", "")
        if cwd:
            command = f"cd {shlex.quote(cwd)} && {command}"
        observation, reward, terminated, truncated, info = self.env.step(command)
        self.steps += 1
        if terminated or truncated:
            self.final = (observation, float(reward), terminated, truncated, info)
            raise self._ending(observation, float(reward), terminated, info)
        keys = ("exit_code", "timed_out", "output_truncated", "duration_s")
        return _output(
            observation,
            int(info.get("exit_code", -1)),
            timed_out=bool(info.get("timed_out")),
            timeout=self.config.step_timeout,
            extra={"step": self.steps, **{key: info.get(key) for key in keys}},
        )

    @staticmethod
    def _ending(observation: str, reward: float, terminated: bool, info: Mapping[str, Any]) -> Exception:
        status = "Submitted" if terminated else "Masked" if info.get("masked") else "Truncated"
        message = {
            "role": "exit",
            "content": observation,
            "extra": {
                "exit_status": status,
                "submission": info.get("patch") or "",
                "reward": reward,
                "resolved": bool(info.get("resolved")),
                "masked": bool(info.get("masked")),
            },
        }
        return Submitted(message) if terminated else LimitsExceeded(message)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The config and the host's ``uname`` (as mini-swe-agent's Docker environment), then ``kwargs``.
        The episode's sandbox is not asked: every exec there is a step of the episode."""
        return recursive_merge(self.config.model_dump(), _host_uname(), kwargs)

    def serialize(self) -> dict:
        return _serialize(self)


class EpisodeResult(BaseModel):
    """One `run_episode`: our graded outcome and the agent's record."""

    reward: float
    """SWEEnv's reward for the episode (the graded patch; 0.0 when masked)."""
    terminated: bool
    """The agent submitted (SWEEnv's ``terminated``)."""
    truncated: bool
    """The episode ended without a submission: SWEEnv's step limit, a dead sandbox, or the agent's own
    limits / repeated format errors (then its work is graded as SWEEnv grades a truncated episode)."""
    exit_status: str
    """mini-swe-agent's exit status: ``Submitted``, ``Truncated``, ``Masked`` (the episode ended it), or the
    agent's own ``LimitsExceeded``, ``TimeExceeded``, ``RepeatedFormatError``."""
    steps: int
    """``env.step`` calls, the closing ``submit`` of an unsubmitted episode included."""
    info: dict[str, Any]
    """The terminal step's info: ``resolved``, ``masked``, ``masked_reason``, ``patch``, ``report``, ..."""
    reset_info: dict[str, Any]
    messages: list[dict[str, Any]]
    """The agent's messages (system, task, model turns, observations, exit)."""
    trajectory: dict[str, Any]
    """``agent.serialize()`` (mini-swe-agent's trajectory format) with ``info.swe_gym`` added."""
    model_calls: int
    cost: float

    @property
    def resolved(self) -> bool:
        return bool(self.info.get("resolved"))

    @property
    def masked(self) -> bool:
        return bool(self.info.get("masked"))


def run_episode(
    env: gym.Env,
    *,
    model: Any,
    agent_config: Mapping[str, Any] | None = None,
    agent_class: type = DefaultAgent,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> EpisodeResult:
    """Run one `SWEEnv` episode with mini-swe-agent's agent as the policy.

    ``env.reset(seed=, options=)`` picks the task; the agent (``agent_class(model, environment,
    **agent_config)``, mini-swe-agent's ``DefaultAgent`` by default) gets the reset observation as
    its ``task`` and acts through `EpisodeEnvironment`, each action one ``env.step``, until a step
    ends the episode (its submission, SWEEnv's ``max_steps``, a dead sandbox). If the agent stops
    first (its step/cost/time limit, repeated format errors), its work is graded with a closing
    ``submit`` when the env grades truncated episodes (``grade_on_truncation``, the default), else
    the env is closed and the reward is 0.0; either way the result is ``truncated``.

    If the agent or model raises, the env is closed (its sandbox removed) and the error propagates.

    Args:
        env: an `SWEEnv` (``gymnasium.make("swe_gym/SWE-v0", ...)`` or wrapped, e.g. by a recorder).
        model: a mini-swe-agent ``Model`` (e.g. ``minisweagent.models.get_model("anthropic/claude-...")``).
        agent_config: the agent's keyword arguments; default `default_agent_config` (mini-swe-agent's
            ``mini.yaml``). With ``output_path`` the trajectory is saved there, ``info.swe_gym`` included.
        agent_class: a mini-swe-agent agent class (``DefaultAgent`` or a subclass).
    """
    config = dict(default_agent_config() if agent_config is None else agent_config)
    observation, reset_info = env.reset(seed=seed, options=options)
    environment = EpisodeEnvironment(env, reset_info)
    try:
        agent = agent_class(model, environment, **config)
        agent.run(observation)
        if environment.final is None:
            _end_unsubmitted(env, environment)
    except BaseException:
        try:
            env.close()  # removes the episode's sandbox
        except Exception:
            log.exception("could not close the env after the agent failed")
        raise
    assert environment.final is not None
    _, reward, terminated, truncated, info = environment.final
    exit_status = agent.messages[-1].get("extra", {}).get("exit_status", "") if agent.messages else ""
    summary = {
        "instance_id": environment.config.instance_id,
        "reward": float(reward),
        "resolved": bool(info.get("resolved")),
        "masked": bool(info.get("masked")),
        "terminated": bool(terminated),
        "truncated": bool(truncated),
        "steps": environment.steps,
    }
    extra = {"info": {"swe_gym": summary}}
    trajectory = agent.save(agent.config.output_path, extra) if agent.config.output_path else agent.serialize(extra)
    return EpisodeResult(
        reward=float(reward),
        terminated=bool(terminated),
        truncated=bool(truncated),
        exit_status=exit_status,
        steps=environment.steps,
        info=dict(info),
        reset_info=dict(reset_info),
        messages=agent.messages,
        trajectory=trajectory,
        model_calls=agent.n_calls,
        cost=agent.cost,
    )


def _end_unsubmitted(env: gym.Env, environment: EpisodeEnvironment) -> None:
    """The agent stopped without ending the episode: grade its work as a truncated episode, or drop it."""
    settings = getattr(env.unwrapped, "settings", None)
    if getattr(settings, "grade_on_truncation", True):
        observation, reward, _, _, info = env.step(SUBMIT)
        environment.steps += 1
        environment.final = (observation, float(reward), False, True, info)
        return
    env.close()  # the only public way to free the episode's sandbox without grading
    info = {"resolved": False, "masked": False, "masked_reason": None, "patch": "", "report": None}
    environment.final = ("", 0.0, False, True, info)
