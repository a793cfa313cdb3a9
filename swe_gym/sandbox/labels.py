"""Labels that mark a sandbox as ours, its run, and when it expires."""

from __future__ import annotations

import os
import time
import uuid

MANAGED = "swe_gym.managed"
RUN_ID = "swe_gym.run_id"
CREATED_AT = "swe_gym.created_at"
EXPIRES_AT = "swe_gym.expires_at"

#: One id per process unless SWE_GYM_RUN_ID says otherwise; `swe-gym cleanup --run-id` uses it.
DEFAULT_RUN_ID = os.environ.get("SWE_GYM_RUN_ID") or uuid.uuid4().hex[:12]


def sandbox_labels(extra: dict[str, str], ttl_s: float) -> dict[str, str]:
    now = time.time()
    return {EXPIRES_AT: f"{now + ttl_s:.0f}", **image_labels(extra, now)}


def image_labels(extra: dict[str, str], now: float | None = None) -> dict[str, str]:
    """Labels of an image we made: ours, the run, when; no expiry (an image is a cache, removed by cleanup)."""
    created = time.time() if now is None else now
    labels = {MANAGED: "true", RUN_ID: DEFAULT_RUN_ID, CREATED_AT: f"{created:.0f}"}
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
