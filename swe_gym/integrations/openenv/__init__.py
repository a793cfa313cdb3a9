"""swe_gym served in OpenEnv's protocol (``swe-gym serve``), driven by OpenEnv's own client.

One module per job:

- ``models``: `SWEAction` (a bash ``command`` or a ``tool_call``), `SWEObservation` (``output``, ``terminated``,
  ``truncated``, and `SWEEnv`'s ``info``: ``masked``, ``masked_reason``, the grading report), `SWEState`;
- ``environment``: `SWEGymOpenEnv`, OpenEnv's ``Environment`` as a thin adapter over a shared `EpisodeHost`
  (one per session, its episodes at the session's id);
- ``sessions``: `SessionServer`, OpenEnv's ``HTTPEnvServer`` plus the idle rule and shutdown;
- ``auth``: the token (`TokenAuth`, `client_url`);
- ``app``: `create_app`, the FastAPI app (``swe-gym serve`` runs it with uvicorn);
- ``launch``: `ServedEnv`, ``swe-gym serve`` in a child process (for scripts, tests and benchmarks).

>>> from openenv.core import GenericEnvClient            # doctest: +SKIP
>>> with GenericEnvClient(base_url=client_url("http://127.0.0.1:8000", token)).sync() as env:
...     result = env.reset(seed=0)
...     result = env.step({"command": "ls"})
...     result = env.step({"tool_call": {"name": "submit", "arguments": {}}})
...     result.done, result.reward, result.observation["info"]["resolved"]
(True, 0.0, False)
"""

from swe_gym.integrations.openenv.app import create_app
from swe_gym.integrations.openenv.auth import TokenAuth, client_url
from swe_gym.integrations.openenv.environment import SessionClosedError, SWEGymOpenEnv
from swe_gym.integrations.openenv.launch import ServedEnv
from swe_gym.integrations.openenv.models import SWEAction, SWEObservation, SWEState
from swe_gym.integrations.openenv.sessions import SessionServer

__all__ = [
    "SWEAction",
    "SWEGymOpenEnv",
    "SWEObservation",
    "SWEState",
    "ServedEnv",
    "SessionClosedError",
    "SessionServer",
    "TokenAuth",
    "client_url",
    "create_app",
]
