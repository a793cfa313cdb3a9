"""Moved to `swe_gym.integrations.nemo_rl.hook`; this path stays importable for code that names it."""

from swe_gym.integrations.nemo_rl.hook import ROLLOUT_FUNCTIONS, install_rollout_hook, post_process_rollout

__all__ = ["ROLLOUT_FUNCTIONS", "install_rollout_hook", "post_process_rollout"]
