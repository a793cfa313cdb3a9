"""FAKE NeMo Gym model server for one test: it plays a policy that applies the task's gold patch.

A real model (the llama.cpp SmolLM2 the other rollouts use) almost never resolves a task, so the resolved
case needs a policy that does: this one finds the task by its issue text in the prompt, calls the env's own
``bash`` tool with ``git apply`` of swe_gym's gold patch, then ``submit``, then answers in text. Everything
else in that rollout is real: NeMo Gym's simple_agent, its rollout collection, swe_gym's server and grade.
"""

import json
import uuid
from typing import Any

from nemo_gym.base_responses_api_model import BaseResponsesAPIModelConfig, SimpleResponsesAPIModel
from nemo_gym.openai_utils import (
    NeMoGymChatCompletion,
    NeMoGymChatCompletionCreateParamsNonStreaming,
    NeMoGymResponse,
    NeMoGymResponseCreateParamsNonStreaming,
)

from swe_gym.tasks import load_tasks


def _text(item: Any) -> str:
    content = item.get("content") if isinstance(item, dict) else getattr(item, "content", None)
    if isinstance(content, str):
        return content
    return "".join(
        getattr(part, "text", "") or (part.get("text", "") if isinstance(part, dict) else "") for part in content or ()
    )


class FakeGoldPatchModel(SimpleResponsesAPIModel):
    """FAKE: turn 1 applies the gold patch with bash, turn 2 submits, turn 3 says it is done."""

    ray_enabled = False
    config: BaseResponsesAPIModelConfig

    async def responses(self, body: NeMoGymResponseCreateParamsNonStreaming) -> NeMoGymResponse:
        items = [item if isinstance(item, dict) else item.model_dump() for item in body.input]
        done = sum(item.get("type") == "function_call_output" for item in items)
        prompt = _text(items[0])
        task = next(t for t in load_tasks("bundled") if t.problem_statement.strip() in prompt)
        calls = [("bash", {"command": f"git apply <<'SWE_GYM_EOF'\n{task.patch}\nSWE_GYM_EOF"}), ("submit", {})]
        if done < len(calls):
            name, arguments = calls[done]
            output = {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex}",
                "call_id": f"call_{uuid.uuid4().hex}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
        else:
            text = {"type": "output_text", "text": "Done.", "annotations": []}
            output = {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        return NeMoGymResponse.model_validate(
            {
                "id": f"resp_{uuid.uuid4().hex}",
                "created_at": 0.0,
                "model": "fake_gold_patch_model",
                "object": "response",
                "output": [output],
                "parallel_tool_calls": False,
                "tool_choice": "auto",
                "tools": [],
            }
        )

    async def chat_completions(self, body: NeMoGymChatCompletionCreateParamsNonStreaming) -> NeMoGymChatCompletion:
        raise NotImplementedError("the fake gold-patch model answers /v1/responses only")


if __name__ == "__main__":
    FakeGoldPatchModel.run_webserver()
