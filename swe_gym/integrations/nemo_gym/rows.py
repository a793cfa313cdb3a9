"""swe_gym tasks as NeMo Gym dataset rows: the JSONL its rollout collection reads (``+input_jsonl_fpath=``).

Each row carries the episode's first user message (the issue and the rules, as every swe_gym front end
states them), the tools in the Responses API's function-tool shape, the task's ``instance_id`` (which
``/seed_session`` starts and ``/verify`` grades) and the agent that runs it (``agent_ref``).

    python -m swe_gym.integrations.nemo_gym.rows --out rows.jsonl [--instance-id ID ...] [--agent NAME]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from swe_gym.envs.prompt import task_prompt
from swe_gym.tasks import SWETask, load_tasks
from swe_gym.tools import tool_schemas

#: The agent instance of the shipped config (servers/resources_servers/swe_gym/configs/swe_gym.yaml).
DEFAULT_AGENT = "swe_gym_simple_agent"
DEFAULT_TOOLS = ("bash", "str_replace_editor", "submit")


def responses_tools(names: Sequence[str] = DEFAULT_TOOLS) -> list[dict[str, Any]]:
    """swe_gym's tool schemas in the Responses API's flat function-tool shape (what NeMo Gym's rows carry)."""
    return [
        {"type": "function", "strict": False, **{k: tool["function"][k] for k in ("name", "description", "parameters")}}
        for tool in tool_schemas(list(names))
    ]


def task_row(
    task: SWETask,
    *,
    agent: str = DEFAULT_AGENT,
    tools: Sequence[str] = DEFAULT_TOOLS,
    step_timeout: float = 60.0,
    max_steps: int = 20,
) -> dict[str, Any]:
    """One NeMo Gym row for ``task``: its prompt, the tools, its ``instance_id`` and ``agent_ref``."""
    prompt = task_prompt(task, workdir=task.workdir, step_timeout=step_timeout, max_steps=max_steps)
    return {
        "responses_create_params": {
            "input": [{"role": "user", "content": f"{prompt}\nReply format: think, then call a tool."}],
            "tools": responses_tools(tools),
        },
        "instance_id": task.instance_id,
        "agent_ref": {"type": "responses_api_agents", "name": agent},
    }


def task_rows(tasks: Iterable[SWETask], **options: Any) -> list[dict[str, Any]]:
    return [task_row(task, **options) for task in tasks]


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    lines = [json.dumps(row) + "\n" for row in rows]
    path.write_text("".join(lines))
    return len(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    parser.add_argument("--tasks", default="bundled", help="a swe_gym task source (default: bundled)")
    parser.add_argument("--instance-id", action="append", dest="instance_ids", help="only these tasks")
    parser.add_argument("--agent", default=DEFAULT_AGENT, help=f"the agent instance (default: {DEFAULT_AGENT})")
    parser.add_argument("--max-steps", type=int, default=20, help="the step limit the prompt states")
    args = parser.parse_args(argv)
    tasks = load_tasks(args.tasks, instance_ids=args.instance_ids)
    count = write_rows(args.out, task_rows(tasks, agent=args.agent, max_steps=args.max_steps))
    print(f"wrote {count} rows to {args.out}")


if __name__ == "__main__":
    main()
