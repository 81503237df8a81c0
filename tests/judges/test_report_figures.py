"""Every figure of `judges report` carries its n and 95% interval and equals an independent
recomputation on scripted judges; missing samples are said on the first line; Table 4's overall is the
unweighted mean over datasets."""

from __future__ import annotations

import json
import math
import zlib
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from livemed.judges.figures import RESAMPLES, SMALL
from livemed.judges.meta import evaluate
from livemed.judges.tables import MEAN_ROW, invalid, variance
from livemed.records import JudgeVerdict, Pair, Rejection
from livemed.store import Store
from tests.judges.scripted import JUDGES, FakePair, non_compliant, pairs, right, verdicts
from tests.judges.test_cli import run

Z = 1.959963984540054


def wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def item(v: JudgeVerdict) -> str:
    return f"{v.dataset}:{v.pair_id.split(':')[2]}"


def game_scores(chosen: list[JudgeVerdict]) -> dict[tuple[str, str], tuple[str, list[str | None], str]]:
    out: dict[tuple[str, str], tuple[str, list[str | None], str]] = {}
    for v in chosen:
        key = (v.pair_id, v.order)
        out.setdefault(key, (item(v), [], v.gold))[1].append(v.verdict)
    return out


def majority(votes: list[str | None], gold: str) -> float:
    right_, wrong = sum(x == gold for x in votes), sum(x not in (gold, None) for x in votes)
    return 1.0 if right_ > wrong else 0.0


def bootstrap(units: list[tuple[str, float]], key: str) -> tuple[float, float]:
    """The interval recomputed by plain loops: items drawn with replacement, their units' mean."""
    by_item: dict[str, list[float]] = defaultdict(list)
    for name, value in units:
        by_item[name].append(value)
    names = sorted(by_item)
    rng = np.random.default_rng([0, zlib.crc32(key.encode())])
    picks = rng.integers(0, len(names), size=(RESAMPLES, len(names)))
    draws = []
    for row in picks:
        total = count = 0.0
        for i in row:
            total += sum(by_item[names[i]])
            count += len(by_item[names[i]])
        draws.append(total / count)
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def scripted_run(judge: str, k: int = 3) -> list[JudgeVerdict]:
    chosen = pairs("pico", 20, 6, seed=1) + pairs("medqa", 40, 3, seed=2)
    return verdicts(judge, chosen, k, JUDGES[judge])


@pytest.mark.parametrize("judge", sorted(JUDGES))
def test_every_dataset_figure_equals_a_recomputation(judge: str) -> None:
    run_ = scripted_run(judge)
    tables = evaluate(run_)
    for dataset in ("pico", "medqa"):
        own = [v for v in run_ if v.dataset == dataset]
        scores = [(name, majority(votes, gold)) for name, votes, gold in game_scores(own).values()]
        figure = tables.datasets[dataset].figure("majority")
        assert figure.n == len(scores)
        assert figure.unit == "games"
        assert figure.items == len({name for name, _ in scores})
        assert figure.value == pytest.approx(sum(s for _, s in scores) / len(scores))
        assert figure.method == "bootstrap over items"  # both orders of a pair: games cluster
        assert (figure.low, figure.high) == pytest.approx(bootstrap(scores, f"{dataset}|majority"))
        assert figure.low <= figure.value <= figure.high  # type: ignore[operator]
        errors = [(item(v), 1.0 if v.verdict is None else 0.0) for v in own if v.verdict != v.gold]
        share = tables.datasets[dataset].figure("invalid_share")
        assert (share.n, share.unit) == (len(errors), "samples")
        if errors:
            assert share.value == pytest.approx(sum(e for _, e in errors) / len(errors))
            assert (share.low, share.high) == pytest.approx(bootstrap(errors, f"{dataset}|invalid"))


def test_a_proportion_of_unclustered_games_has_wilson_interval() -> None:
    one_each = [FakePair(f"pair:medqa:{i}:gold>x", "medqa", None, "AB"[i % 2]) for i in range(200)]
    chosen = verdicts("fake/right-0.8", one_each, 1, right(0.8), mode="pointwise")
    figure = evaluate(chosen).datasets["medqa"].figure("majority")
    k = sum(v.verdict == v.gold for v in chosen)
    assert (figure.n, figure.method, figure.value) == (200, "wilson", k / 200)
    assert (figure.low, figure.high) == pytest.approx(wilson(k, 200))
    assert figure.low < 0.8 < figure.high  # type: ignore[operator]  # the judge's true rate


def test_a_noncompliant_judge_shows_its_true_invalid_rate() -> None:
    chosen = pairs("medqa", 300, 1)
    run_ = verdicts("fake/nc", chosen, 1, non_compliant(0.1, p=0.0))  # every valid verdict wrong
    figure = evaluate(run_).datasets["medqa"].figure("invalid_share")
    assert figure.n == 600
    assert figure.low < 0.1 < figure.high  # type: ignore[operator]


def test_table3_and_table4_overall_are_unweighted_means_over_datasets() -> None:
    chosen = verdicts("fake/nc", pairs("pico", 40, 3), 2, non_compliant(0.3)) + verdicts(
        "fake/nc", pairs("medqa", 200, 3), 2, non_compliant(0.02)
    )
    tables = {"fake/nc · pairwise": evaluate(chosen)}
    t = tables["fake/nc · pairwise"]
    row = invalid(tables).rows[0]
    pico, medqa = (t.datasets[d].figure("invalid_share").value for d in ("pico", "medqa"))
    assert row[MEAN_ROW].value == pytest.approx((pico + medqa) / 2)  # type: ignore[operator]
    assert row[MEAN_ROW].parts == 2
    pooled = sum(v.verdict is None for v in chosen) / sum(v.verdict != v.gold for v in chosen)
    assert row["pooled (all samples)"].value == pytest.approx(pooled)
    assert abs(row[MEAN_ROW].value - pooled) > 0.01  # the two really differ here
    mean = next(r for r in variance(tables).rows if r["dataset"] == MEAN_ROW)
    for column, metric in (
        ("any-sample", "any_sample"),
        ("all-sample", "all_sample"),
        ("|any − all|", "variance"),
    ):
        values = [t.datasets[d].figure(metric).value for d in ("pico", "medqa")]
        assert mean[column].value == pytest.approx(sum(values) / 2)  # type: ignore[arg-type]


def _stored_pair(fake: FakePair) -> Pair:
    from livemed.records import Candidate

    dataset, item_id = fake.dataset, fake.pair_id.split(":")[2]
    family = "decomposable" if dataset in ("pico", "medcalc") else "atomic"
    good = Candidate(id="gold", text="good", answer="a", metric=1.0)
    bad = Candidate(id="m0", text="bad", answer="b", metric=0.0, rank=1)
    return Pair(dataset=dataset, family=family, item_id=item_id, question="q", instruction="i", chosen=good,
                rejected=bad, gold=fake.gold, rank_gap=1, tertile=fake.tertile, licence="test")  # fmt: skip


def test_missing_samples_are_said_on_the_first_line(tmp_path: Path) -> None:
    chosen = [FakePair(f"pair:medqa:{i}:gold>m0", "medqa", None, "AB"[i % 2]) for i in range(60)]
    every = verdicts("fake/j", chosen, 2, right(0.8))  # 60 pairs × 2 orders × 2 samples = 240
    failed = every[:10] + [v for v in every if v.pair_id == chosen[-1].pair_id]  # the last pair: no verdict
    kept = [v for v in every if v not in failed]
    store = tmp_path / "s.db"
    with Store(store) as s:
        s.put([_stored_pair(p) for p in chosen])
        s.put(kept)
        s.put(
            Rejection(
                stage="judges",
                reason="call_failed",
                detail="500",
                record_kind="judge_verdict",
                record_id=v.id,
            )
            for v in failed
        )
    out = tmp_path / "r.json"
    text = run(store, "judges", "report", "--json", str(out))
    n = len(failed)
    first = f"{n} of 240 samples missing ({n} failed calls, 0 not yet answered; fake/j · pairwise)"
    assert text.startswith(first + ": figures are over the answered ones only")
    data = json.loads(out.read_text())
    assert data["missing"].startswith(first)
    cover = data["judges"]["fake/j · pairwise"]["datasets"]["medqa"]["coverage"]
    assert cover["samples_asked"] == 240
    assert cover["samples_answered"] == len(kept)
    assert cover["games_asked"] == 120
    assert cover["games_missing"] == 2 + 5
    assert data["judges"]["fake/j · pairwise"]["datasets"]["medqa"]["majority"]["n"] == 120 - 7


def test_a_figure_under_30_is_n_too_small_never_a_number(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    chosen = pairs("pico", 3, 3)  # 9 pairs, 18 games
    with Store(store) as s:
        s.put(verdicts("fake/j", chosen, 1, right(0.8)))
    out = tmp_path / "r.json"
    text = run(store, "judges", "report", "--json", str(out))
    assert SMALL in text
    assert "18 games" in text
    figure = json.loads(out.read_text())["judges"]["fake/j · pairwise"]["datasets"]["pico"]["majority"]
    assert figure["small"] is True
    assert figure["note"] == SMALL
    assert figure["n"] == 18


def test_datasets_asked_different_numbers_of_samples_miss_nothing() -> None:
    """One configuration run with k = 3 on PubMedQA and k = 1 on MedQA: nothing is missing on either."""
    judge = "fake/right-0.8"
    found = [
        *verdicts(judge, pairs("pubmedqa", 5, 2), 3, right(0.8)),
        *verdicts(judge, pairs("medqa", 5, 2), 1, right(0.8)),
    ]
    tables = evaluate(found)
    for name, k in (("pubmedqa", 3), ("medqa", 1)):
        cover = tables.datasets[name].coverage
        assert (cover.samples_asked, cover.samples_missing) == (20 * k, 0), name
    assert tables.pooled.coverage.samples_missing == 0
