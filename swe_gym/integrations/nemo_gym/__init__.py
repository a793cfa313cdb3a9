"""swe_gym as a NeMo Gym environment (NVIDIA NeMo Gym, PyPI's ``nemo-gym``): a resources server whose sessions
are swe_gym episodes, driven by NeMo Gym's own ``simple_agent`` and rollout collection.

- `server.SweGymResourcesServer`: each NeMo Gym session is one episode of swe_gym's `EpisodeHost`; the tools
  (``bash``, ``str_replace_editor``, ``submit``) are its actions, ``/verify`` is swe_gym's grade, and a masked
  episode sets NeMo Gym's ``mask_sample`` (with a ``failure_kind``) instead of passing for a reward 0.
- `rows.task_rows`: swe_gym tasks as the JSONL rows NeMo Gym's rollout collection reads.
- ``servers/``: the server directory NeMo Gym discovers (put it on ``NEMO_GYM_EXTRA_ROOTS``) with its YAML config.

Needs NeMo Gym's Python (>= 3.13.14 for nemo-gym 0.5+): `server` imports ``nemo_gym``; see docs/nemo-gym.md.
"""

from pathlib import Path

#: The root NeMo Gym searches for ``resources_servers/swe_gym`` (``NEMO_GYM_EXTRA_ROOTS``).
SERVERS_ROOT = Path(__file__).resolve().parent / "servers"
#: The config that runs swe_gym's resources server with NeMo Gym's simple_agent in front of it.
CONFIG_PATH = SERVERS_ROOT / "resources_servers" / "swe_gym" / "configs" / "swe_gym.yaml"
