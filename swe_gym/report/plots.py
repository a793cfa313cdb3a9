"""Charts as inline SVG, drawn by hand: horizontal bars and histograms with titles and labelled axes.

No dependency, no script, no external resource: each function returns one ``<svg>`` element as text,
every label escaped (labels come from the data, and the data is the agent's). Every bar is a
``<rect class="bar">`` with a ``<title>`` tooltip saying what it counts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 560
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'DejaVu Sans', sans-serif"
BLUE = "#4e79a7"
ORANGE = "#f28e2b"
TEAL = "#59a14f"
GRID = "#e6e6e6"
AXIS = "#555555"
INK = "#222222"


@dataclass(frozen=True)
class Bar:
    """One bar: its label, its length (in the chart's unit), the text at its end, its colour."""

    label: str
    value: float
    text: str
    color: str = BLUE
    tooltip: str = ""


def _fmt(value: float) -> str:
    """A tick label: no trailing zeros, SI-ish for big numbers."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 10_000:
        return f"{value / 1000:g}k"
    if magnitude >= 1:
        return f"{value:.6g}"
    return f"{value:.3g}"


def nice_step(span: float, ticks: int = 5) -> float:
    """A round step (1, 2 or 5 times a power of ten) giving about ``ticks`` intervals over ``span``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _text(x: float, y: float, content: str, *, anchor: str = "start", size: int = 12, **attrs: str) -> str:
    extra = "".join(f' {name.replace("_", "-")}="{escape(value)}"' for name, value in attrs.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}"{extra}>{escape(content)}</text>'


def _svg(title: str, height: float, body: list[str], kind: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{escape(kind)}" role="img" '
        f'viewBox="0 0 {WIDTH} {height:.0f}" width="100%" font-family="{escape(FONT)}" fill="{INK}">'
        f"<title>{escape(title)}</title>"
        f'<rect x="0" y="0" width="{WIDTH}" height="{height:.0f}" fill="#ffffff"/>'
        + _text(WIDTH / 2, 20, title, anchor="middle", size=14, font_weight="600")
        + "".join(body)
        + "</svg>"
    )


def _shorten(label: str, limit: int) -> str:
    label = " ".join(label.split())
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def bar_chart(
    title: str,
    bars: Sequence[Bar],
    *,
    axis_label: str,
    max_value: float | None = None,
    percent: bool = False,
    kind: str = "bars",
) -> str:
    """Horizontal bars, one per label (long labels are shortened; the tooltip has them whole).

    ``percent``: values are fractions in [0, 1], ticked 0-100 %.
    """
    label_chars = min(36, max((len(_shorten(b.label, 36)) for b in bars), default=4))
    left = 14 + label_chars * 7.2
    right, top, bar_h, gap = 92, 36, 18, 7
    plot_w = WIDTH - left - right
    top_value = max_value if max_value is not None else max((b.value for b in bars), default=0.0)
    if percent:
        top_value, step = 1.0, 0.25
    else:
        step = nice_step(top_value or 1.0, 4)
        if step < 1 and all(float(b.value).is_integer() for b in bars):
            step = 1.0
        top_value = max(step, math.ceil((top_value or 1.0) / step) * step)
    plot_h = len(bars) * (bar_h + gap) + gap
    height = top + plot_h + 44
    body: list[str] = []
    tick = 0.0
    while tick <= top_value + 1e-9:
        x = left + plot_w * tick / top_value
        body.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="{GRID}"/>')
        body.append(_text(x, top + plot_h + 15, f"{tick * 100:.0f}%" if percent else _fmt(tick), anchor="middle"))
        tick += step
    for i, bar in enumerate(bars):
        y = top + gap + i * (bar_h + gap)
        width = plot_w * max(0.0, min(bar.value, top_value)) / top_value
        tooltip = bar.tooltip or f"{bar.label}: {bar.text}"
        body.append(_text(left - 6, y + bar_h - 5, _shorten(bar.label, 36), anchor="end"))
        body.append(
            f'<rect class="bar" x="{left:.1f}" y="{y:.1f}" width="{max(width, 0.0):.1f}" height="{bar_h}" '
            f'fill="{escape(bar.color)}"><title>{escape(tooltip)}</title></rect>'
        )
        body.append(_text(left + width + 5, y + bar_h - 5, bar.text, size=11))
    body.append(f'<line x1="{left:.1f}" y1="{top}" x2="{left:.1f}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(
        f'<line x1="{left:.1f}" y1="{top + plot_h}" x2="{left + plot_w:.1f}" y2="{top + plot_h}" stroke="{AXIS}"/>'
    )
    body.append(_text(left + plot_w / 2, top + plot_h + 34, axis_label, anchor="middle"))
    return _svg(title, height, body, kind)


def _bins(values: Sequence[float], *, integer: bool, log: bool) -> tuple[list[float], bool]:
    """Bin edges for ``values`` (and whether the axis is logarithmic)."""
    lo, hi = min(values), max(values)
    if integer:
        lo, hi = math.floor(lo), math.ceil(hi)
        if hi - lo + 1 <= 30:
            return [lo - 0.5 + i for i in range(int(hi - lo) + 2)], False
        step = max(1, math.ceil(nice_step(hi - lo, 20)))
        start = math.floor(lo / step) * step
        count = math.floor((hi - start) / step) + 1
        return [start - 0.5 + i * step for i in range(count + 1)], False
    positive = [v for v in values if v > 0]
    if log and positive and hi / min(positive) > 50:  # zeros (if any) are counted in the first bin
        lo = min(positive)
        lo_exp, hi_exp = math.floor(math.log10(lo) * 4) / 4, math.ceil(math.log10(hi) * 4 + 1e-9) / 4
        count = max(1, round((hi_exp - lo_exp) * 4))
        return [10 ** (lo_exp + i / 4) for i in range(count + 1)], True
    if hi == lo:
        step = nice_step(abs(lo) or 1.0, 4) / 2
        return [lo - step / 2, lo + step / 2], False
    step = nice_step(hi - lo, min(20, max(5, round(math.sqrt(len(values)) * 2))))
    start = math.floor(lo / step) * step
    count = max(1, math.ceil((hi - start) / step - 1e-9))
    edges = [start + i * step for i in range(count + 1)]
    if edges[-1] <= hi:  # the top value goes in the last bin (closed on the right)
        edges[-1] = max(edges[-1], hi)
    return edges, False


def histogram(
    title: str,
    values: Sequence[float],
    *,
    x_label: str,
    y_label: str,
    integer: bool = False,
    log: bool = False,
    edges: Sequence[float] | None = None,
    color: str = BLUE,
    kind: str = "histogram",
    unit: str = "",
) -> str:
    """Vertical bars counting ``values`` per bin. ``integer``: one bin per whole number (when few);
    ``log``: logarithmic bins when the values span more than 50x; ``edges``: fixed bin edges."""
    is_log = False
    if edges is None:
        edges, is_log = _bins(values, integer=integer, log=log)
    edges = list(edges)
    counts = [0] * (len(edges) - 1)
    for value in values:
        value = min(max(value, edges[0]), edges[-1]) if is_log else value
        for i in range(len(counts)):
            last = i == len(counts) - 1
            if edges[i] <= value < edges[i + 1] or (last and value == edges[-1]):
                counts[i] += 1
                break
    left, right, top, bottom = 56, 18, 34, 52
    plot_w, plot_h = WIDTH - left - right, 190
    height = top + plot_h + bottom
    peak = max(counts, default=0)
    step = max(1.0, nice_step(peak or 1, 4))
    step = math.ceil(step)
    y_top = max(step, math.ceil((peak or 1) / step) * step)

    def x_of(value: float) -> float:
        if is_log:
            span = math.log10(edges[-1]) - math.log10(edges[0])
            return left + plot_w * (math.log10(value) - math.log10(edges[0])) / span
        return left + plot_w * (value - edges[0]) / (edges[-1] - edges[0])

    body: list[str] = []
    tick = 0
    while tick <= y_top:
        y = top + plot_h - plot_h * tick / y_top
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, y + 4, _fmt(tick), anchor="end"))
        tick += step
    for i, count in enumerate(counts):
        x0, x1 = x_of(edges[i]), x_of(edges[i + 1])
        h = plot_h * count / y_top
        if integer:
            span = (
                f"{edges[i] + 0.5:g}" if edges[i + 1] - edges[i] == 1 else f"{edges[i] + 0.5:g}-{edges[i + 1] - 0.5:g}"
            )
        else:
            span = f"{_fmt(edges[i])}-{_fmt(edges[i + 1])}"
        body.append(
            f'<rect class="bar" x="{x0 + 1:.1f}" y="{top + plot_h - h:.1f}" width="{max(x1 - x0 - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="{escape(color)}"><title>{escape(f"{span}{unit}: {count}")}</title></rect>'
        )
    body.extend(_x_ticks(edges, x_of, integer=integer, is_log=is_log, y=top + plot_h))
    body.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    body.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="{AXIS}"/>')
    scale = " (log scale)" if is_log else ""
    body.append(_text(left + plot_w / 2, height - 10, x_label + scale, anchor="middle"))
    body.append(
        _text(14, top + plot_h / 2, y_label, anchor="middle", transform=f"rotate(-90 14 {top + plot_h / 2:.1f})")
    )
    return _svg(title, height, body, kind)


def _x_ticks(edges: list[float], x_of, *, integer: bool, is_log: bool, y: float) -> list[str]:
    out: list[str] = []
    if integer:
        centres = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
        every = max(1, math.ceil(len(centres) / 12))
        values = [c for i, c in enumerate(centres) if i % every == 0] if edges[1] - edges[0] == 1 else edges[::every]
        labels = [f"{v:g}" if edges[1] - edges[0] == 1 else f"{v + 0.5:g}" for v in values]
    elif is_log:
        values = [10.0**e for e in range(math.ceil(math.log10(edges[0]) - 1e-9), math.floor(math.log10(edges[-1])) + 1)]
        values = values or [edges[0], edges[-1]]
        labels = [_fmt(v) for v in values]
    else:
        every = max(1, math.ceil((len(edges) - 1) / 8))
        values = edges[::every]
        labels = [_fmt(round(v, 10)) for v in values]
    for value, label in zip(values, labels, strict=True):
        x = x_of(value)
        out.append(f'<line x1="{x:.1f}" y1="{y}" x2="{x:.1f}" y2="{y + 4}" stroke="{AXIS}"/>')
        out.append(_text(x, y + 16, label, anchor="middle"))
    return out
