"""The report's HTML: an index page (summary, charts, the episodes) and one page per episode.

Everything an agent controls (actions, observations, patches, logs, and the ids and reasons a file
says) is hostile. The pages are Jinja2 templates with autoescape on, so every value is escaped unless
it is our own `Markup` (the charts, the CSS, fragments these templates rendered); every value a template
prints is cleaned first (`clean`: control characters shown as escapes). Each page forbids scripts and every
external resource in its Content-Security-Policy (no page has any script: long outputs fold with
``<details>``). CSS is inline.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jinja2 import DictLoader, Environment, StrictUndefined
from markupsafe import Markup

from swe_gym.report import plots, stats
from swe_gym.report.load import safe_name
from swe_gym.report.model import EpisodeRecord, Run

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

# ANSI colour and cursor sequences, then any other control character (tab and newline stay).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_FILE_LINE = ("diff --git", "--- ", "+++ ", "index ", "new file mode", "deleted file mode")
#: The grade report's scalar keys an episode page lists.
REPORT_KEYS = (
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
)

TEMPLATES = {
    "page": """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{{ csp }}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ title }}</title>
<style>{{ css }}</style>
</head>
<body>
<main>
{% block body %}{% endblock %}
</main>
</body>
</html>
""",
    "macros": """
{%- macro pill(status) -%}
<span class="pill" style="background:{{ colors.get(status, '#607d8b') }}">{{ status.replace('_', ' ') }}</span>
{%- endmacro -%}
{%- macro facts(rows) -%}
<dl class="card facts">{% for k, v in rows %}<div><dt>{{ k }}</dt><dd>{{ v }}</dd></div>{% endfor %}</dl>
{%- endmacro -%}
{%- macro pre(text, cls="") -%}
<pre{% if cls %} class="{{ cls }}"{% endif %}>{{ capped(text) }}</pre>
{%- endmacro -%}
{%- macro folded(text, label, open_short=True) -%}
<details{% if open_short and is_short(text) %} open{% endif %}><summary>{{ label }} ({{ size_of(text) }})</summary>
{{- pre(text) }}</details>
{%- endmacro -%}
{%- macro diff(patch) -%}
<pre class="diff">{% for cls, line in diff_lines(patch) -%}
<span class="{{ cls }}">{{ line or " " }}</span>{% endfor %}</pre>
{%- endmacro -%}
{%- macro table(head, rows) -%}
<table><thead><tr>{% for h in head %}<th{% if h.cls %} class="{{ h.cls }}"{% endif %}>{{ h.text }}</th>{% endfor %}
</tr></thead><tbody>{% for row in rows %}<tr>{% for c in row %}<td{% if c.cls %} class="{{ c.cls }}"{% endif %}>
{%- if c.href %}<a href="{{ c.href }}">{{ c.text }}</a>{% else %}{{ c.text }}{% endif %}</td>{% endfor %}</tr>
{%- endfor %}</tbody></table>
{%- endmacro -%}
""",
    "index": """{% extends "page" %}{% import "macros" as m %}
{% block body %}
<h1>{{ run.title }}</h1>
<p class="sub">swe-gym report of {{ run.source }}, generated {{ generated }}</p>
{{ m.facts(rows) }}
<h2>Charts</h2>
<div class="charts">{% for chart in charts %}<figure>{{ chart }}</figure>{% endfor %}</div>
{% if missing %}<p class="note">Not drawn: {{ missing }}.</p>{% endif %}
<h2>{{ "Episodes" if run.kind == "rollout" else "Instances" }}</h2>
{{ m.table(head, table) }}
{% endblock %}
""",
    "episode": """{% extends "page" %}{% import "macros" as m %}
{% block body %}
<nav><a href="../index.html">&larr; the report</a>
{%- if before %}<a href="../{{ file_of(before) }}">previous: {{ before.instance_id }}</a>{% endif %}
{%- if after %}<a href="../{{ file_of(after) }}">next: {{ after.instance_id }}</a>{% endif %}</nav>
<h1>{{ e.instance_id }}</h1>
<p class="sub">episode {{ e.number }} of {{ run.episodes|length }} in {{ run.title }}</p>
{{ m.facts(rows) }}
{% if said %}<div class="card" style="margin-top:10px">{% for k, v in said %}<div><b>{{ k }}:</b> {{ v }}</div>
{%- endfor %}</div>{% endif %}
{% if e.prompt is not none %}<h2>Task prompt</h2>{{ m.folded(e.prompt, "the reset observation", False) }}{% endif %}
{% if run.kind == "rollout" %}<h2>Steps ({{ e.steps|length }})</h2>
{%- for step in e.steps %}<section class="step" id="step-{{ loop.index }}"><header><b>Step {{ loop.index }}</b>
{%- for meta in step_meta(step) %}<span>{{ meta }}</span>{% endfor %}</header>
{{- m.pre(step.action, "action") }}{{ m.folded(step.observation, "output") }}</section>
{%- else %}<p class="note">No step.</p>{% endfor %}
{% endif %}
{% if run.kind != "certificate" %}<h2>Patch</h2>
{%- if e.patch is none %}<p class="note">No patch recorded.</p>
{%- elif not e.patch.strip() %}<p class="note">The patch is empty (nothing was changed).</p>
{%- else %}<p class="note">{{ size_of(e.patch) }}</p>{{ m.diff(e.patch) }}{% endif %}
{% endif %}
{% if e.report %}<h2>Grade report</h2>
{%- if report_rows %}{{ m.facts(report_rows) }}{% endif %}
{%- for title, ok, bad in test_groups %}<p><b>{{ title }}: {{ ok|length }} passed, {{ bad|length }} failed</b></p>
{%- if bad %}<ul class="bad">{% for t in bad[:200] %}<li>{{ t }}</li>{% endfor %}</ul>{% endif %}{% endfor %}
{%- if e.report.restored_test_files %}<p><b>restored test files:</b> {{ restored }}</p>{% endif %}
{%- if log_tail %}{{ m.folded(log_tail, "the eval log's tail", False) }}{% endif %}
{% endif %}
{% if e.eval_log is not none %}<h2>Eval log</h2>{{ m.folded(e.eval_log, "eval.log (its end)") }}{% endif %}
{% if e.runs %}<h2>Grading runs</h2>{{ m.table(*runs) }}{% endif %}
{% if run.kind == "certificate" %}<h2>Flaky tests</h2>
{%- if e.flaky %}{{ m.table(*flaky) }}{% else %}<p class="note">None.</p>{% endif %}
{%- if e.problems %}<h2>Problems</h2><ul class="bad">{% for p in e.problems %}<li>{{ p }}</li>{% endfor %}</ul>
{%- endif %}
{% endif %}
{% endblock %}
""",
}


@dataclass(frozen=True)
class Cell:
    """One table cell (or heading): its text (escaped, unless our `Markup`), class and link."""

    text: Any
    cls: str = ""
    href: str = ""


def clean(text: str) -> str:
    """``text`` with ANSI sequences dropped, other control characters shown as ``\\xNN``, and lone
    surrogates (which no UTF-8 page can hold) replaced."""
    text = _ANSI.sub("", text)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text.encode("utf-8", "replace").decode("utf-8")


def _shown(value: Any) -> Any:
    """What a template prints: our markup as is, anything else cleaned (autoescape escapes it next)."""
    if isinstance(value, Markup):
        return value
    return "" if value is None else clean(str(value))


def line_count(text: str) -> int:
    """Lines of ``text`` as an editor counts them: a final newline ends the last line, it starts none."""
    return text.count("\n") + (not text.endswith("\n")) if text else 0


def size_of(text: str) -> str:
    """``3 lines, 1,024 characters`` (or ``empty``)."""
    if not text:
        return "empty"
    lines = line_count(text)
    return f"{lines} line{'s' * (lines != 1)}, {len(text):,} characters"


def _is_short(text: str) -> bool:
    return line_count(text) <= FOLD_LINES and len(text) <= FOLD_CHARS


def _capped(text: str) -> str:
    if len(text) <= MAX_TEXT_CHARS:
        return text
    return text[:MAX_TEXT_CHARS] + f"\n[... {len(text) - MAX_TEXT_CHARS} more characters not shown ...]"


def _diff_lines(patch: str) -> list[tuple[str, str]]:
    """(class, line) per line of a unified diff: file, hunk, add, del or ctx."""
    out = []
    for line in _capped(patch).rstrip("\n").split("\n"):
        if line.startswith(_FILE_LINE):
            cls = "file"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append((cls, line))
    return out


def episode_file(episode: EpisodeRecord) -> str:
    """The episode's page, relative to the report's directory."""
    return f"episodes/{episode.number}-{safe_name(episode.instance_id)}.html"


def _step_meta(step: Any) -> list[str]:
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
    return meta


_ENV = Environment(
    loader=DictLoader(TEMPLATES),
    autoescape=True,
    finalize=_shown,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.globals.update(
    colors=STATUS_COLORS,
    capped=_capped,
    is_short=_is_short,
    size_of=size_of,
    diff_lines=_diff_lines,
    file_of=episode_file,
    step_meta=_step_meta,
)
_MACROS = _ENV.get_template("macros").module


def _render(name: str, title: str, **values: Any) -> str:
    return _ENV.get_template(name).render(csp=Markup(CSP), css=Markup(CSS), title=title, **values)


def pill(status: str) -> Markup:
    return _MACROS.pill(status)


def _s(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _rows_table(rows: Sequence[dict[str, str]]) -> tuple[list[Cell], list[list[Cell]]]:
    keys = list(rows[0]) if rows else []
    return [Cell(k) for k in keys], [[Cell(r.get(k, "")) for k in keys] for r in rows]


# -- the index page -------------------------------------------------------------------------------


def index_page(run: Run) -> str:
    episodes = run.episodes
    graded = [e for e in episodes if e.graded]
    success = sum(e.success for e in graded)
    rate = f"{success}/{len(graded)} ({success / len(graded):.1%})" if graded else "none graded"
    rows: list[tuple[str, Any]] = list(run.facts.items())
    rows.insert(1, ("episodes" if run.kind == "rollout" else "instances", str(len(episodes))))
    rows.insert(2, (f"{run.success_past} (of graded)", rate))
    counts = stats.outcomes(episodes)
    outcomes = Markup(" ").join(pill(s) + Markup("&nbsp;") + str(n) for s, n in counts.most_common())
    rows.insert(3, ("outcomes", outcomes))
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
    charts, missing = charts_of(run)
    head, table = _episode_table(run)
    return _render(
        "index",
        run.title,
        run=run,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
        rows=rows,
        charts=[Markup(chart) for chart in charts],  # plots escapes every label itself
        missing="; ".join(missing),
        head=head,
        table=table,
    )


def _labels(episodes: Iterable[EpisodeRecord], key: str) -> set[str | None]:
    return {getattr(e, key) for e in episodes}


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
    per = [("family", "family"), ("repo", "repository")]  # the short one beside the outcomes
    per += [
        (key, name) for key, name in (("run_id", "run"), ("policy", "policy")) if len(_labels(run.episodes, key)) > 1
    ]
    for key, name in per:
        found = stats.groups(run.episodes, lambda e, key=key: getattr(e, key) or "unknown")
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
                kind=f"rate-{key.replace('_', '-')}",
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


def _episode_table(run: Run) -> tuple[list[Cell], list[list[Cell]]]:
    """The index's table: a row per episode; a run, policy or model column where the input holds several."""
    several = [key for key in ("run_id", "policy", "model") if len(_labels(run.episodes, key)) > 1]
    names = {"run_id": "run", "policy": "policy", "model": "model"}
    numeric = ["reward", "steps", "reset s", "grade s"] if run.kind == "rollout" else ["reward", "grade s"]
    if run.kind == "certificate":
        numeric = ["grade s"]
    head = [Cell(h) for h in ("#", "instance", "repo", "family", *(names[k] for k in several), "outcome")]
    head += [Cell(h, "num") for h in numeric] + [Cell("reason")]
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
        rows.append(
            [
                Cell(e.number, "num"),
                Cell(e.instance_id, href=episode_file(e)),
                Cell(e.repo),
                Cell(e.family),
                *(Cell(getattr(e, key)) for key in several),
                Cell(pill(e.status)),
                *(Cell(values[h], "num") for h in numeric),
                Cell(reason, "reason"),
            ]
        )
    return head, rows


# -- one episode's page ---------------------------------------------------------------------------


def episode_page(run: Run, episode: EpisodeRecord, neighbours: Sequence[EpisodeRecord | None]) -> str:
    """``neighbours``: the previous and the next episode (None at the ends)."""
    before, after = neighbours
    rows: list[tuple[str, Any]] = [
        ("outcome", pill(episode.status)),
        ("repo", episode.repo),
        ("family", episode.family),
    ]
    for name, label in (("model", "model"), ("policy", "policy"), ("run_id", "run id")):
        if getattr(episode, name):
            rows.append((label, getattr(episode, name)))
    if episode.reward is not None:
        rows.append(("reward", f"{episode.reward:g}"))
    if run.kind == "rollout":
        rows.append(("steps", str(len(episode.steps))))
    for name, value in (("reset s", episode.reset_s), ("grade s", episode.grade_s), ("wall s", episode.wall_s)):
        if value is not None:
            rows.append((name, f"{value:.3f}"))
    rows.extend((k, v) for k, v in episode.facts.items() if k != "errors")
    said = [("verdict", episode.verdict), ("reason", episode.reason if episode.reason != episode.verdict else None)]
    said += [("masked", r) for r in episode.masked_reasons]
    said += [("error", r) for r in episode.facts.get("errors", "").split("\n") if r]
    report = episode.report or {}
    report_rows = [
        (key, round(value, 3) if isinstance(value, float) else value)
        for key in REPORT_KEYS
        if (value := report.get(key)) not in (None, "", [])
    ]
    timings = report.get("timings_s")
    if isinstance(timings, dict) and timings:
        report_rows.append(("timings s", ", ".join(f"{k} {v}" for k, v in timings.items())))
    test_groups = []
    for key, title in (("fail_to_pass", "FAIL_TO_PASS"), ("pass_to_pass", "PASS_TO_PASS")):
        group = report.get(key)
        if isinstance(group, dict):
            test_groups.append((title, list(group.get("success") or []), list(group.get("failure") or [])))
    flaky = [{"test": t, "statuses per run": s} for t, s in episode.flaky.items()]
    return _render(
        "episode",
        f"{episode.instance_id}: {episode.status}",
        run=run,
        e=episode,
        before=before,
        after=after,
        rows=rows,
        said=[(k, v) for k, v in said if v],
        report_rows=report_rows,
        test_groups=test_groups,
        restored=", ".join(map(str, report.get("restored_test_files") or [])),
        log_tail=str(report.get("log_tail") or "") if episode.eval_log is None else "",  # else the whole eval.log
        runs=_rows_table(episode.runs),
        flaky=_rows_table(flaky),
    )
