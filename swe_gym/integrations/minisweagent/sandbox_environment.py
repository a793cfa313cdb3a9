"""(a) `SandboxEnvironment`: a swe_gym sandbox of any provider as mini-swe-agent's ``Environment``.

It implements mini-swe-agent's ``Environment`` protocol (``execute``, ``get_template_vars``,
``serialize``, and ``cleanup`` as its own environments have), so its ``DefaultAgent`` (or its ``mini``
command, with ``environment_class: swe_gym.integrations.minisweagent.SandboxEnvironment``) runs
unchanged on ``local``, ``docker``, ``apptainer`` or ``opensandbox``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from typing import Any

from minisweagent.exceptions import Submitted
from minisweagent.utils.serialize import recursive_merge
from pydantic import BaseModel, Field

from swe_gym.envs.prompt import is_submission
from swe_gym.errors import SandboxError
from swe_gym.integrations.minisweagent.protocol import UNAME_KEYS, execute_result, host_uname, serialized
from swe_gym.sandbox import AsyncSandbox, Sandbox, SandboxSpec
from swe_gym.sandbox.loop import background_loop, in_loop_thread

log = logging.getLogger(__name__)


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
        """Run ``action["command"]``; the result has mini-swe-agent's keys (see `execute_result`)."""
        command = action.get("command", "")
        limit = timeout or self.config.timeout
        env = {key: os.environ[key] for key in self.config.forward_env if key in os.environ} | self.config.env
        result = self.sandbox.exec(
            command, timeout=limit, cwd=cwd or self.cwd, env=env, max_output_bytes=self.config.max_output_bytes
        )
        output = execute_result(
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
        if is_submission(output["output"], output["returncode"]):
            rest = output["output"].lstrip().partition("\n")[2]
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
        return serialized(self, sandbox=sandbox)

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
            system = host_uname()
            try:
                result = self.sandbox.exec(probe, timeout=15)
                lines = result.output.splitlines()
                if result.ok and len(lines) == len(UNAME_KEYS):
                    system |= dict(zip(UNAME_KEYS, lines, strict=True))
            except SandboxError as exc:
                log.warning("could not ask sandbox %s for its uname: %s", self.sandbox.id, exc)
            self._system = system
        return self._system
