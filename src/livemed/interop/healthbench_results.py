"""HealthBench results in openai/simple-evals' own JSON layout, from livemed `Score` records.

simple-evals (`simple_evals.py` with `healthbench_eval.py`) writes, per eval and model, the metrics of
its `EvalResult` plus `score`, keys sorted: for every name — `overall_score`, `score` and each example
or rubric tag — the mean clipped to [0, 1] under the name itself, `<name>:n_samples` and
`<name>:bootstrap_std` (the standard deviation of the clipped mean over 1,000 bootstrap resamples).
Each answer is one sample (several samples per case count like simple-evals' repeats). The values come
from HealthBench-convention scores (`Score.score` is the unclipped case score there, `Score.per_tag`
simple-evals' tag scores); livemed's bootstrap is seeded, simple-evals' is not, so the stds agree in
distribution, not digit for digit.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from livemed.records import Score


def simple_evals_metrics(scores: Sequence[Score], *, seed: int = 0) -> dict[str, float | int]:
    """The metrics dict simple-evals writes for one model's HealthBench run (keys sorted)."""
    from livemed.grading import score as S

    if any(s.convention != "healthbench" for s in scores):
        raise ValueError("simple-evals metrics need HealthBench-convention scores")
    values: dict[str, list[float]] = defaultdict(list)
    for record in scores:
        values["overall_score"].append(record.score)
        for tag, value in record.per_tag.items():
            values[tag].append(value)
        values["score"].append(record.score)
    metrics: dict[str, float | int] = {}
    for name, found in values.items():
        metrics[name] = S.aggregate(found, "healthbench")
        metrics[f"{name}:n_samples"] = len(found)
        std = S.bootstrap(found, "healthbench", seed=seed)[2] if len(found) > 1 else 0.0
        metrics[f"{name}:bootstrap_std"] = std
    return dict(sorted(metrics.items()))


def results_path(path: Path, model: str, several: bool) -> Path:
    """Where one model's results go: `path` itself, or `<stem>_<model>.json` beside it for several."""
    if not several:
        return path
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model).strip("_")
    return path.with_name(f"{path.stem}_{safe}{path.suffix or '.json'}")
