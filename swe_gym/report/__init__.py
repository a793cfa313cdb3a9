"""Self-contained HTML reports of rollouts, evaluations and certificates (``swe-gym report``).

`write_report(source, out)` reads a rollout's trajectories (``.jsonl``), an evaluation run directory
(or its ``MODEL.RUN_ID.json``) or a fidelity certificate and writes ``out/index.html`` (summary, charts
as inline SVG, a table of episodes) and ``out/episodes/<n>-<id>.html`` per episode (actions and
observations in order, the patch as a diff, the verdict, the eval log). No script, no network, no
external resource: the pages open from disk anywhere, and what the agent wrote is shown as text.

Modules: `load` (inputs -> `Run`), `model` (`Run`, `EpisodeRecord`, `Step`), `stats` (the numbers),
`plots` (the SVG charts), `pages` (the HTML), `build` (writing it all).
"""

from swe_gym.report.build import default_out, write_report
from swe_gym.report.load import load_run
from swe_gym.report.model import EpisodeRecord, Run, Step

__all__ = ["EpisodeRecord", "Run", "Step", "default_out", "load_run", "write_report"]
