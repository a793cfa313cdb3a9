"""`register_with_nemo_rl`: swe_gym in NeMo RL's environment registries, by the actor's qualified name."""

from __future__ import annotations

from swe_gym.errors import ConfigError

#: What NeMo RL's registries name: the Ray actor class (``SWEGymEnvironmentActor`` of this package).
ACTOR_CLASS_FQN = "swe_gym.integrations.nemo_rl.SWEGymEnvironmentActor"
#: The name `register_with_nemo_rl` registers by default (``data.default.env_name`` and the ``env:`` key in YAML).
DEFAULT_ENV_NAME = "swe_gym"


def register_with_nemo_rl(env_name: str = DEFAULT_ENV_NAME) -> str:
    """Add swe_gym to NeMo RL's environment registry and actor-environment registry; returns ``env_name``.

    Call it in the training script before NeMo RL sets up its environments (``setup_data`` /
    ``create_env``). It also installs the rollout hook (`swe_gym.integrations.nemo_rl.hook`) that
    brings swe_gym's masks into the rollout batch GRPO filters. Idempotent for the same name; a name
    taken by another env is an error.
    """
    try:
        from nemo_rl.distributed.ray_actor_environment_registry import ACTOR_ENVIRONMENT_REGISTRY
        from nemo_rl.distributed.virtual_cluster import PY_EXECUTABLES
        from nemo_rl.environments.utils import ENV_REGISTRY, register_env
    except ImportError as exc:
        raise ConfigError(
            f"NeMo RL's registries cannot be imported ({exc}): install NeMo RL from its repository "
            "(the PyPI 'nemo-rl' is an empty placeholder), or use SWEGymEnvironmentActor directly"
        ) from None
    from swe_gym.integrations.nemo_rl.hook import install_rollout_hook

    # The actor runs in the driver's interpreter, which has swe_gym installed.
    ACTOR_ENVIRONMENT_REGISTRY.setdefault(ACTOR_CLASS_FQN, PY_EXECUTABLES.SYSTEM)
    install_rollout_hook()
    current = ENV_REGISTRY.get(env_name)
    if current is None:
        register_env(env_name, ACTOR_CLASS_FQN)
    elif current.get("actor_class_fqn") != ACTOR_CLASS_FQN:
        raise ConfigError(f"NeMo RL env name {env_name!r} is taken by {current.get('actor_class_fqn')}")
    return env_name
