"""Vector envs: many SWE episodes stepped together, as Gymnasium's ``gymnasium.vector``.

`SWEVectorEnv` runs its sub-envs on swe_gym's event loop; `swe_gym.vector.ray_vector_env.RayVectorEnv`
(``pip install 'swe_gym[ray]'``) in Ray actors over a cluster. Both share `batched.BatchedSWEEnv`.
"""

from swe_gym.vector.swe_vector_env import SWEVectorEnv

__all__ = ["SWEVectorEnv"]
