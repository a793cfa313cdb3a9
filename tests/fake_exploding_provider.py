"""FAKE provider for one test: its create raises an unexpected error (not a SandboxError).

No real provider fails this way on purpose; the test checks that such a bug in a
third-party provider costs only the instances it touches, never the whole evaluation.
"""

from __future__ import annotations


class FakeExplodingProvider:
    """FAKE: every create raises ``RuntimeError("boom")``."""

    name = "fake-exploding"
    max_concurrent_creates = 4

    async def create(self, spec: object) -> object:
        raise RuntimeError("boom")

    async def cleanup(self, *, run_id: str | None = None, older_than_s: float | None = None) -> list[str]:
        return []
