"""Provider-neutral sandboxes: create one, run commands in it, move files, close it.

Knows nothing of tasks, grading or Gymnasium; it could ship alone.
"""

from swe_gym.sandbox.facade import AsyncSandbox, Sandbox
from swe_gym.sandbox.images import ImageRewriter, RewriteRule
from swe_gym.sandbox.labels import current_run_id
from swe_gym.sandbox.protocol import ImageCommitter, SandboxBackend, SandboxForker, SandboxProvider
from swe_gym.sandbox.registry import ENTRY_POINT_GROUP, available_providers, get_provider, register_provider
from swe_gym.sandbox.spec import ExecResult, ImageInfo, Resources, SandboxSpec, SandboxStatus

__all__ = [
    "ENTRY_POINT_GROUP",
    "AsyncSandbox",
    "ExecResult",
    "ImageCommitter",
    "ImageInfo",
    "ImageRewriter",
    "Resources",
    "RewriteRule",
    "Sandbox",
    "SandboxBackend",
    "SandboxForker",
    "SandboxProvider",
    "SandboxSpec",
    "SandboxStatus",
    "available_providers",
    "current_run_id",
    "get_provider",
    "register_provider",
]
