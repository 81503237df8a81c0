"""Rows of the meta-evaluation tables, shaped like the paper's Tables 2–5 (plus position bias), one
row per judge configuration (`judge · mode`). Numbers come from `meta.py`; None = undefined."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from livemed.judges.meta import MetaTables

Row = dict[str, Any]
TERTILES = ("hard", "medium", "easy")


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


def correctness(results: dict[str, MetaTables]) -> Table:
    """Table 2: majority-vote correctness by family, dataset and the unweighted average."""
    names = _datasets(results)
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge, "decomposable": t.family("decomposable", "majority")}
        row["atomic"] = t.family("atomic", "majority")
        row.update({d: t.datasets[d].majority if d in t.datasets else None for d in names})
        row["average"] = t.average("majority")
        rows.append(row)
    return Table(
        "Pairwise correctness (majority vote; higher is better)",
        ["judge", "decomposable", "atomic", *names, "average"],
        rows,
    )


def _per_dataset(results: dict[str, MetaTables], title: str, metric: str, total: str) -> Table:
    names = _datasets(results)
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge}
        row.update({d: getattr(t.datasets[d], metric) if d in t.datasets else None for d in names})
        row[total] = t.verdict_variance() if metric == "variance" else t.invalid_share()
        rows.append(row)
    return Table(title, ["judge", *names, total], rows)


def variance(results: dict[str, MetaTables]) -> Table:
    """Table 3: |any − all| per dataset and its mean over datasets (lower is better)."""
    return _per_dataset(results, "Verdict variance |any − all| (lower is better)", "variance", "mean")


def invalid(results: dict[str, MetaTables]) -> Table:
    """Table 4: invalid ÷ (invalid + wrong valid) per dataset and over all samples (lower is better)."""
    return _per_dataset(results, "Invalid-response share (lower is better)", "invalid_share", "all")


def tertiles(results: dict[str, MetaTables]) -> Table:
    """Table 5: correctness per decomposable dataset and rank-gap tertile, and the mean per tertile."""
    names = sorted({d for t in results.values() for d in t.tertiles}, key=lambda d: (d != "pico", d))
    columns = ["judge", *(f"{d} {x}" for d in names for x in TERTILES), *(f"mean {x}" for x in TERTILES)]
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge}
        for d in names:
            for x in TERTILES:
                part = t.tertiles.get(d, {}).get(x)
                row[f"{d} {x}"] = part.majority if part else None
        row.update({f"mean {x}": t.tertile_mean(x) for x in TERTILES})
        rows.append(row)
    return Table("Correctness by rank-gap tertile (Hard = smallest gaps)", columns, rows)


def position(results: dict[str, MetaTables]) -> Table:
    """Position-consistent accuracy and flip rate per dataset (pairwise runs)."""
    names = _datasets(results)
    means = ["mean consistent", "mean flip"]  # over datasets, named like the tertile table's means
    columns = ["judge", *(f"{d} {m}" for d in names for m in ("consistent", "flip")), *means]
    rows = []
    for judge, t in results.items():
        row: Row = {"judge": judge}
        for d in names:
            s = t.datasets.get(d)
            row[f"{d} consistent"] = s.consistent if s else None
            row[f"{d} flip"] = s.flip_rate if s else None
        row["mean consistent"], row["mean flip"] = t.average("consistent"), t.average("flip_rate")
        rows.append(row)
    return Table("Position consistency (both orders correct) and flip rate", columns, rows)


def all_tables(results: dict[str, MetaTables]) -> list[Table]:
    return [correctness(results), variance(results), invalid(results), tertiles(results), position(results)]


def cell(value: Any) -> str:
    if value is None:
        return "–"
    return f"{value:.3f}" if isinstance(value, float) else str(value)
