"""`site_check`'s probe on a real interpreter: the pytest plugins every distribution's metadata registers
(site-packages and the work tree alike) are what the grader compares before and after a patch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from swe_gym.grading import site_check


def _probe(workdir: Path) -> site_check.BaseEnvironment:
    path = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    command = site_check.probe_command(str(workdir))
    output = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env={**os.environ, "PATH": path})
    return site_check.BaseEnvironment.parse(output.stdout, "acme/widget")


def test_the_probe_lists_installed_and_work_tree_plugins(tmp_path: Path) -> None:
    base = _probe(tmp_path)
    assert "hypothesispytest = _hypothesis_pytestplugin" in base.plugins  # hypothesis is a dev dependency
    info = tmp_path / "widget.egg-info"
    info.mkdir()
    (info / "entry_points.txt").write_text("[console_scripts]\nw = widget:main\n\n[pytest11]\n widget=widget._forge \n")
    now = _probe(tmp_path)
    assert now.plugins - base.plugins == {"widget = widget._forge"}
    assert base.plugins_changed(now) == (
        "the patch registers a pytest plugin that auto-loads ('widget = widget._forge'): only the base's load"
    )
    assert now.plugins_changed(base) == (
        "the patch unregisters a pytest plugin the base environment loads ('widget = widget._forge')"
    )
    (tmp_path / "elsewhere").mkdir()
    assert base.plugins_changed(_probe(tmp_path / "elsewhere")) is None


def test_only_metadata_paths_can_change_the_entry_points() -> None:
    assert site_check.touches_metadata(["src/widget.egg-info/entry_points.txt"])
    assert site_check.touches_metadata(["widget-1.0.dist-info/METADATA", "widget/core.py"])
    assert site_check.touches_metadata(["dist/widget.egg/EGG-INFO/entry_points.txt"])
    assert not site_check.touches_metadata(["widget/core.py", "docs/egg-info.rst", "setup.py"])
