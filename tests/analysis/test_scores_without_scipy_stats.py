"""`scores` and `leaderboard` do not import `scipy.stats` (~1 CPU s, half of `scores` over 6,000
grades), and the length and score-distribution checks they print are still scipy's numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import stats as sp

from livemed.records import Answer, Case, Criterion, Grade, Rubric, Score
from livemed.store import Store
from tests.builders import make_case

JUDGE = "fake/judge"
MODULES = "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)"


def _program(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import sys\nfrom livemed.cli import main\ntry:\n"
        f"    main({list(args)!r})\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        f"{MODULES}\nsys.exit(code)"
    )
    env = {**os.environ, "COLUMNS": "160", "LIVEMED_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=store.parent, check=False
    )


def _graded_store(path: Path) -> None:
    """30 answers of varied length, graded on a 4-criterion rubric so their scores vary (with ties)."""
    rng = np.random.default_rng(3)
    criteria = [
        Criterion(text=f"Advises step {i}", polarity="positive", axis="accuracy", weight=w)
        for i, w in enumerate((5, 3, 2))
    ] + [Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-4)]
    records: list[Case | Rubric | Answer | Grade] = []
    for i in range(30):
        case = make_case(f"demo:{i}")
        answer = Answer(case_id=case.id, model="fake/candidate", text=" ".join(["word"] * (5 + 3 * i % 17)))
        records += [case, Rubric(case_id=case.id, criteria=criteria, themes=["safety"]), answer]
        for c in criteria:
            met = bool(rng.random() < (0.8 if c.weight > 0 else 0.2))
            records.append(
                Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge=JUDGE, met=met)
            )
    with Store(path) as store:
        store.put(records)


def test_scores_and_leaderboard_do_not_import_scipy_stats(tmp_path: Path) -> None:
    store = tmp_path / "livemed.db"
    _graded_store(store)
    done = _program(store, "scores", "--judge", JUDGE, "--json", str(tmp_path / "scores.json"))
    assert done.returncode == 0, done.stderr
    modules = set(next(x for x in done.stderr.splitlines() if x.startswith("MODULES ")).split()[1:])
    assert "scipy.stats" not in modules
    assert "livemed.analysis.bimodality" in modules  # the checks did run
    payload = json.loads((tmp_path / "scores.json").read_text(encoding="utf-8"))
    with Store(store) as opened:
        scores = {s.answer_id: s.score for s in opened.iter(Score)}
        answers = {a.id: len(a.text.split()) for a in opened.iter(Answer)}
    assert len(scores) == 30
    ids = sorted(scores)
    x = np.array([answers[i] for i in ids], dtype=float)
    y = np.array([scores[i] for i in ids])
    expected = sp.spearmanr(x, y)
    (length,) = payload["length"]
    assert length["rho"] == float(expected.statistic)
    assert length["p_value"] == float(expected.pvalue)
    (distribution,) = payload["score_distribution"]
    n = y.size
    g, k = float(sp.skew(y, bias=False)), float(sp.kurtosis(y, bias=False))
    assert distribution["coefficient"] == (g * g + 1) / (k + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    done = _program(store, "leaderboard", "--judge", JUDGE)
    assert done.returncode == 0, done.stderr
    modules = set(next(x for x in done.stderr.splitlines() if x.startswith("MODULES ")).split()[1:])
    assert "scipy.stats" not in modules
