"""`write_report`: read an input, write ``index.html`` and one page per episode under a directory."""

from __future__ import annotations

import logging
from pathlib import Path

from swe_gym.errors import ConfigError
from swe_gym.report.load import TaskInfo, load_run, safe_name
from swe_gym.report.model import Run
from swe_gym.report.pages import episode_file, episode_page, index_page

log = logging.getLogger(__name__)


def default_out(source: str | Path) -> Path:
    """``RUN_DIR/report`` for an evaluation run directory (or its summary file), else
    ``<the file's directory>/report/<its name without suffix>`` (``runs/report/trajectories``)."""
    path = Path(source)
    if path.is_dir():
        return path / "report"
    if path.suffix == ".json" and path.parent.name and path.name.endswith(f".{path.parent.name}.json"):
        return path.parent / "report"  # an evaluation summary: MODEL.RUN_ID.json in RUN_DIR/RUN_ID/
    return path.parent / "report" / safe_name(path.stem)


def write_report(source: str | Path, out: str | Path | None = None, *, tasks: TaskInfo | None = None) -> Path:
    """Write the report of ``source`` (see `swe_gym.report.load`) to ``out`` (default: `default_out`);
    returns the path of its ``index.html``. ``tasks``: instance id -> (repo, family), for inputs that lack them."""
    run = load_run(source, tasks)
    directory = Path(out) if out is not None else default_out(source)
    return write_pages(run, directory)


def write_pages(run: Run, directory: Path) -> Path:
    episodes_dir = directory / "episodes"
    try:
        episodes_dir.mkdir(parents=True, exist_ok=True)
        for stale in episodes_dir.glob("[0-9]*-*.html"):  # a previous report's pages, linked from nowhere now
            stale.unlink()
        episodes = run.episodes
        for i, episode in enumerate(episodes):
            neighbours = (episodes[i - 1] if i else None, episodes[i + 1] if i + 1 < len(episodes) else None)
            _write(directory / episode_file(episode), episode_page(run, episode, neighbours))
        index = directory / "index.html"
        _write(index, index_page(run))
    except OSError as exc:
        raise ConfigError(f"cannot write the report to {directory}: {exc}") from None
    log.info("wrote the report of %d episodes to %s", len(run.episodes), directory)
    return index


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="replace")
