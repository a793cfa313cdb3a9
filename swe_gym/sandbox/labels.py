"""Labels that mark a sandbox as ours, its run, and when it expires."""

from __future__ import annotations

import time
import uuid

from swe_gym.settings import settings

MANAGED = "swe_gym.managed"
RUN_ID = "swe_gym.run_id"
CREATED_AT = "swe_gym.created_at"
EXPIRES_AT = "swe_gym.expires_at"

#: This process's run id, unless SWE_GYM_RUN_ID names one.
_PROCESS_RUN_ID = uuid.uuid4().hex[:12]


def current_run_id() -> str:
    """The run id our sandboxes are labelled with: ``SWE_GYM_RUN_ID`` as it is now, else one per process.

    `swe-gym cleanup --run-id` removes by it.
    """
    return settings().run_id or _PROCESS_RUN_ID


def sandbox_labels(extra: dict[str, str], ttl_s: float) -> dict[str, str]:
    now = time.time()
    return {EXPIRES_AT: f"{now + ttl_s:.0f}", **image_labels(extra, now)}


def image_labels(extra: dict[str, str], now: float | None = None) -> dict[str, str]:
    """Labels of an image we made: ours, the run, when; no expiry (an image is a cache, removed by cleanup)."""
    created = time.time() if now is None else now
    labels = {MANAGED: "true", RUN_ID: current_run_id(), CREATED_AT: f"{created:.0f}"}
    labels.update({label_key(k): str(v) for k, v in extra.items()})
    return labels


def label_key(key: str) -> str:
    """Our labels live under ``swe_gym.``: ``task_id`` -> ``swe_gym.task_id``; dotted keys stay."""
    return key if "." in key else f"swe_gym.{key}"


def matches(
    labels: dict[str, str],
    *,
    run_id: str | None,
    older_than_s: float | None,
    extra: dict[str, str] | None = None,
) -> bool:
    """Whether a sandbox with these labels is selected by a cleanup filter (``extra``: labels it must carry)."""
    if labels.get(MANAGED) != "true":
        return False
    if any(labels.get(label_key(k)) != str(v) for k, v in (extra or {}).items()):
        return False
    if run_id is not None and labels.get(RUN_ID) != run_id:
        return False
    if older_than_s is not None:
        created = float(labels.get(CREATED_AT, "0") or 0)
        if time.time() - created < older_than_s:
            return False
    return True
