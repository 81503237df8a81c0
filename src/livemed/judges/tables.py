"""Rows of the meta-evaluation tables, shaped like the paper's Tables 2–5 (plus position bias and what
was asked and answered), one row per judge configuration (`judge · mode`; Table 3 and the position
table one row per configuration and dataset). Cells are `Figure`s (a value with its n and interval,
`figures.py`) or counts; numbers come from `meta.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from livemed.judges.figures import SMALL, Figure
from livemed.judges.meta import TERTILES as TERTILES
from livemed.judges.meta import Coverage, MetaTables, Summary

Row = dict[str, Any]
MEAN_ROW = "mean over datasets"
COVERAGE_COLUMNS = {
    "games asked": "games_asked",
    "games answered": "games_answered",
    "games invalid": "games_invalid",
    "games missing": "games_missing",
    "samples asked": "samples_asked",
    "samples answered": "samples_answered",
    "samples invalid": "samples_invalid",
    "samples missing": "samples_missing",
    "failed calls": "failed_calls",
}
TEXT_COLUMNS = ("judge", "dataset", "tertile")


@dataclass(frozen=True)
class Table:
    title: str
    columns: list[str]
    rows: list[Row]


def _datasets(results: dict[str, MetaTables]) -> list[str]:
    seen: dict[str, None] = {}
    for tables in results.values():
        seen.update(dict.fromkeys(tables.datasets))
    return list(seen)


def _figure(summary: Summary | None, metric: str) -> Figure | None:
    return summary.figure(metric) if summary is not None else None


def correctness(results: dict[str, MetaTables]) -> Table:
    """Table 2: majority-vote correctness by family, dataset and the unweighted average."""
    names = _datasets(results)
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge, "decomposable": t.family_figure("decomposable")}
        row["atomic"] = t.family_figure("atomic")
        row.update({d: _figure(t.datasets.get(d), "majority") for d in names})
        row["average"] = t.average_figure("majority")
        rows.append(row)
    return Table(
        "Table 2 · Pairwise correctness (majority vote; higher is better; average = unweighted mean over "
        "datasets)",
        ["judge", "decomposable", "atomic", *names, "average"],
        rows,
    )


VARIANCE_COLUMNS = {"majority": "majority", "any-sample": "any_sample", "all-sample": "all_sample"}


def variance(results: dict[str, MetaTables]) -> Table:
    """Table 3: majority, any-sample and all-sample correctness and |any − all| per dataset, and their
    unweighted means over datasets (the verdict variance: lower is better)."""
    rows = []
    for judge, t in results.items():
        for name, s in t.datasets.items():
            row: Row = {"judge": judge, "dataset": name}
            row.update({c: s.figure(m) for c, m in VARIANCE_COLUMNS.items()})
            rows.append(row | {"|any − all|": s.figure("variance")})
        mean: Row = {"judge": judge, "dataset": MEAN_ROW}
        mean.update({c: t.average_figure(m) for c, m in VARIANCE_COLUMNS.items()})
        rows.append(mean | {"|any − all|": t.average_figure("variance")})
    return Table(
        "Table 3 · Verdict variance |any − all| over k samples (lower is better), with majority, any- and "
        "all-sample correctness",
        ["judge", "dataset", *VARIANCE_COLUMNS, "|any − all|"],
        rows,
    )


def invalid(results: dict[str, MetaTables]) -> Table:
    """Table 4: invalid ÷ (invalid + wrong valid) per dataset, overall as the unweighted mean over
    datasets, and the pooled share over every sample as a labelled extra (lower is better)."""
    names = _datasets(results)
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge}
        row.update({d: _figure(t.datasets.get(d), "invalid_share") for d in names})
        row[MEAN_ROW] = t.average_figure("invalid_share")
        row["pooled (all samples)"] = t.pooled.figure("invalid_share")
        rows.append(row)
    return Table(
        "Table 4 · Invalid-response share (lower is better)",
        ["judge", *names, MEAN_ROW, "pooled (all samples)"],
        rows,
    )


def tertiles(results: dict[str, MetaTables]) -> Table:
    """Table 5: correctness per decomposable dataset and rank-gap tertile, and the mean per tertile."""
    names = sorted({d for t in results.values() for d in t.tertiles}, key=lambda d: (d != "pico", d))
    columns = ["judge", *(f"{d} {x}" for d in names for x in TERTILES), *(f"mean {x}" for x in TERTILES)]
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge}
        for d in names:
            for x in TERTILES:
                row[f"{d} {x}"] = _figure(t.tertiles.get(d, {}).get(x), "majority")
        row.update({f"mean {x}": t.tertile_figure(x) for x in TERTILES})
        rows.append(row)
    return Table("Table 5 · Correctness by rank-gap tertile (Hard = smallest gaps)", columns, rows)


def position(results: dict[str, MetaTables]) -> Table:
    """Position-consistent accuracy and flip rate per dataset, and their means over datasets."""
    rows = []
    for judge, t in results.items():
        for name, s in t.datasets.items():
            rows.append(
                {
                    "judge": judge,
                    "dataset": name,
                    "consistent": s.figure("consistent"),
                    "flip rate": s.figure("flip_rate"),
                }
            )
        rows.append(
            {
                "judge": judge,
                "dataset": MEAN_ROW,
                "consistent": t.average_figure("consistent"),
                "flip rate": t.average_figure("flip_rate"),
            }
        )
    return Table(
        "Position consistency (both orders correct) and flip rate",
        ["judge", "dataset", "consistent", "flip rate"],
        rows,
    )


def _coverage_row(judge: str, dataset: str, tertile: str, c: Coverage) -> Row:
    return {"judge": judge, "dataset": dataset, "tertile": tertile} | {
        column: getattr(c, name) for column, name in COVERAGE_COLUMNS.items()
    }


def coverage(results: dict[str, MetaTables]) -> Table:
    """Games (pair × order) and samples asked, answered, invalid and missing per dataset and tertile."""
    rows = []
    for judge, t in results.items():
        for name, s in t.datasets.items():
            rows.append(_coverage_row(judge, name, "all", s.coverage))
            for x, part in t.tertiles.get(name, {}).items():
                rows.append(_coverage_row(judge, name, x, part.coverage))
    return Table(
        "Games and samples asked, answered, invalid and missing (failed calls, or not yet answered)",
        ["judge", "dataset", "tertile", *COVERAGE_COLUMNS],
        rows,
    )


def all_tables(results: dict[str, MetaTables]) -> list[Table]:
    return [
        coverage(results),
        correctness(results),
        variance(results),
        invalid(results),
        tertiles(results),
        position(results),
    ]


def missing_line(results: dict[str, MetaTables]) -> str | None:
    """The report's first line when samples are missing: how many, why, and what the figures are over."""
    asked = sum(t.coverage.samples_asked for t in results.values())
    missing = sum(t.coverage.samples_missing for t in results.values())
    if not missing:
        return None
    failed = sum(t.coverage.failed_calls for t in results.values())
    where = [judge for judge, t in results.items() if t.coverage.samples_missing]
    return (
        f"{missing} of {asked} samples missing ({failed} failed calls, {missing - failed} not yet answered; "
        f"{', '.join(where)}): figures are over the answered ones only"
    )


def figure_lines(figure: Figure) -> tuple[str, str, str]:
    """(value, interval, count) of a figure as shown: "n too small" instead of a value under MIN_N."""
    count = f"{figure.n} {figure.unit}"
    if figure.value is None:
        return "–", "", count
    if figure.small:
        return SMALL, "", count
    interval = "" if figure.low is None or figure.high is None else f"{figure.low:.2f}–{figure.high:.2f}"
    return f"{figure.value:.3f}", interval, count


def cell(value: Any) -> str:
    """A cell as text: a figure on three lines (value, interval, count), a float to 3 decimals."""
    if value is None:
        return "–"
    if isinstance(value, Figure):
        return "\n".join(line for line in figure_lines(value) if line)
    return f"{value:.3f}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class OutcomeRow:
    """One bar of the paper's Figures 1–2: a judge's samples in one cell, correct / wrong / invalid."""

    judge: str
    cell: str  # a dataset, or "dataset tertile"
    correct: int
    wrong: int
    invalid: int
    games: int
    small: bool

    @property
    def samples(self) -> int:
        return self.correct + self.wrong + self.invalid


def _outcome(judge: str, cell: str, s: Summary) -> OutcomeRow:
    small = s.figure("majority").small
    return OutcomeRow(judge, cell, s.correct, s.wrong, s.invalid, s.games, small)


def outcomes_by_dataset(results: dict[str, MetaTables]) -> list[OutcomeRow]:
    """Figure 1: per judge and dataset."""
    return [_outcome(j, d, s) for j, t in results.items() for d, s in t.datasets.items()]


def outcomes_by_tertile(results: dict[str, MetaTables]) -> list[OutcomeRow]:
    """Figure 2: per judge, decomposable dataset and rank-gap tertile."""
    return [
        _outcome(j, f"{d} {x}", s)
        for j, t in results.items()
        for d, parts in t.tertiles.items()
        for x, s in parts.items()
    ]


@dataclass(frozen=True)
class JudgesSection:
    """What the HTML report shows of the stored judge runs (it only renders this)."""

    policy: str
    missing: str | None
    tables: list[Table]
    by_dataset: list[OutcomeRow]
    by_tertile: list[OutcomeRow]


def section(results: dict[str, MetaTables], policy: str) -> JudgesSection:
    return JudgesSection(
        policy,
        missing_line(results),
        all_tables(results),
        outcomes_by_dataset(results),
        outcomes_by_tertile(results),
    )
