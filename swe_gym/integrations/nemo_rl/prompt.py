"""`build_prompt`: the first user message of a NeMo RL sample (the issue, the rules, the reply format)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from swe_gym.envs.prompt import SUBMIT, task_prompt
from swe_gym.integrations.nemo_rl.config import SWEGymEnvConfig, as_config
from swe_gym.tasks import SWETask


def build_prompt(task: SWETask, config: SWEGymEnvConfig | Mapping[str, Any] | None = None) -> str:
    """The first user message for ``task``: the issue, the rules, and how to write an action.

    A NeMo RL data processor puts it in the datum's ``message_log`` and ``{"instance_id": ...}``
    in its ``extra_env_info``.
    """
    cfg = as_config(config)
    if cfg.action_format == "tag":
        tag = cfg.action_tag
        how = f"Put the command in one <{tag}>...</{tag}> element, e.g. <{tag}>ls</{tag}>."
    else:
        how = "Put the command in exactly one fenced block, e.g.\n```bash\nls\n```"
    rules = task_prompt(task, workdir=task.workdir, step_timeout=cfg.step_timeout, max_steps=cfg.max_steps)
    if "text" not in cfg.accept_actions:
        reply = "Reply format: think, then call a tool."
    else:
        reply = f"Reply format: think, then give one command. {how}\nTo submit, the command is `{SUBMIT}`."
    if "hermes" in cfg.accept_actions:
        tools = ", ".join(cfg.tools or ())
        example = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls"}}\n</tool_call>'
        reply += f"\nYou can call tools instead ({tools}), each call in its own element, e.g.\n{example}"
    return f"{rules}\n{reply}\n"
