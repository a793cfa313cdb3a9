"""Importing mini-swe-agent without its startup banner (a library never prints), ``os.environ`` left as it was."""

from __future__ import annotations

import os


def import_quietly() -> None:
    """Import mini-swe-agent without its startup banner (a library never prints), leaving ``os.environ``
    as it was: the variable that silences it is set only for the import."""
    before = os.environ.get("MSWEA_SILENT_STARTUP")
    os.environ["MSWEA_SILENT_STARTUP"] = "1"
    try:
        import minisweagent  # noqa: F401 - the extra is there, or the error below says how
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "swe_gym.integrations.minisweagent needs mini-swe-agent: pip install 'swe_gym[minisweagent]'"
        ) from exc
    finally:
        if before is None:
            del os.environ["MSWEA_SILENT_STARTUP"]
        else:
            os.environ["MSWEA_SILENT_STARTUP"] = before


import_quietly()
