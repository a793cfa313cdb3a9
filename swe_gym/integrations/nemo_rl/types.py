"""NeMo RL's environment types: its own when NeMo RL is installed, else structurally identical copies.

``nemo-rl`` on PyPI is an empty placeholder, so swe_gym cannot depend on it. When NeMo RL cannot be
imported, this module defines `EnvironmentReturn` and `EnvironmentInterface` with the same names,
fields, order and abstract methods as ``nemo_rl/environments/interfaces.py`` (NVIDIA-NeMo/RL
@7ea279ab), and `BatchedDataDict` as a plain dict. `NEMO_RL_AVAILABLE` says which ones are in use.
"""

from __future__ import annotations

import abc
import logging
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from swe_gym.errors import ConfigError

if TYPE_CHECKING:
    from torch import Tensor

log = logging.getLogger(__name__)

MetadataT = TypeVar("MetadataT")

try:  # NeMo RL's own types when it is installed, so isinstance and type checks see one class
    from nemo_rl.distributed.batched_data_dict import BatchedDataDict
    from nemo_rl.environments.interfaces import EnvironmentInterface, EnvironmentReturn

    NEMO_RL_AVAILABLE = True
    log.info("swe_gym NeMo RL env: using NeMo RL's own EnvironmentInterface and EnvironmentReturn")
except ImportError as _exc:  # the PyPI `nemo-rl` is an empty placeholder: same names, same fields, same order
    NEMO_RL_AVAILABLE = False
    if _exc.name is not None and _exc.name.split(".")[0] == "nemo_rl":
        log.info("swe_gym NeMo RL env: NeMo RL is not installed; using swe_gym's copies of its types")
    else:  # NeMo RL is there but one of its own imports failed: say so, never switch silently
        log.warning("swe_gym NeMo RL env: NeMo RL failed to import (%s); using swe_gym's copies of its types", _exc)
    BatchedDataDict = dict  # type: ignore[assignment,misc]  # NeMo RL's is a dict-like UserDict

    class EnvironmentReturn(NamedTuple, Generic[MetadataT]):  # type: ignore[no-redef]
        """Batched return of ``step`` (NeMo RL ``nemo_rl/environments/interfaces.py``).

        observations: one ``{"role": ..., "content": ...}`` message per sample.
        metadata: the updated metadata (``extra_env_info``) per sample.
        next_stop_strings: stop strings for the next turn per sample (or None).
        rewards: ``Tensor[B]`` (or a dict of named ``Tensor[B]`` for multi-reward).
        terminateds: ``Tensor[B]``, whether each episode ended this turn.
        answers: per-sample answers (here: the final patch), or None.
        """

        observations: list[dict[str, str]]
        metadata: list[MetadataT]
        next_stop_strings: list[list[str] | None] | list[None]
        rewards: Tensor | dict[str, Tensor]
        terminateds: Tensor
        answers: list[str | None] | None

    class EnvironmentInterface(abc.ABC, Generic[MetadataT]):  # type: ignore[no-redef]
        """NeMo RL's environment contract (``nemo_rl/environments/interfaces.py``)."""

        @abc.abstractmethod
        def step(
            self, message_log_batch: list[list[dict[str, Any]]], metadata: list[MetadataT]
        ) -> EnvironmentReturn[MetadataT]:
            """Run one turn for a batch of message logs; metadata is each sample's ``extra_env_info``."""

        @abc.abstractmethod
        def global_post_process_and_metrics(self, batch: BatchedDataDict) -> tuple[BatchedDataDict, dict]:
            """Post-process the finished rollout batch and return it with metrics."""


def require_torch() -> Any:
    """The ``torch`` module (NeMo RL's rewards and masks are its tensors), or a `ConfigError` saying how to get it."""
    try:
        import torch
    except ImportError:
        raise ConfigError(
            "the NeMo RL environment returns torch tensors: install torch (pip install 'swe_gym[nemo_rl]')"
        ) from None
    return torch


__all__ = [
    "NEMO_RL_AVAILABLE",
    "BatchedDataDict",
    "EnvironmentInterface",
    "EnvironmentReturn",
    "MetadataT",
    "require_torch",
]
