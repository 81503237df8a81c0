"""Training regimes side by side: the meta-evaluation tables of each regime's judge run, relabelled by
regime, and a gains table (each regime against the base) next to the paper's figures.

Pure functions over `livemed.judges.meta.MetaTables` (what `livemed judges report` computes from the
stored verdicts); `livemed judges regimes` prints them.
"""

from __future__ import annotations

from collections.abc import Sequence

from livemed.judges.meta import MetaTables
from livemed.judges.tables import TERTILES, Row, Table

GAIN_COLUMNS = [
    "judge",
    "decomposable",
    "atomic",
    "average",
    "Δ decomposable",
    "Δ atomic",
    "Δ average",
    *TERTILES,
]
# The second paper's figures for Llama-3.1-8B-Instruct (its own pairs, 5 datasets; §3 and §6).
PAPER_ROWS: list[Row] = [
    {"judge": "paper: base 8B", "decomposable": 0.75},
    {
        "judge": "paper: SFT→RL 8B",
        "decomposable": 0.84,
        "average": 0.81,
        "Δ decomposable": 0.09,
        "Δ atomic": 0.02,
        "hard": 0.69,
        "medium": 0.83,
        "easy": 0.90,
    },
]
PAPER_NOTE = "paper: RL straight from the base model is harmful, −0.06 against the base (§3)"


def parse_regimes(specs: Sequence[str]) -> list[tuple[str, str]]:
    """`LABEL=JUDGE` options (e.g. `sft=hf/runs/sft/sft`) as (label, judge), labels unique."""
    out: list[tuple[str, str]] = []
    for spec in specs:
        label, sep, judge = spec.partition("=")
        if not sep or not label.strip() or not judge.strip():
            raise ValueError(f"--regime takes LABEL=JUDGE (e.g. base=hf/./base), got {spec!r}")
        out.append((label.strip(), judge.strip()))
    labels = [label for label, _ in out]
    if len(set(labels)) != len(labels):
        raise ValueError("each --regime label may be given once")
    return out


def by_regime(
    results: dict[str, MetaTables], regimes: Sequence[tuple[str, str]], mode: str
) -> tuple[dict[str, MetaTables], list[str]]:
    """(tables keyed `label (judge)`, in the order given; judges with no stored run). A judge run in
    several configurations (`judges.run.run_labels`: `judge · mode · temperature 1.0`, …) gives one
    row per configuration, named by what tells them apart."""
    chosen: dict[str, MetaTables] = {}
    missing: list[str] = []
    for label, judge in regimes:
        base = f"{judge} · {mode}"
        runs = [key for key in results if key == base or key.startswith(f"{base} · ")]
        if not runs:
            missing.append(judge)
        for key in runs:
            chosen[f"{label} ({judge}{key.removeprefix(base)})"] = results[key]
    return chosen, missing


def _delta(value: float | None, base: float | None) -> float | None:
    return None if value is None or base is None else value - base


def gains(chosen: dict[str, MetaTables], base: str | None) -> Table:
    """Each regime's family and average correctness, its change against `base` (a key of `chosen`) and
    its tertile means; then the paper's rows (variance and invalid share are in `judges report`'s tables)."""
    reference = chosen.get(base) if base is not None else None
    rows: list[Row] = []
    for key, t in chosen.items():
        row: Row = {"judge": key}
        row["decomposable"] = t.family("decomposable", "majority")
        row["atomic"] = t.family("atomic", "majority")
        row["average"] = t.average("majority")
        if reference is not None and key != base:
            row["Δ decomposable"] = _delta(row["decomposable"], reference.family("decomposable", "majority"))
            row["Δ atomic"] = _delta(row["atomic"], reference.family("atomic", "majority"))
            row["Δ average"] = _delta(row["average"], reference.average("majority"))
        row.update({x: t.tertile_mean(x) for x in TERTILES})
        rows.append(row)
    return Table(
        "Regimes against the base (majority-vote correctness; Δ = regime − base)",
        GAIN_COLUMNS,
        rows + PAPER_ROWS,
    )
