"""The report's HTML: an index page (summary, charts, the episodes) and one page per episode.

Everything an agent controls (actions, observations, patches, logs, and the ids and reasons a file
says) is hostile: every string goes through `esc` on its way into a page, control characters are
shown as escapes, and each page forbids scripts and every external resource in its
Content-Security-Policy (no page has any script: long outputs fold with ``<details>``). CSS is inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from string import Template

from swe_gym.report import plots, stats
from swe_gym.report.load import safe_name
from swe_gym.report.model import Episode, Run

#: An output longer than this (lines or characters) is folded on its page.
FOLD_LINES = 24
FOLD_CHARS = 2400
#: What of one text (an observation, a patch, a log) a page holds at most.
MAX_TEXT_CHARS = 200_000
#: Bars at most in a per-group chart (the largest groups; the rest are counted in the title).
MAX_GROUPS = 24

STATUS_COLORS = {
    "resolved": "#2e7d32",
    "passed": "#2e7d32",
    "unresolved": "#c62828",
    "failed": "#c62828",
    "empty_patch": "#8d6e63",
    "masked": "#ef8f00",
    "error": "#6a1b9a",
    "skipped": "#78909c",
    "unfinished": "#546e7a",
}

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'; base-uri 'none'"

CSS = """
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: #222; background: #f4f5f7; }
main { max-width: 1200px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 4px 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 28px 0 10px; }
a { color: #1f5fa8; }
.sub { color: #666; margin: 0 0 16px; overflow-wrap: anywhere; }
.card { background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 12px 14px; }
.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(260px, 1fr)); gap: 6px 18px; }
.facts div { display: flex; justify-content: space-between; gap: 10px; border-bottom: 1px solid #eef0f2;
             padding: 3px 0; }
.facts dt { color: #666; } .facts dd { margin: 0; font-weight: 600; text-align: right; overflow-wrap: anywhere; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 14px; }
.charts figure { margin: 0; background: #fff; border: 1px solid #dde1e6; border-radius: 8px; padding: 6px; }
.note { color: #666; font-size: 13px; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eef0f2; vertical-align: top; }
th { background: #f0f2f5; font-weight: 600; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.reason { color: #555; max-width: 420px; overflow-wrap: anywhere; }
.pill { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff; font-size: 12px;
        font-weight: 600; white-space: nowrap; }
pre { margin: 0; padding: 8px 10px; background: #f7f8fa; border: 1px solid #e3e6ea; border-radius: 6px;
      font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-wrap;
      overflow-wrap: anywhere; max-height: 640px; overflow: auto; }
pre.action { background: #0f1b2d; color: #e8eef7; border-color: #0f1b2d; }
.step { margin: 0 0 12px; }
.step header { display: flex; gap: 14px; align-items: baseline; margin: 0 0 4px; color: #555; font-size: 13px; }
.step header b { color: #222; font-size: 14px; }
details > summary { cursor: pointer; color: #444; margin: 6px 0 4px; font-size: 13px; }
.diff span { display: block; }
.diff .add { background: #e6f4ea; color: #14532d; } .diff .del { background: #fdecea; color: #7f1d1d; }
.diff .hunk { color: #6d28d9; background: #f3effd; } .diff .file { color: #111; font-weight: 700; }
.bad { color: #b42318; } nav { display: flex; gap: 16px; margin-bottom: 8px; font-size: 13px; }
"""

PAGE = Template("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="$csp">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>$css</style>
</head>
<body>
<main>
$body
</main>
</body>
</html>
""")

# ANSI colour and cursor sequences, then any other control character (tab and newline stay).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(text: str) -> str:
    """``text`` with ANSI sequences dropped, other control characters shown as ``\\xNN``, and lone
    surrogates (which no UTF-8 page can hold) replaced."""
    text = _ANSI.sub("", text)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text.encode("utf-8", "replace").decode("utf-8")


def esc(value: object) -> str:
    """Any value as HTML text: cleaned, then escaped (quotes too, so it is safe in attributes)."""
    return escape(clean(str(value)), quote=True)


def page(title: str, body: str) -> str:
    return PAGE.substitute(csp=CSP, title=esc(title), css=CSS, body=body)


def episode_file(episode: Episode) -> str:
    """The episode's page, relative to the report's directory."""
    return f"episodes/{episode.number}-{safe_name(episode.instance_id)}.html"


def pill(status: str) -> str:
    color = STATUS_COLORS.get(status, "#607d8b")
    return f'<span class="pill" style="background:{color}">{esc(status.replace("_", " "))}</span>'


def _facts(rows: Iterable[tuple[str, str]]) -> str:
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in rows)
    return f'<dl class="card facts">{items}</dl>'


def _s(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _capped(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n[... {len(text) - MAX_TEXT_CHARS} more characters not shown ...]"


def pre(text: str, cls: str = "") -> str:
    return f"<pre{f' class={cls!r}' if cls else ''}>{esc(_capped(text))}</pre>"


def folded(text: str, label: str, *, open_short: bool = True) -> str:
    """``text`` in a ``<details>``: open when short (and ``open_short``), folded with its size when long."""
    lines = text.count("\n") + 1 if text else 0
    short = lines <= FOLD_LINES and len(text) <= FOLD_CHARS
    size = f"{lines} lines, {len(text):,} characters"
    summary = f"{label} ({size})" if text else f"{label} (empty)"
    state = " open" if short and open_short else ""
    return f"<details{state}><summary>{esc(summary)}</summary>{pre(text)}</details>"


def diff(patch: str) -> str:
    """A unified diff with added, removed, hunk and file lines coloured."""
    out = []
    for line in _capped(patch).rstrip("\n").split("\n"):
        if line.startswith(("diff --git", "--- ", "+++ ", "index ", "new file mode", "deleted file mode")):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append(f'<span class="{cls}">{esc(line) or " "}</span>')
    return f'<pre class="diff">{"".join(out)}</pre>'


# -- the index page -------------------------------------------------------------------------------


def index_page(run: Run) -> str:
    episodes = run.episodes
    graded = [e for e in episodes if e.graded]
    success = sum(e.success for e in graded)
    rate = f"{success}/{len(graded)} ({success / len(graded):.1%})" if graded else "none graded"
    rows: list[tuple[str, str]] = [(k, esc(v)) for k, v in run.facts.items()]
    rows.insert(1, ("episodes" if run.kind == "rollout" else "instances", str(len(episodes))))
    rows.insert(2, (f"{run.success_past} (of graded)", esc(rate)))
    counts = stats.outcomes(episodes)
    rows.insert(3, ("outcomes", " ".join(f"{pill(s)}&nbsp;{n}" for s, n in counts.most_common())))
    rewards = stats.rewards(run)
    if rewards:
        rows.append(("mean reward", f"{stats.mean(rewards):.3f}"))
    if run.kind == "rollout":
        rows.append(("mean steps", f"{stats.mean(stats.episode_lengths(run)):.1f}"))
    for name, values in (
        ("step s", stats.step_latencies(run)),
        ("reset s", stats.reset_times(run)),
        ("grade s", stats.grade_times(run)),
    ):
        if values:
            rows.append(
                (f"{name} p50 / p95", f"{stats.percentile(values, 50):.3f} / {stats.percentile(values, 95):.3f}")
            )
    generated = datetime.now(UTC).isoformat(timespec="seconds")
    charts, missing = charts_of(run)
    missing_note = f'<p class="note">Not drawn: {esc("; ".join(missing))}.</p>' if missing else ""
    body = (
        f"<h1>{esc(run.title)}</h1>"
        f'<p class="sub">swe-gym report of {esc(run.source)}, generated {esc(generated)}</p>'
        f"{_facts(rows)}"
        f"<h2>Charts</h2>"
        f'<div class="charts">{"".join(f"<figure>{c}</figure>" for c in charts)}</div>'
        f"{missing_note}"
        f"<h2>{'Episodes' if run.kind == 'rollout' else 'Instances'}</h2>"
        f"{_episode_table(run)}"
    )
    return page(run.title, body)


def charts_of(run: Run) -> tuple[list[str], list[str]]:
    """The run's charts (SVG) and, for each chart it has no data for, why."""
    charts: list[str] = []
    missing: list[str] = []
    word = run.success_word
    counts = stats.outcomes(run.episodes)
    charts.append(
        plots.bar_chart(
            "Outcomes",
            [
                plots.Bar(s.replace("_", " "), n, str(n), STATUS_COLORS.get(s, plots.BLUE))
                for s, n in counts.most_common()
            ],
            axis_label="episodes" if run.kind == "rollout" else "instances",
            kind="outcomes",
        )
    )
    for key, name in (("family", "family"), ("repo", "repository")):  # the short one beside the outcomes
        found = stats.groups(run.episodes, lambda e, key=key: getattr(e, key))
        found = [g for g in found if g.graded]
        if not found:
            missing.append(f"{word} rate per {name} (nothing was graded)")
            continue
        shown = found[:MAX_GROUPS]
        more = f" (largest {len(shown)} of {len(found)})" if len(found) > len(shown) else ""
        bars = [
            plots.Bar(
                clean(g.label),
                g.rate,
                f"{g.rate:.0%}  {g.success}/{g.graded}" + (f", {g.masked} masked" if g.masked else ""),
                plots.BLUE if key == "repo" else plots.TEAL,
            )
            for g in shown
        ]
        charts.append(
            plots.bar_chart(
                f"{word.capitalize()} rate per {name}{more}",
                bars,
                axis_label=f"{run.success_past} / graded (counts at each bar)",
                percent=True,
                kind=f"rate-{key}",
            )
        )
    rewards = stats.rewards(run)
    if rewards:
        edges = [i / 10 for i in range(11)] if all(0 <= r <= 1 for r in rewards) else None
        charts.append(
            plots.histogram(
                "Reward distribution",
                rewards,
                x_label="reward",
                y_label="episodes" if run.kind == "rollout" else "instances",
                edges=edges,
                kind="reward",
            )
        )
    elif run.kind != "certificate":
        missing.append("reward distribution (no rewards)")
    lengths = stats.episode_lengths(run)
    if lengths:
        charts.append(
            plots.histogram(
                "Episode length",
                lengths,
                x_label="steps",
                y_label="episodes",
                integer=True,
                color=plots.ORANGE,
                kind="steps",
                unit=" steps",
            )
        )
    else:
        holder = "an evaluation" if run.kind == "evaluation" else "a certificate"
        missing.append(f"episode length and step latency ({holder} holds no trajectories)")
    latencies = stats.step_latencies(run)
    if latencies:
        charts.append(
            plots.histogram(
                "Step latency",
                latencies,
                x_label="seconds per step",
                y_label="steps",
                log=True,
                kind="step-latency",
                unit=" s",
            )
        )
    elif lengths:
        missing.append("step latency (no step durations recorded)")
    for title, values, kind in (
        ("Reset time", stats.reset_times(run), "reset"),
        ("Grade time", stats.grade_times(run), "grade"),
    ):
        if values:
            charts.append(
                plots.histogram(
                    title,
                    values,
                    x_label="seconds",
                    y_label="gradings" if kind == "grade" else "episodes",
                    log=True,
                    color=plots.TEAL if kind == "grade" else plots.ORANGE,
                    kind=kind,
                    unit=" s",
                )
            )
        elif run.kind == "rollout" or kind == "grade":
            missing.append(f"{title.lower()} (none recorded)")
    reasons = stats.masked_reasons(run)
    if reasons:
        top = reasons.most_common(MAX_GROUPS)
        charts.append(
            plots.bar_chart(
                "Masked reasons",
                [plots.Bar(clean(reason), n, str(n), STATUS_COLORS["masked"]) for reason, n in top],
                axis_label="masked " + ("runs" if run.kind == "certificate" else "episodes"),
                kind="masked",
            )
        )
    else:
        missing.append("masked reasons (nothing was masked)")
    return charts, missing


def _episode_table(run: Run) -> str:
    models = len({e.model for e in run.episodes}) > 1
    head = ["#", "instance", "repo", "family", *(["model"] if models else []), "outcome"]
    numeric = ["reward", "steps", "reset s", "grade s"] if run.kind == "rollout" else ["reward", "grade s"]
    if run.kind == "certificate":
        numeric = ["grade s"]
    head_html = "".join(f"<th>{esc(h)}</th>" for h in head) + "".join(f'<th class="num">{esc(h)}</th>' for h in numeric)
    rows = []
    for e in run.episodes:
        values = {
            "reward": "" if e.reward is None else f"{e.reward:g}",
            "steps": str(len(e.steps)),
            "reset s": _s(e.reset_s),
            "grade s": _s(e.grade_s),
        }
        reason = e.reason or ""
        reason = reason if len(reason) <= 160 else reason[:159] + "\u2026"
        cells = [
            f'<td class="num">{e.number}</td>',
            f'<td><a href="{esc(episode_file(e))}">{esc(e.instance_id)}</a></td>',
            f"<td>{esc(e.repo)}</td>",
            f"<td>{esc(e.family)}</td>",
            *([f"<td>{esc(e.model)}</td>"] if models else []),
            f"<td>{pill(e.status)}</td>",
            *(f'<td class="num">{esc(values[h])}</td>' for h in numeric),
            f'<td class="reason">{esc(reason)}</td>',
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head_html}<th>reason</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"


# -- one episode's page ---------------------------------------------------------------------------


def episode_page(run: Run, episode: Episode, neighbours: Sequence[Episode | None]) -> str:
    """``neighbours``: the previous and the next episode (None at the ends)."""
    before, after = neighbours
    nav = ['<a href="../index.html">&larr; the report</a>']
    if before is not None:
        nav.append(f'<a href="../{esc(episode_file(before))}">previous: {esc(before.instance_id)}</a>')
    if after is not None:
        nav.append(f'<a href="../{esc(episode_file(after))}">next: {esc(after.instance_id)}</a>')
    rows: list[tuple[str, str]] = [
        ("outcome", pill(episode.status)),
        ("repo", esc(episode.repo)),
        ("family", esc(episode.family)),
    ]
    if episode.model:
        rows.append(("model", esc(episode.model)))
    if episode.reward is not None:
        rows.append(("reward", f"{episode.reward:g}"))
    if run.kind == "rollout":
        rows.append(("steps", str(len(episode.steps))))
    for name, value in (("reset s", episode.reset_s), ("grade s", episode.grade_s), ("wall s", episode.wall_s)):
        if value is not None:
            rows.append((name, f"{value:.3f}"))
    rows.extend((k, esc(v)) for k, v in episode.facts.items() if k not in ("errors",))
    sections = [
        f"<nav>{''.join(nav)}</nav>",
        f"<h1>{esc(episode.instance_id)}</h1>",
        f'<p class="sub">episode {episode.number} of {len(run.episodes)} in {esc(run.title)}</p>',
        _facts(rows),
    ]
    said = [("verdict", episode.verdict), ("reason", episode.reason if episode.reason != episode.verdict else None)]
    said += [("masked", r) for r in episode.masked_reasons]
    said += [("error", r) for r in episode.facts.get("errors", "").split("\n") if r]
    lines = "".join(f"<div><b>{esc(k)}:</b> {esc(v)}</div>" for k, v in said if v)
    if lines:
        sections.append(f'<div class="card" style="margin-top:10px">{lines}</div>')
    if episode.prompt is not None:
        sections.append("<h2>Task prompt</h2>" + folded(episode.prompt, "the reset observation", open_short=False))
    if run.kind == "rollout":
        sections.append(f"<h2>Steps ({len(episode.steps)})</h2>" + (_steps(episode) or '<p class="note">No step.</p>'))
    if run.kind != "certificate":
        sections.append("<h2>Patch</h2>" + _patch(episode))
    if episode.report:
        sections.append("<h2>Grade report</h2>" + _report(episode.report, log_tail=episode.eval_log is None))
    if episode.eval_log is not None:
        sections.append("<h2>Eval log</h2>" + folded(episode.eval_log, "eval.log (its end)", open_short=True))
    if episode.runs:
        sections.append("<h2>Grading runs</h2>" + _table(episode.runs))
    if run.kind == "certificate":
        flaky = [{"test": t, "statuses per run": s} for t, s in episode.flaky.items()]
        sections.append("<h2>Flaky tests</h2>" + (_table(flaky) if flaky else '<p class="note">None.</p>'))
        if episode.problems:
            items = "".join(f"<li>{esc(p)}</li>" for p in episode.problems)
            sections.append(f'<h2>Problems</h2><ul class="bad">{items}</ul>')
    return page(f"{episode.instance_id}: {episode.status}", "".join(sections))


def _steps(episode: Episode) -> str:
    out = []
    for i, step in enumerate(episode.steps, 1):
        meta = []
        if step.exit_code is not None:
            meta.append(f"exit {step.exit_code}")
        if step.duration_s is not None:
            meta.append(f"{step.duration_s:.3f} s")
        if step.timed_out:
            meta.append("timed out")
        if step.output_truncated:
            meta.append("output truncated")
        if step.reward:
            meta.append(f"reward {step.reward:g}")
        meta_html = "".join(f"<span>{esc(m)}</span>" for m in meta)
        out.append(
            f'<section class="step" id="step-{i}"><header><b>Step {i}</b>{meta_html}</header>'
            f"{pre(step.action, 'action')}{folded(step.observation, 'output')}</section>"
        )
    return "".join(out)


def _patch(episode: Episode) -> str:
    if episode.patch is None:
        return '<p class="note">No patch recorded.</p>'
    if not episode.patch.strip():
        return '<p class="note">The patch is empty (nothing was changed).</p>'
    size = f"{episode.patch.count(chr(10))} lines, {len(episode.patch):,} characters"
    return f'<p class="note">{esc(size)}</p>{diff(episode.patch)}'


def _report(report: dict, *, log_tail: bool) -> str:
    rows = []
    for key in (
        "harness",
        "patch_applied",
        "apply_method",
        "empty_patch",
        "tampering",
        "canary",
        "install",
        "eval_exit_code",
        "duration_s",
        "unresolved_reason",
        "masked_reason",
    ):
        value = report.get(key)
        if value not in (None, "", []):
            rows.append((key, esc(round(value, 3) if isinstance(value, float) else value)))
    timings = report.get("timings_s")
    if isinstance(timings, dict) and timings:
        rows.append(("timings s", esc(", ".join(f"{k} {v}" for k, v in timings.items()))))
    parts = [_facts(rows)] if rows else []
    for key, title in (("fail_to_pass", "FAIL_TO_PASS"), ("pass_to_pass", "PASS_TO_PASS")):
        group = report.get(key)
        if not isinstance(group, dict):
            continue
        ok, bad = group.get("success") or [], group.get("failure") or []
        line = f"{title}: {len(ok)} passed, {len(bad)} failed"
        failing = "".join(f"<li>{esc(t)}</li>" for t in bad[:200])
        parts.append(f"<p><b>{esc(line)}</b></p>" + (f'<ul class="bad">{failing}</ul>' if failing else ""))
    restored = report.get("restored_test_files")
    if restored:
        parts.append(f"<p><b>restored test files:</b> {esc(', '.join(map(str, restored)))}</p>")
    tail = report.get("log_tail") if log_tail else None  # an evaluation shows its whole eval.log instead
    if tail:
        parts.append(folded(str(tail), "the eval log's tail", open_short=False))
    return "".join(parts)


def _table(rows: Sequence[dict[str, str]]) -> str:
    keys = list(rows[0]) if rows else []
    head = "".join(f"<th>{esc(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(f"<td>{esc(r.get(k, ''))}</td>" for k in keys) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
