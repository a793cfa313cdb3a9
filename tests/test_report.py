"""``swe-gym report``: reports of a real rollout, a real evaluation and a real certificate, drawn by a real
headless browser (Debian's chromium) whose screenshot must show the charts, not a blank page."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import uuid
import zlib
from collections import Counter
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from markupsafe import escape

from swe_gym.envs.registration import ENV_ID, register_envs
from swe_gym.errors import ConfigError
from swe_gym.grading.certificate import validate
from swe_gym.policies import OraclePolicy, PolicyInfo, RandomPolicy
from swe_gym.report import load_run, write_report
from swe_gym.report.plots import BLUE, ORANGE, TEAL
from swe_gym.tasks import load_tasks
from swe_gym.wrappers import TrajectoryRecorder, read_trajectories
from tests.conftest import IN_CI, leftover_sandboxes, provider_setup
from tests.test_cli import swe_gym

TASKS = load_tasks("bundled")
ORACLE_IDS = [t.instance_id for t in TASKS[:2]]
HOSTILE = "<script>alert('pwned')</script>"
#: A scripted episode whose observations are what a hostile repository could print.
SCRIPTED = [f"printf '%s\\n' \"{HOSTILE}\"", "printf '\\033[31mred\\033[0m <img src=x onerror=alert(1)>\\n'", "submit"]


@pytest.fixture(scope="module")
def rollout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Trajectories of the real env on the local provider: the oracle twice, random once, a scripted episode."""
    provider_setup("local")
    register_envs()
    out = tmp_path_factory.mktemp("rollout") / "trajectories.jsonl"
    env = TrajectoryRecorder(gym.make(ENV_ID, tasks="bundled", provider="local", max_steps=3), out)
    try:
        tasks = env.unwrapped.tasks
        for policy, task_id, seed in (
            (OraclePolicy(tasks), ORACLE_IDS[0], 0),
            (OraclePolicy(tasks), ORACLE_IDS[1], 1),
            (RandomPolicy(seed=2), TASKS[2].instance_id, 2),
        ):
            env.policy = policy
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            policy.reset(observation, info)
            done = False
            while not done:
                observation, _, terminated, truncated, info = env.step(policy.act(observation, info))
                done = terminated or truncated
        env.policy = PolicyInfo(name="scripted")
        env.reset(seed=3, options={"task_id": TASKS[3].instance_id})
        for action in SCRIPTED:
            *_, terminated, truncated, _ = env.step(action)
        assert terminated or truncated
    finally:
        env.close()
    return out


def _chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        if IN_CI:
            pytest.fail(
                "CI must run the report's browser test: chromium is missing (.ci/provision_host.sh installs it)"
            )
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


def screenshot(page: Path, png: Path, size: str = "1280,2000") -> np.ndarray:
    """``page`` as headless chromium draws it, as an (height, width, 3) uint8 array."""
    command = [
        _chromium(),
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        "--disable-dev-shm-usage",
        f"--user-data-dir={png.parent / 'cr'}",
    ]
    if os.geteuid() == 0:  # chromium's own sandbox cannot start as root
        command.append("--no-sandbox")
    command += [f"--screenshot={png}", f"--window-size={size}", page.as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and png.is_file(), result.stderr[-2000:]
    return read_png(png)


def read_png(path: Path) -> np.ndarray:
    """An 8-bit RGB or RGBA, non-interlaced PNG (what chromium writes) decoded by hand: zlib, then PNG's
    five row filters (https://www.w3.org/TR/png/#9Filters). Returns RGB."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color_type, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color_type in (2, 6) and interlace == 0, (depth, color_type, interlace)
        elif kind == b"IDAT":
            chunks.append(body)
    bpp = 3 if color_type == 2 else 4
    stride = width * bpp
    raw = np.frombuffer(zlib.decompress(b"".join(chunks)), dtype=np.uint8).reshape(height, stride + 1)
    image = np.zeros((height, stride), dtype=np.uint8)
    previous = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = raw[y, 0], raw[y, 1:]
        if kind == 0:
            row = line.copy()
        elif kind == 1:  # Sub: a running sum per channel
            row = np.cumsum(line.reshape(width, bpp), axis=0, dtype=np.uint8).reshape(stride)
        elif kind == 2:  # Up
            row = line + previous
        else:  # Average, Paeth: each byte depends on the one decoded left of it
            out, up, filt = bytearray(stride), previous.tobytes(), line.tobytes()
            for i in range(stride):
                left = out[i - bpp] if i >= bpp else 0
                if kind == 3:
                    out[i] = (filt[i] + ((left + up[i]) >> 1)) & 0xFF
                    continue
                corner = up[i - bpp] if i >= bpp else 0
                p = left + up[i] - corner
                pa, pb, pc = abs(p - left), abs(p - up[i]), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up[i] if pb <= pc else corner
                out[i] = (filt[i] + pred) & 0xFF
            row = np.frombuffer(bytes(out), dtype=np.uint8)
        image[y] = row
        previous = row
    return image.reshape(height, width, bpp)[:, :, :3]


def _rgb(color: str) -> tuple[int, int, int]:
    return int(color[1:3], 16), int(color[3:5], 16), int(color[5:7], 16)


def _count(image: np.ndarray, color: str) -> int:
    return int(np.all(image == np.array(_rgb(color), dtype=np.uint8), axis=2).sum())


def assert_charts_drawn(image: np.ndarray, colors: list[str]) -> None:
    """Each chart colour fills many pixels, and the region holding them is busy: many pixels off the
    page's backgrounds, several distinct colours (bars, axes, labels) — a drawn chart, not a blank page."""
    background = {_rgb("#ffffff"), _rgb("#f4f5f7")}
    found = np.zeros(image.shape[:2], dtype=bool)
    for color in colors:
        mask = np.all(image == np.array(_rgb(color), dtype=np.uint8), axis=2)
        assert mask.sum() > 1500, f"the charts' {color} bars are not drawn ({mask.sum()} pixels)"
        found |= mask
    ys, xs = np.nonzero(found)
    region = image[ys.min() : ys.max() + 1, xs.min() : xs.max() + 1].reshape(-1, 3)
    assert region.shape[0] > 200_000, f"the charts cover only {region.shape[0]} pixels"
    colours = Counter(map(tuple, region[:: max(1, region.shape[0] // 200_000)].tolist()))
    busy = sum(n for c, n in colours.items() if c not in background) / sum(colours.values())
    assert busy > 0.08, f"the chart region is {busy:.1%} non-background"
    assert len(colours) >= 12, f"the chart region has {len(colours)} distinct colours"


def test_a_rollout_report_shows_every_chart_and_each_episode(rollout: Path, tmp_path: Path) -> None:
    records = read_trajectories(rollout)
    assert [r.instance_id for r in records] == [*ORACLE_IDS, TASKS[2].instance_id, TASKS[3].instance_id]
    assert records[0].repo == TASKS[0].repo and records[0].family == TASKS[0].family
    assert [r.policy.name for r in records if r.policy] == ["oracle", "oracle", "random", "scripted"]

    index = write_report(rollout, tmp_path / "report")
    assert index == tmp_path / "report" / "index.html"
    text = index.read_text()
    charts = dict(re.findall(r'<svg [^>]*data-chart="([^"]+)"[^>]*>(.*?)</svg>', text, re.S))
    assert set(charts) >= {"outcomes", "rate-repo", "rate-family", "reward", "steps", "step-latency", "reset", "grade"}
    assert "rate-policy" in charts and "rate-run-id" not in charts  # one run: nothing to tell apart
    for kind, svg in charts.items():
        assert svg.count('class="bar"') >= 2 or kind in ("rate-family", "outcomes"), kind
        assert "<title>" in svg
    assert "Resolve rate per repository" in text and TASKS[0].repo in text
    assert "Not drawn: masked reasons (nothing was masked)" in text
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text

    pages = sorted((tmp_path / "report" / "episodes").glob("*.html"), key=lambda p: int(p.name.split("-")[0]))
    assert [p.name for p in pages] == [f"{i}-{r.instance_id}.html" for i, r in enumerate(records, 1)]
    for page, record in zip(pages, records, strict=True):
        body = page.read_text()
        assert f'href="episodes/{page.name}"' in text
        for action in record.actions:
            assert escape(action) in body, (page.name, action[:80])
        if record.resolved:  # the oracle's gold patch
            assert record.patch is not None
            first = record.patch.splitlines()[0]
            assert f'<span class="file">{escape(first)}</span>' in body
            assert '<span class="add">' in body and '<span class="del">' in body
        assert "RESOLVED" in body if record.resolved else "not resolved" in body
        assert f"<dt>run id</dt><dd>{record.run_id}</dd>" in body

    # What the sandbox printed is shown as text: no markup of its own, no script, no control character.
    hostile = pages[3].read_text()
    assert escape(HOSTILE) in hostile and "&lt;img src=x onerror=alert(1)&gt;" in hostile
    assert "output (1 line, " in hostile  # one line printed, one line counted
    for page in [index, *pages]:
        assert "<script" not in page.read_text().lower() and "\x1b" not in page.read_text()
    assert "script-src" not in hostile and "default-src 'none'" in hostile

    image = screenshot(index, tmp_path / "index.png")
    assert image.shape == (2000, 1280, 3)
    assert_charts_drawn(image, [BLUE, ORANGE, TEAL])


def test_an_evaluation_run_dir_report_shows_patches_verdicts_and_logs(tmp_path: Path) -> None:
    provider_setup("local")
    gold, stale, empty = TASKS[:3]
    stale_patch = (
        f"diff --git a/{HOSTILE}.py b/{HOSTILE}.py\n--- a/{HOSTILE}.py\n+++ b/{HOSTILE}.py\n"
        "@@ -1,1 +1,1 @@\n-not in the repository\n+so it cannot apply\n"
    )
    predictions = tmp_path / "preds.jsonl"
    rows = [(gold.instance_id, gold.patch), (stale.instance_id, stale_patch), (empty.instance_id, "")]
    predictions.write_text(
        "".join(json.dumps({"instance_id": i, "model_name_or_path": "m", "model_patch": p}) + "\n" for i, p in rows)
    )
    run_id = f"rep{uuid.uuid4().hex[:8]}"
    result = swe_gym(
        "evaluate", "--dataset", "bundled", "--predictions", str(predictions), "--run-dir", str(tmp_path / "runs"),
        "--run-id", run_id, run_id=run_id,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert not any(leftover_sandboxes(run_id).values())
    run_dir = tmp_path / "runs" / run_id

    result = swe_gym("report", str(run_dir), "--tasks", "bundled")  # the CLI, its default --out
    assert result.returncode == 0, result.stderr
    index = run_dir / "report" / "index.html"
    assert result.stdout.strip() == str(index)
    run = load_run(run_dir)
    assert {e.instance_id: e.status for e in run.episodes} == {
        gold.instance_id: "resolved",
        stale.instance_id: "unresolved",
        empty.instance_id: "empty_patch",
    }
    text = index.read_text()
    assert f"<td>{gold.family}</td>" in text  # from --tasks
    assert 'data-chart="rate-repo"' in text and 'data-chart="grade"' in text and 'data-chart="steps"' not in text
    assert "an evaluation holds no trajectories" in text
    pages = {p.name.split("-", 1)[1]: p.read_text() for p in (run_dir / "report" / "episodes").glob("*.html")}
    resolved = pages[f"{gold.instance_id}.html"]
    assert "RESOLVED: FAIL_TO_PASS" in resolved and "Eval log" in resolved and '<pre class="diff">' in resolved
    unresolved = pages[f"{stale.instance_id}.html"]
    assert "did not apply" in unresolved and escape(HOSTILE) in unresolved and "<script" not in unresolved
    assert "The patch is empty" in pages[f"{empty.instance_id}.html"]

    image = screenshot(index, tmp_path / "evaluation.png", size="1280,1200")
    assert_charts_drawn(image, [BLUE, TEAL])


def test_a_certificate_report(tmp_path: Path) -> None:
    provider_setup("local")
    certificate = validate(TASKS[:1], k=1, dataset="bundled").write(tmp_path / "cert.json")
    index = write_report(certificate)
    assert index == tmp_path / "report" / "cert" / "index.html"
    text = index.read_text()
    assert "Pass rate per repository" in text and 'data-chart="grade"' in text
    (page,) = (index.parent / "episodes").glob("*.html")
    body = page.read_text()
    assert "Grading runs" in body and "gold resolved" in body and "1/1" in body and "Flaky tests" in body


def test_old_and_malformed_inputs(tmp_path: Path) -> None:
    old = tmp_path / "old.jsonl"  # an early recorder's line: no repo, family, step infos, report or timings
    old.write_text(json.dumps({"instance_id": "django__django-11099", "actions": ["ls"], "observations": ["p", "x"]}))
    run = load_run(old)
    (episode,) = run.episodes
    assert (episode.repo, episode.family, episode.status, len(episode.steps)) == (
        "django/django",
        "unknown",
        "unresolved",
        1,
    )
    assert write_report(old).is_file()

    bad = {
        "not-json.jsonl": '{"instance_id": "a", "actions": [\n',
        "predictions.jsonl": json.dumps({"instance_id": "a", "model_patch": ""}) + "\n",
        "wrong-types.jsonl": json.dumps({"instance_id": "a", "actions": "ls", "rewards": "lots"}) + "\n",
        "empty.jsonl": "\n",
        "other.json": json.dumps({"hello": "world"}),
        "broken.json": "{",
    }
    for name, content in bad.items():
        (tmp_path / name).write_text(content)
        with pytest.raises(ConfigError) as caught:
            load_run(tmp_path / name)
        assert str(tmp_path / name) in str(caught.value) and "\n" not in str(caught.value), name
    (tmp_path / "runs").mkdir()
    with pytest.raises(ConfigError, match="no evaluation run directory"):
        load_run(tmp_path / "runs")

    result = swe_gym("report", str(tmp_path / "not-json.jsonl"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"error: {tmp_path / 'not-json.jsonl'}:1: not a trajectory record (not valid JSON (Expecting value")
    )


def test_masked_and_unfinished_episodes_are_no_verdict(tmp_path: Path) -> None:
    lines = [
        {"instance_id": "a__b-1", "actions": ["ls"], "observations": ["p", "x"], "reward": 1.0, "resolved": True},
        {"instance_id": "a__b-2", "actions": ["ls"], "observations": ["p", "x"], "reward": 0.0, "masked": True,
         "masked_reason": "sandbox died: sandbox 0123456789abcdef0123 stopped answering"},
        {"instance_id": "a__b-3", "actions": ["ls"], "observations": ["p", "x"], "reward": 0.0, "masked": True,
         "masked_reason": "sandbox died: sandbox fedcba9876543210fedc stopped answering"},
        {"instance_id": "../../etc/passwd", "actions": [], "observations": ["p"], "unfinished": True},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    index = write_report(path)
    text = index.read_text()
    assert "1/1 (100.0%)" in text  # resolved of graded: masked and unfinished are no 0
    masked = re.search(r'data-chart="masked".*?</svg>', text, re.S).group()
    assert "sandbox died: sandbox \u2026 stopped answering: 2" in masked  # alike reasons grouped
    names = sorted(p.name for p in (index.parent / "episodes").iterdir())
    assert names == ["1-a__b-1.html", "2-a__b-2.html", "3-a__b-3.html", "4-etc_passwd.html"]


def test_runs_are_told_apart_and_a_patch_error_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two runs appended to one file: each record names its run, the report draws a rate per run and a run
    column; the recorder keeps the terminal info's patch_error, which the report gives as the reason."""
    provider_setup("local")
    register_envs()
    out = tmp_path / "two-runs.jsonl"
    for run_id, actions in (("run-a", ["rm -rf .git && echo x > .git", "submit"]), ("run-b", ["submit"])):
        monkeypatch.setenv("SWE_GYM_RUN_ID", run_id)
        env = TrajectoryRecorder(gym.make(ENV_ID, tasks="bundled", provider="local", max_steps=3), out)
        env.policy = PolicyInfo(name="scripted", model=run_id)
        try:
            env.reset(seed=0, options={"task_id": TASKS[0].instance_id})
            for action in actions:
                env.step(action)
        finally:
            env.close()
    first, second = read_trajectories(out)
    assert (first.run_id, second.run_id) == ("run-a", "run-b")
    assert first.patch_error and "could not extract the patch" in first.patch_error and second.patch_error is None
    text = write_report(out).read_text()
    assert 'data-chart="rate-run-id"' in text and "<th>run</th>" in text and "<td>run-b</td>" in text
    assert 'data-chart="rate-policy"' in text and "<td>scripted (run-a)</td>" in text
    assert "<dt>run id</dt><dd>run-a, run-b</dd>" in text
    (episode, _) = load_run(out).episodes
    assert episode.reason == first.patch_error


def test_an_evaluation_names_its_families_and_outputs_count_their_lines(tmp_path: Path) -> None:
    """The family of an evaluated instance comes from what the summary records, without --tasks; an output's
    size counts a final newline as the end of its last line."""
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    summary = {
        "resolved_ids": ["django__django-1"],
        "unresolved_ids": ["pkg__pkg-2"],
        "swe_gym": {
            "run_id": "r1",
            "families": {"django__django-1": "swebench", "pkg__pkg-2": "swe-gym"},
            "repos": {"pkg__pkg-2": "owner/pkg"},
        },
    }
    (run_dir / "m.r1.json").write_text(json.dumps(summary))
    run = load_run(run_dir)
    assert [(e.repo, e.family, e.run_id) for e in run.episodes] == [
        ("django/django", "swebench", "r1"),
        ("owner/pkg", "swe-gym", "r1"),
    ]
    lines = [
        {"instance_id": "a__b-1", "actions": ["x", "y", "z"], "observations": ["p", "one\ntwo\n", "one\ntwo", ""]},
    ]
    path = tmp_path / "lines.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    page = (write_report(path).parent / "episodes" / "1-a__b-1.html").read_text()
    assert page.count("output (2 lines, ") == 2 and "output (empty)" in page
