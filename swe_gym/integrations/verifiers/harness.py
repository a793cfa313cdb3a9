"""`SWEGymHarness`: the seat's program, one chat completion per segment, run in-process.

verifiers' interception is the contract, not the process (`verifiers.v1.Harness.launch`): each segment sends
the conversation (the task's system prompt, then the exchange so far) to the rollout's interception endpoint
once, without streaming, so the trace records the call, its tokens and its limits as for any harness. It is
the taskset's default because verifiers' own tool-less chat program (the ``null`` harness) is a uv script
that installs its packages from PyPI in every fresh runtime and always streams, and OpenAI-compatible
servers that end a naturally stopped stream without a ``finish_reason`` chunk (llama-cpp-python's) fail it.
``--env.agent.harness.id null`` runs that program instead; the env is the same.
"""

from __future__ import annotations

import verifiers.v1 as vf
from openai import APIError, AsyncOpenAI
from verifiers.v1.dialects.chat import message_to_wire

#: The exit status of a segment whose model call failed (verifiers surfaces the interception's error).
CALL_FAILED = 1


class SWEGymHarnessConfig(vf.HarnessConfig):
    """No knobs: sampling, limits and the model are the seat's (``--env.agent.*``, ``--sampling.*``)."""


class SWEGymHarness(vf.Harness[SWEGymHarnessConfig]):
    """A stateless chat step: replayed on the whole conversation each segment (``SUPPORTS_RESUME``)."""

    APPENDS_SYSTEM_PROMPT = True
    SUPPORTS_RESUME = True
    EXECUTES_CODE = False  # the model's commands run in swe_gym's sandbox, never in this runtime
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        system, prompt = self.resolve_prompt(data)
        messages = [{"role": "system", "content": system}] if system else []
        if isinstance(prompt, str):
            messages.append({"role": "user", "content": prompt})
        elif prompt is not None:
            messages.extend(message_to_wire(message) for message in prompt)
        async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=0) as client:
            try:
                await client.chat.completions.create(model=ctx.model, messages=messages)
            except APIError as exc:  # the interception holds the real error; the rollout raises it
                return vf.ProgramResult(exit_code=CALL_FAILED, stdout="", stderr=f"model call failed: {exc}")
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")
