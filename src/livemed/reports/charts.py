"""Chart geometry for the HTML report: plain shapes in a fixed coordinate system.

Each function turns analysis rows into a `Chart` of rectangles, lines, circles, polylines and texts;
the template draws them as inline SVG (so every label goes through Jinja's autoescaping). No
number is computed here that is not already in the analysis rows: only positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from livemed.analysis.contamination import ContaminationRow
from livemed.analysis.funnel import FunnelRow
from livemed.analysis.leaderboard import LeaderboardRow
from livemed.analysis.taxonomy import CATEGORIES, DistributionRow
from livemed.analysis.trends import TrendRow, months

PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563")
CATEGORY_COLORS = {"CNIF": "#f59e0b", "GOPR": "#8b5cf6", "MHME": "#ef4444", "KGOC": "#3b82f6"}
LABEL_W = 230.0
WIDTH = 760.0


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


def axes_chart(rows: Sequence[LeaderboardRow]) -> Chart:
    """A heat map: models × axes, each cell the model's mean axis score."""
    axes: list[str] = []
    for row in rows:
        axes.extend(a for a in row.per_axis if a not in axes)
    cell_w, cell_h, top = (WIDTH - LABEL_W) / max(len(axes), 1), 30.0, 34.0
    chart = Chart(WIDTH, top + cell_h * len(rows) + 10, "Mean score per axis (cell colour: 0 white, 1 blue)")
    for j, axis in enumerate(axes):
        x = LABEL_W + (j + 0.5) * cell_w
        chart.add(
            "text", x=x, y=top - 10, text=axis.replace("_", " "), anchor="middle", size=12, fill="#374151"
        )
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
    for i, row in enumerate(shown):
        y = top + i * step + 12
        chart.add("text", x=LABEL_W - 8, y=y + 4, text=row.model, anchor="end", size=12, fill="#111827")
        assert row.mean_full is not None
        _interval(chart, y - 5, row.mean_full, row.full_low, row.full_high, "#6b7280",
                  f"{row.model} full set: {row.mean_full:.3f} (n={row.n_full})")  # fmt: skip
        if row.mean_post is not None:
            _interval(chart, y + 5, row.mean_post, row.post_low, row.post_high, "#dc2626",
                      f"{row.model} post-cutoff: {row.mean_post:.3f} (n={row.n_post})")  # fmt: skip
        status = row.verdict or row.status
        chart.add("text", x=_scale(1.0) + 8, y=y + 4, text=status, size=10, fill="#6b7280")
    chart.width = WIDTH + 120
    return chart


def trends_chart(rows: Sequence[TrendRow], models: Sequence[str]) -> Chart:
    """Monthly mean score per model (points sized by nothing: the count is in each point's title)."""
    month_list = months(rows)
    left, right, top, bottom = 50.0, WIDTH - 20, 16.0, 236.0
    chart = Chart(WIDTH, bottom + 60, "Mean score by month of case publication")
    span = max(len(month_list) - 1, 1)

    def x_of(month: str) -> float:
        return (
            left + month_list.index(month) / span * (right - left)
            if len(month_list) > 1
            else (left + right) / 2
        )

    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = bottom - tick * (bottom - top)
        chart.add("line", x=left, y=y, x2=right, y2=y, stroke="#e5e7eb", css="grid")
        chart.add("text", x=left - 6, y=y + 4, text=f"{tick:.2f}", anchor="end", size=11, fill="#6b7280")
    every = max(1, -(-len(month_list) // 10))  # at most ~10 month labels
    for index, month in enumerate(month_list):
        if index % every == 0:
            x = x_of(month)
            chart.add("text", x=x, y=bottom + 16, text=month, anchor="middle", size=11, fill="#6b7280")
    for i, model in enumerate(models):
        points = [
            (x_of(r.month), bottom - min(max(r.mean, 0.0), 1.0) * (bottom - top), r)
            for r in rows
            if r.model == model
        ]
        if not points:
            continue
        chart.add("polyline", points=" ".join(f"{x:.1f},{y:.1f}" for x, y, _ in points), stroke=color(i))
        for x, y, r in points:
            chart.add(
                "circle", x=x, y=y, r=4, fill=color(i), title=f"{model} {r.month}: {r.mean:.3f} (n={r.n})"
            )
        lx = left + (i % 4) * 180
        ly = bottom + 34 + (i // 4) * 16
        chart.add("rect", x=lx, y=ly - 9, w=10, h=10, fill=color(i))
        chart.add("text", x=lx + 14, y=ly, text=model, size=11, fill="#374151")
    chart.height = bottom + 44 + 16 * ((len(models) + 3) // 4)
    return chart


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
            chart.add("text", x=LABEL_W + w + 6, y=y + bar_h - 3, text=str(count), size=10, fill="#374151")
    return chart
