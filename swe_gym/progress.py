"""Progress of long work (gradings, episodes, image pulls, SIF builds) on stderr, with tqdm.

On a terminal it is a live bar; otherwise (CI logs, pipes) there is no bar and each finished item
that asks for it gets one line. ``SWE_GYM_PROGRESS=0`` turns bars off everywhere. Log records go
through `log_handler`, which prints above a live bar instead of through it.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

from tqdm import tqdm

#: Live bars, so a log line or an error can be printed above them.
_LIVE: list[Progress] = []


def _enabled() -> bool:
    return os.environ.get("SWE_GYM_PROGRESS", "1") not in ("0", "false", "no") and sys.stderr.isatty()


class Progress:
    """``with Progress(total, "grading", "instance") as bar: bar.advance(postfix, line=...)``."""

    def __init__(self, total: int | None, desc: str, unit: str = "it", *, unit_scale: bool = False) -> None:
        self.bar = tqdm(
            total=total,
            desc=desc,
            unit=unit,
            unit_scale=unit_scale,
            file=sys.stderr,
            disable=not _enabled(),
            dynamic_ncols=True,
            leave=True,
        )
        _LIVE.append(self)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def set_total(self, total: int) -> None:
        if self.bar.total != total:
            self.bar.total = total
            self.bar.refresh()

    def status(self, text: str) -> None:
        """What is going on now, beside the bar (nothing without one)."""
        self.bar.set_postfix_str(text, refresh=True)

    def advance(self, n: float = 1, *, postfix: str | None = None, line: str | None = None) -> None:
        """``n`` more done; ``line`` is printed to stay (above the bar, or alone without one)."""
        if postfix is not None:
            self.bar.set_postfix_str(postfix, refresh=False)
        self.bar.update(n)
        if line is not None:
            say(line)

    def advance_to(self, done: float, *, postfix: str | None = None) -> None:
        """``done`` in all so far (e.g. bytes downloaded)."""
        self.advance(done - self.bar.n, postfix=postfix)

    def close(self) -> None:
        if self in _LIVE:
            _LIVE.remove(self)
        self.bar.close()


def say(line: str) -> None:
    """A line on stderr that does not break a live bar."""
    tqdm.write(line, file=sys.stderr)


def close_all() -> None:
    """End every live bar (before an error message or on Ctrl-C)."""
    for progress in list(_LIVE):
        progress.close()


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]
    def emit(self, record: logging.LogRecord) -> None:
        try:
            say(self.format(record))
        except Exception:
            self.handleError(record)


def log_handler() -> logging.Handler:
    """A logging handler whose records appear above live bars."""
    return _Handler(sys.stderr)
