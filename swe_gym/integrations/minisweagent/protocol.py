"""mini-swe-agent's ``Environment`` protocol as its own environments speak it: what ``execute`` returns,
what ``serialize`` writes, the ``uname`` its templates read, and the agent config it ships."""

from __future__ import annotations

import platform
from typing import Any

from minisweagent.config import get_config_from_spec

#: mini-swe-agent's bundled config whose agent section `run_episode` uses by default (tool-call models).
DEFAULT_CONFIG = "mini.yaml"
#: The ``uname`` fields mini-swe-agent's templates use, in ``uname -snrvm`` order.
UNAME_KEYS = ("system", "node", "release", "version", "machine")


def default_agent_config(spec: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """The ``agent`` section of a mini-swe-agent config (a bundled name such as ``"mini.yaml"``, or a path)."""
    return dict(get_config_from_spec(spec).get("agent", {}))


def default_model_config(spec: str = DEFAULT_CONFIG) -> dict[str, Any]:
    """The ``model`` section of a mini-swe-agent config: for ``mini.yaml``, its tool-calling model's
    observation and format-error templates and ``model_kwargs``
    (``LitellmModel(model_name=..., **default_model_config())``)."""
    return dict(get_config_from_spec(spec).get("model", {}))


def serialized(environment: Any, **info: Any) -> dict:
    """mini-swe-agent's environment ``serialize`` layout (``info.config.environment``/``environment_type``)."""
    kind = f"{type(environment).__module__}.{type(environment).__name__}"
    config = {"environment": environment.config.model_dump(mode="json"), "environment_type": kind}
    return {"info": {"config": config, **info}}


def host_uname() -> dict[str, str]:
    return platform.uname()._asdict()


def execute_result(
    text: str, exit_code: int, *, timed_out: bool, timeout: float | None, extra: dict[str, Any]
) -> dict[str, Any]:
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
