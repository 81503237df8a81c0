"""Chart geometry for the HTML report: plain shapes in a fixed coordinate system.

Each function turns analysis rows into a `Chart` of rectangles, lines, circles, polylines and texts;
the template draws them as inline SVG (so every label goes through Jinja's autoescaping). No
number is computed here that is not already in the analysis rows: only positions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date

from livemed.analysis.contamination import ContaminationRow
from livemed.analysis.funnel import FunnelRow
from livemed.analysis.leaderboard import LeaderboardRow
from livemed.analysis.taxonomy import CATEGORIES, DistributionRow
from livemed.analysis.trends import TrendRow, month_number, month_position, month_range
from livemed.judges.tables import OutcomeRow

PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
CATEGORY_COLORS = {"CNIF": "#f59e0b", "GOPR": "#8b5cf6", "MHME": "#ef4444", "KGOC": "#3b82f6"}
LABEL_W = 230.0
WIDTH = 760.0
MIN_TEXT_PX = 10  # no chart label is drawn smaller (tests/reports/test_readable_widths.py)


@dataclass
class Shape:
    kind: str  # rect | line | circle | text | polyline
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    x2: float = 0.0
    y2: float = 0.0
    r: float = 0.0
    points: str = ""
    fill: str = "none"
    stroke: str = "none"
    text: str = ""
    anchor: str = "start"
    size: int = 12
    title: str = ""
    css: str = ""


@dataclass
class Chart:
    width: float
    height: float
    label: str
    shapes: list[Shape] = field(default_factory=list)

    def add(self, kind: str, **kwargs: object) -> None:
        self.shapes.append(Shape(kind=kind, **kwargs))  # type: ignore[arg-type]

    @property
    def min_px(self) -> int:
        """The narrowest the chart may be drawn (CSS px): its smallest label then renders at `MIN_TEXT_PX`.
        Narrower screens scroll the chart sideways instead of shrinking its text."""
        smallest = min((s.size for s in self.shapes if s.kind == "text"), default=MIN_TEXT_PX)
        return math.ceil(self.width * MIN_TEXT_PX / smallest)


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _scale(
    value: float, lo: float = 0.0, hi: float = 1.0, left: float = LABEL_W, right: float = WIDTH - 60
) -> float:
    value = min(max(value, lo), hi)
    return left + (value - lo) / (hi - lo) * (right - left)


def _x_axis(chart: Chart, top: float, bottom: float) -> None:
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _scale(tick)
        chart.add("line", x=x, y=top, x2=x, y2=bottom, stroke="#e5e7eb", css="grid")
        chart.add("text", x=x, y=bottom + 14, text=f"{tick:.2f}", anchor="middle", size=11, fill="#6b7280")


def leaderboard_chart(rows: Sequence[LeaderboardRow]) -> Chart:
    """Mean score bars with their 95% interval as whiskers."""
    step, top = 30.0, 10.0
    chart = Chart(WIDTH, top + step * len(rows) + 30, "Mean score per model with 95% bootstrap interval")
    bottom = top + step * len(rows)
    _x_axis(chart, top, bottom)
    for i, row in enumerate(rows):
        y = top + i * step
        chart.add("text", x=LABEL_W - 8, y=y + 19, text=row.model, anchor="end", size=12, fill="#111827")
        width = _scale(row.mean) - LABEL_W
        ci = (
            "interval not computable"
            if row.ci_low is None or row.ci_high is None
            else (f"[{row.ci_low:.3f}, {row.ci_high:.3f}]")
        )
        title = f"{row.model}: {row.mean:.3f} {ci}, n={row.n_cases}"
        chart.add("rect", x=LABEL_W, y=y + 6, w=max(width, 1.0), h=18, fill=color(i), title=title, css="bar")
        if row.ci_low is not None and row.ci_high is not None:
            lo, hi = _scale(row.ci_low), _scale(row.ci_high)
            chart.add("line", x=lo, y=y + 15, x2=hi, y2=y + 15, stroke="#111827", css="whisker")
            for end in (lo, hi):
                chart.add("line", x=end, y=y + 10, x2=end, y2=y + 20, stroke="#111827", css="whisker")
        chart.add("text", x=_scale(1.0) + 8, y=y + 19, text=f"{row.mean:.3f}", size=12, fill="#111827")
    return chart


def _heat(value: float) -> str:
    """White to blue by value in [0, 1]."""
    v = min(max(value, 0.0), 1.0)
    r, g, b = (int(255 - v * (255 - c)) for c in (37, 99, 235))
    return f"#{r:02x}{g:02x}{b:02x}"


CHAR_W = 7.0  # a generous width of one character at font size 12


def _label_lines(label: str, width: float) -> list[str]:
    """`label` in lines that fit `width` (at word breaks; a single word longer than that stays whole)."""
    lines: list[str] = []
    for word in label.split():
        if lines and len(lines[-1]) + 1 + len(word) <= (width - 6) / CHAR_W:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines or [label]


def axes_chart(rows: Sequence[LeaderboardRow]) -> Chart:
    """A heat map: models × axes, each cell the model's mean axis score."""
    axes: list[str] = []
    for row in rows:
        axes.extend(a for a in row.per_axis if a not in axes)
    cell_w, cell_h = (WIDTH - LABEL_W) / max(len(axes), 1), 30.0
    labels = [_label_lines(axis.replace("_", " "), cell_w) for axis in axes]
    top = 20.0 + 14.0 * max((len(lines) for lines in labels), default=1)
    chart = Chart(WIDTH, top + cell_h * len(rows) + 10, "Mean score per axis (cell colour: 0 white, 1 blue)")
    for j, lines in enumerate(labels):
        x = LABEL_W + (j + 0.5) * cell_w
        for k, line in enumerate(lines):  # the last line sits just above the cells
            y = top - 10 - 14 * (len(lines) - 1 - k)
            chart.add("text", x=x, y=y, text=line, anchor="middle", size=12, fill="#374151", css="axis-label")
    for i, row in enumerate(rows):
        y = top + i * cell_h
        chart.add("text", x=LABEL_W - 8, y=y + 20, text=row.model, anchor="end", size=12, fill="#111827")
        for j, axis in enumerate(axes):
            if axis not in row.per_axis:
                continue
            value = row.per_axis[axis]
            x = LABEL_W + j * cell_w
            chart.add("rect", x=x + 1, y=y + 1, w=cell_w - 2, h=cell_h - 2, fill=_heat(value),
                      title=f"{row.model} · {axis}: {value:.3f}", css="cell")  # fmt: skip
            ink = "#ffffff" if value > 0.6 else "#111827"
            chart.add(
                "text", x=x + cell_w / 2, y=y + 20, text=f"{value:.2f}", anchor="middle", size=12, fill=ink
            )
    return chart


def _interval(
    chart: Chart, y: float, mean: float, lo: float | None, hi: float | None, fill: str, title: str
) -> None:
    if lo is not None and hi is not None:
        chart.add("line", x=_scale(lo), y=y, x2=_scale(hi), y2=y, stroke=fill, css="whisker")
    chart.add("circle", x=_scale(mean), y=y, r=5, fill=fill, title=title)


def contamination_chart(rows: Sequence[ContaminationRow]) -> Chart:
    """Per model: the full-set mean and the post-cutoff mean, each with its 95% interval."""
    shown = [r for r in rows if r.mean_full is not None]
    step, top = 34.0, 28.0
    chart = Chart(WIDTH, top + step * len(shown) + 30, "Full set vs post-cutoff subset (95% intervals)")
    bottom = top + step * len(shown)
    _x_axis(chart, top, bottom)
    chart.add("circle", x=LABEL_W + 6, y=10, r=5, fill="#6b7280")
    chart.add("text", x=LABEL_W + 16, y=14, text="full set", size=12, fill="#374151")
    chart.add("circle", x=LABEL_W + 96, y=10, r=5, fill="#dc2626")
    chart.add("text", x=LABEL_W + 106, y=14, text="post-cutoff cases", size=12, fill="#374151")
    labels = [_contamination_label(row) for row in shown]
    for i, (row, status) in enumerate(zip(shown, labels, strict=True)):
        y = top + i * step + 12
        chart.add("text", x=LABEL_W - 8, y=y + 1, text=row.model, anchor="end", size=12, fill="#111827")
        assert row.mean_full is not None
        _interval(chart, y - 5, row.mean_full, row.full_low, row.full_high, "#6b7280",
                  f"{row.model} full set: {row.mean_full:.3f} (n={row.n_full})")  # fmt: skip
        if row.mean_post is not None:
            _interval(chart, y + 5, row.mean_post, row.post_low, row.post_high, "#dc2626",
                      f"{row.model} post-cutoff: {row.mean_post:.3f} (n={row.n_post})")  # fmt: skip
        chart.add("text", x=LABEL_W - 8, y=y + 14, text=status, anchor="end", size=11, fill="#6b7280")
    return chart


def _contamination_label(row: ContaminationRow) -> str:
    """The verdict (or status) beside a model's intervals, "· simulated" for a simulation's cutoff."""
    return f"{row.verdict or row.status} · simulated" if row.simulated else row.verdict or row.status


def trends_chart(
    rows: Sequence[TrendRow], models: Sequence[str], cutoffs: Mapping[str, date] | None = None
) -> Chart:
    """Monthly mean score per model on a real time axis: months evenly spaced by date, an empty month a
    gap in each line, the number of cases under each month, and a dashed marker at each model's cutoff."""
    axis = _TimeAxis(month_range(rows), 50.0, WIDTH - 20)
    top, bottom = 30.0, 236.0
    chart = Chart(WIDTH, bottom + 60, "Mean score by month of case publication (n: cases that month)")
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = bottom - tick * (bottom - top)
        chart.add("line", x=axis.left, y=y, x2=axis.right, y2=y, stroke="#e5e7eb", css="grid")
        chart.add("text", x=axis.left - 6, y=y + 4, text=f"{tick:.2f}", anchor="end", size=11, fill="#6b7280")
    _month_labels(chart, axis, rows, bottom)
    for i, model in enumerate(models):
        own = [r for r in rows if r.model == model]
        for segment in _segments(own):
            points = [
                (axis.x(r.month), bottom - min(max(r.mean, 0.0), 1.0) * (bottom - top)) for r in segment
            ]
            chart.add("polyline", points=" ".join(f"{x:.1f},{y:.1f}" for x, y in points), stroke=color(i))
        for r in own:
            y = bottom - min(max(r.mean, 0.0), 1.0) * (bottom - top)
            chart.add("circle", x=axis.x(r.month), y=y, r=4, fill=color(i),
                      title=f"{model} {r.month}: {r.mean:.3f} (n={r.n})")  # fmt: skip
        lx, ly = axis.left + (i % 4) * 180, bottom + 50 + (i // 4) * 16
        chart.add("rect", x=lx, y=ly - 9, w=10, h=10, fill=color(i))
        chart.add("text", x=lx + 14, y=ly, text=model, size=11, fill="#374151")
    legend_end = bottom + 60 + 16 * ((len(models) + 3) // 4)
    chart.height = _cutoff_markers(chart, axis, cutoffs or {}, (top, bottom), legend_end)
    return chart


@dataclass
class _TimeAxis:
    """Calendar months evenly spaced between `left` and `right`; a month's point sits mid-month."""

    months: list[str]
    left: float
    right: float

    @property
    def first(self) -> int:
        return month_number(self.months[0]) if self.months else 0

    def at(self, position: float) -> float:
        span = max(len(self.months), 1)
        return self.left + (position - self.first) / span * (self.right - self.left)

    def x(self, month: str) -> float:
        return self.at(month_number(month) + 0.5)

    def covers(self, day: date) -> bool:
        return bool(self.months) and self.first <= month_position(day) < self.first + len(self.months)


def _segments(rows: Sequence[TrendRow]) -> list[list[TrendRow]]:
    """A model's rows split wherever a month is missing, so an empty month is a gap in the line."""
    out: list[list[TrendRow]] = []
    for row in sorted(rows, key=lambda r: r.month):
        if out and month_number(row.month) - month_number(out[-1][-1].month) == 1:
            out[-1].append(row)
        else:
            out.append([row])
    return out


def _month_labels(chart: Chart, axis: _TimeAxis, rows: Sequence[TrendRow], bottom: float) -> None:
    """A label every few months (at most ~10) and, under every month with cases, its n."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.month] = max(counts.get(r.month, 0), r.n)
    every = max(1, -(-len(axis.months) // 10))
    for index, month in enumerate(axis.months):
        x = axis.x(month)
        if index % every == 0:
            chart.add("text", x=x, y=bottom + 16, text=month, anchor="middle", size=11, fill="#6b7280")
        if month in counts:
            chart.add("text", x=x, y=bottom + 30, text=str(counts[month]), anchor="middle", size=11,
                      fill="#6b7280", css="n")  # fmt: skip
    chart.add("text", x=axis.left - 6, y=bottom + 30, text="n", anchor="end", size=11, fill="#6b7280")


def _cutoff_markers(
    chart: Chart, axis: _TimeAxis, cutoffs: Mapping[str, date], band: tuple[float, float], y: float
) -> float:
    """A dashed vertical line at each cutoff on the axis (labelled with its models); cutoffs off the axis
    are listed in a line under the legend. Returns the chart's height."""
    top, bottom = band
    by_day: dict[date, list[str]] = {}
    for model, day in sorted(cutoffs.items()):
        by_day.setdefault(day, []).append(model)
    outside = []
    for day, names in sorted(by_day.items()):
        if not axis.covers(day):
            outside.append(f"{', '.join(names)} ({day})")
            continue
        x = axis.at(month_position(day) + 1 / 31)
        for y0 in range(int(top), int(bottom), 8):  # dashes: the template draws plain lines
            chart.add("line", x=x, y=y0, x2=x, y2=min(y0 + 4, bottom), stroke="#111827", css="cutoff")
        label = names[0] if len(names) == 1 else f"{len(names)} models"
        right = x > (axis.left + axis.right) / 2  # a label right of the middle reads leftwards: never cut
        chart.add("text", x=x - 3 if right else x + 3, y=top - 6, text=f"cutoff {day}: {label}", size=11,
                  anchor="end" if right else "start", fill="#111827", css="cutoff-label")  # fmt: skip
    if outside:
        chart.add("text", x=axis.left, y=y, text="cutoff off this axis: " + "; ".join(outside), size=11,
                  fill="#6b7280", css="cutoff-label")  # fmt: skip
        return y + 10
    return y - 6


def taxonomy_chart(rows: Sequence[DistributionRow]) -> Chart:
    """100% stacked bars: the share of each root cause per model (and classifier)."""
    step, top = 30.0, 30.0
    chart = Chart(WIDTH, top + step * len(rows) + 10, "Root causes of the lowest-scoring answers")
    for j, (code, text) in enumerate(CATEGORIES.items()):
        chart.add("rect", x=LABEL_W + j * 130, y=4, w=10, h=10, fill=CATEGORY_COLORS[code], title=text)
        chart.add("text", x=LABEL_W + j * 130 + 14, y=13, text=code, size=11, fill="#374151")
    for i, row in enumerate(rows):
        y = top + i * step
        label = row.model if row.classifier != "offline/heuristic" else f"{row.model} (heuristic)"
        chart.add("text", x=LABEL_W - 8, y=y + 17, text=label, anchor="end", size=12, fill="#111827")
        x = LABEL_W
        for code in CATEGORIES:
            share = row.shares.get(code, 0.0)
            w = share * (WIDTH - 60 - LABEL_W)
            if w > 0:
                chart.add("rect", x=x, y=y + 4, w=w, h=18, fill=CATEGORY_COLORS[code],
                          title=f"{row.model} · {code}: {row.counts.get(code, 0)} of {row.n}")  # fmt: skip
                if share >= 0.08:
                    chart.add(
                        "text",
                        x=x + w / 2,
                        y=y + 17,
                        text=f"{share:.0%}",
                        anchor="middle",
                        size=11,
                        fill="#ffffff",
                    )
            x += w
    return chart


FUNNEL_STEPS = (
    ("harvested", "#cbd5e1"),
    ("documents", "#94a3b8"),
    ("cases", "#2563eb"),
    ("rubrics", "#7c3aed"),
    ("scored", "#059669"),
)
FUNNEL_LABELS = {"documents": "after pre-filter"}


def funnel_chart(rows: Sequence[FunnelRow]) -> Chart:
    """Per source: documents harvested, left after the pre-filter, cases curated, rubrics written, cases
    scored (bar length ∝ count)."""
    bar_h, group_gap, top = 14.0, 16.0, 24.0
    group_h = bar_h * len(FUNNEL_STEPS) + group_gap
    title = "Curation funnel: harvested → after pre-filter → cases → rubrics → scored"
    chart = Chart(WIDTH, top + group_h * len(rows), title)
    x = LABEL_W
    for name, fill in FUNNEL_STEPS:
        label = FUNNEL_LABELS.get(name, name)
        chart.add("rect", x=x, y=4, w=10, h=10, fill=fill)
        chart.add("text", x=x + 14, y=13, text=label, size=11, fill="#374151")
        x += 14 + 6.5 * len(label) + 18
    biggest = max([max(r.harvested, r.documents, r.cases) for r in rows] + [1])
    for i, row in enumerate(rows):
        y0 = top + i * group_h
        chart.add(
            "text", x=LABEL_W - 8, y=y0 + 2.5 * bar_h, text=row.source, anchor="end", size=12, fill="#111827"
        )
        for j, (name, fill) in enumerate(FUNNEL_STEPS):
            count = int(getattr(row, name))
            y = y0 + j * bar_h
            w = count / biggest * (WIDTH - 120 - LABEL_W)
            chart.add(
                "rect",
                x=LABEL_W,
                y=y + 1,
                w=max(w, 1.0),
                h=bar_h - 3,
                fill=fill,
                title=f"{row.source} {FUNNEL_LABELS.get(name, name)}: {count}",
            )
            chart.add("text", x=LABEL_W + w + 6, y=y + bar_h - 3, text=str(count), size=11, fill="#374151")
    return chart


OUTCOME_COLORS = (("correct", "#059669"), ("wrong", "#dc2626"), ("invalid", "#9ca3af"))
OUTCOME_BAR_END = WIDTH - 110  # right of the bars: the count of games behind each


def outcomes_chart(rows: Sequence[OutcomeRow], title: str) -> Chart:
    """The paper's Figures 1–2: per judge (a heading) and cell, a 100% stacked bar of its samples,
    correct / wrong / invalid, and the games behind it; a cell under MIN_N games says "n too small"."""
    step, top, heading = 26.0, 30.0, 22.0
    judges = list(dict.fromkeys(row.judge for row in rows))
    chart = Chart(WIDTH, top + step * len(rows) + heading * len(judges) + 6, title)
    x = LABEL_W
    for name, fill in OUTCOME_COLORS:
        chart.add("rect", x=x, y=4, w=10, h=10, fill=fill)
        chart.add("text", x=x + 14, y=13, text=name, size=11, fill="#374151")
        x += 90
    y = top
    for judge in judges:
        chart.add("text", x=8, y=y + 15, text=judge, size=12, fill="#111827", css="judge")
        y += heading
        for row in (r for r in rows if r.judge == judge):
            _outcome_bar(chart, row, y)
            y += step
    return chart


def _outcome_bar(chart: Chart, row: OutcomeRow, y: float) -> None:
    chart.add("text", x=LABEL_W - 8, y=y + 16, text=row.cell, anchor="end", size=12, fill="#111827")
    count = f"{row.games} games"
    chart.add("text", x=OUTCOME_BAR_END + 8, y=y + 16, text=count, size=11, fill="#6b7280", css="n")
    if row.small or not row.samples:
        chart.add("text", x=LABEL_W, y=y + 16, text="n too small", size=11, fill="#6b7280")
        return
    x = LABEL_W
    for name, fill in OUTCOME_COLORS:
        k = int(getattr(row, name))
        w = k / row.samples * (OUTCOME_BAR_END - LABEL_W)
        if w <= 0:
            continue
        title = f"{row.judge} · {row.cell}: {k} of {row.samples} samples {name} ({row.games} games)"
        chart.add("rect", x=x, y=y + 3, w=w, h=18, fill=fill, title=title, css="bar")
        if k / row.samples >= 0.08:
            label = f"{k / row.samples:.0%}"
            chart.add("text", x=x + w / 2, y=y + 16, text=label, anchor="middle", size=11, fill="#ffffff")
        x += w
