"""mini-swe-agent interop: our sandboxes as its ``Environment``, its agent as the policy of an `SWEEnv` episode.

- `SandboxEnvironment` (``sandbox_environment``) implements mini-swe-agent's ``Environment`` protocol on a
  swe_gym sandbox of any provider, so its ``DefaultAgent`` (or its ``mini`` command, with
  ``environment_class: swe_gym.integrations.minisweagent.SandboxEnvironment``) runs unchanged on
  ``local``, ``docker``, ``apptainer`` or ``opensandbox``.
- `run_episode` (``run``) runs mini-swe-agent's own agent loop as the policy of one `SWEEnv` episode
  through `EpisodeEnvironment` (``episode_environment``): every action it takes is an ``env.step``, its
  submission (``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT``, exit 0) ends the episode through SWEEnv's
  submit, and the `EpisodeResult` holds our graded reward and terminal info next to the agent's
  messages and trajectory.
- ``protocol``: the shapes mini-swe-agent's environments return, shared by both.

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

from swe_gym.integrations.minisweagent import quiet_import  # noqa: F401 - first: mini-swe-agent, no banner
from swe_gym.integrations.minisweagent.episode_environment import EpisodeEnvironment, EpisodeEnvironmentConfig
from swe_gym.integrations.minisweagent.protocol import DEFAULT_CONFIG, default_agent_config, default_model_config
from swe_gym.integrations.minisweagent.run import EpisodeResult, run_episode
from swe_gym.integrations.minisweagent.sandbox_environment import SandboxEnvironment, SandboxEnvironmentConfig

# Trajectories name an environment by its class's module (``info.config.environment_type``): the public one.
for _cls in (SandboxEnvironment, EpisodeEnvironment):
    _cls.__module__ = __name__

__all__ = [
    "DEFAULT_CONFIG",
    "EpisodeEnvironment",
    "EpisodeEnvironmentConfig",
    "EpisodeResult",
    "SandboxEnvironment",
    "SandboxEnvironmentConfig",
    "default_agent_config",
    "default_model_config",
    "run_episode",
]
