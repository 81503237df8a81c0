"""Scores corrected by reviewers' labels: the estimator against ppi-python, exact unbiasedness over
every possible stratified sample of a tiny store, coverage on simulated data, and the store's rules."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np
import pytest
from ppi_py import ppi_mean_ci, ppi_mean_pointestimate

from livemed.errors import UserError
from livemed.records import Answer, AuditSample, Criterion, Grade, Label, Rubric
from livemed.records.review import AuditItem, Stratum, stratum_key
from livemed.review.sample import draw_sample
from livemed.score.corrected import CorrectedScore, corrected_scores, has_audit_labels
from livemed.score.stage import score_all
from livemed.score.stratified import Cell, estimate_total
from livemed.store import Store
from tests.builders import make_case, make_rubric

JUDGE = "offline/lexical"


# ----------------------------------------------------------------------------- the estimator alone
def _one_cell(rng: np.random.Generator, n: int, big_n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels y and predictions x of n items drawn with replacement, and the N predictions."""
    pred = rng.random(big_n) < 0.6
    truth = np.where(rng.random(big_n) < 0.85, pred, ~pred).astype(float)
    drawn = rng.integers(0, big_n, n)
    return truth[drawn], pred[drawn].astype(float), pred.astype(float)


@pytest.mark.parametrize("lam", [1.0, 0.0])
def test_one_cell_without_fpc_is_ppi_pythons_mean_and_interval(lam: float) -> None:
    """ppi-python estimates a mean from n labels and N predictions drawn with replacement: our total
    over weights 1/N is the same number; its variance is ppi's rectifier term (ppi's std has ddof 0,
    ours 1), ppi adding the predictions' own sampling variance, which a known population does not have."""
    y, x, population = _one_cell(np.random.default_rng(5), n=80, big_n=2000)
    big_n = len(population)
    cell = Cell(
        population=big_n, known=float(population.sum()) / big_n, y=tuple(y / big_n), x=tuple(x / big_n),
        members=big_n,
    )  # fmt: skip
    ours = estimate_total([cell], lam=lam, fpc=False, confidence=0.9)
    assert ours is not None
    assert ours.se is not None
    assert ours.value == pytest.approx(float(ppi_mean_pointestimate(y, x, population, lam=lam)[0]))
    low, high = ppi_mean_ci(y, x, population, alpha=0.1, lam=lam)
    assert (float(low[0]) + float(high[0])) / 2 == pytest.approx(ours.value)
    ppi_se = (float(high[0]) - float(low[0])) / 2 / 1.6448536269514722
    imputed = (lam * population).var() / big_n  # ppi's first term
    n = len(y)
    assert ppi_se**2 - imputed == pytest.approx(ours.se**2 * (n - 1) / n, rel=1e-9)


def test_fpc_shrinks_the_variance_and_a_census_has_none() -> None:
    y, x, population = _one_cell(np.random.default_rng(2), n=50, big_n=100)
    cell = Cell(100, float(population.sum()), tuple(y), tuple(x), members=100)
    with_fpc, without = estimate_total([cell]), estimate_total([cell], fpc=False)
    assert with_fpc is not None
    assert without is not None
    assert with_fpc.se is not None
    assert without.se is not None
    assert with_fpc.se == pytest.approx(without.se * math.sqrt(1 - 50 / 100))
    census = estimate_total([Cell(3, 2.0, (1.0, 0.0, 1.0), (1.0, 0.0, 1.0), members=3)])
    assert census is not None
    assert (census.value, census.se) == (2.0, 0.0)


def test_a_cell_of_the_domain_without_labels_leaves_it_unestimated_and_one_label_no_interval() -> None:
    assert estimate_total([Cell(10, 3.0, (), (), members=4)]) is None
    assert estimate_total([Cell(10, 3.0, (), (), members=0)]) is not None  # not the domain's cell
    single = estimate_total([Cell(10, 3.0, (1.0,), (1.0,), members=4)])
    assert single is not None
    assert single.value == 3.0
    assert single.ci_low is None


def _simulated_cells(rng: np.random.Generator) -> tuple[list[Cell], list[Cell], float]:
    """Four cells of different sizes, predictions right 70-95% of the time: the cells for one draw
    of 25 labels each (λ = 1 and λ = 0 use the same cells) and the true total."""
    cells, truth = [], 0.0
    for big_n, f, right in ((400, 1.0, 0.9), (900, 0.0, 0.95), (150, 1.0, 0.7), (60, 0.0, 0.8)):
        weights = rng.uniform(0.0, 2.0, big_n) / 1000
        h = np.where(rng.random(big_n) < right, f, 1.0 - f)
        truth += float((weights * h).sum())
        drawn = rng.choice(big_n, 25, replace=False)
        y, x = weights[drawn] * h[drawn], weights[drawn] * f
        cells.append(Cell(big_n, float((weights * f).sum()), tuple(y), tuple(x), members=big_n))
    return cells, cells, truth


def test_intervals_cover_the_true_total_on_simulated_data() -> None:
    """400 seeded draws: the 95% intervals hold the truth in at least 92% of them (0.95 expected), and
    the corrected interval is narrower than the labels-only one on average."""
    rng = np.random.default_rng(20261207)
    covered, widths = 0, []
    for _ in range(400):
        cells, _, truth = _simulated_cells(rng)
        ours, labels_only = estimate_total(cells), estimate_total(cells, lam=0.0)
        assert ours is not None
        assert labels_only is not None
        assert ours.ci_low is not None
        assert ours.ci_high is not None
        assert labels_only.ci_low is not None
        assert labels_only.ci_high is not None
        covered += ours.ci_low <= truth <= ours.ci_high
        widths.append((ours.ci_high - ours.ci_low, labels_only.ci_high - labels_only.ci_low))
    assert covered / 400 >= 0.92
    assert np.mean([a for a, _ in widths]) < np.mean([b for _, b in widths])


# ----------------------------------------------------------------------------- on a store
def _criteria() -> list[Criterion]:
    return [
        Criterion(text="Names the drug", polarity="positive", axis="accuracy", weight=5),
        Criterion(text="Gives the dose", polarity="positive", axis="accuracy", weight=2),
        Criterion(text="Says when to seek care", polarity="positive", axis="safety", weight=3),
        Criterion(text="Recommends ibuprofen", polarity="negative", axis="safety", weight=-4),
    ]


def _tiny(store: Store) -> tuple[Rubric, list[Answer], dict[str, float]]:
    """One case, three answers of two models, every criterion graded; and the reviewers' truth per
    grade id (which every grade gets as labels, one of them from two reviewers who disagree). The
    grader says m/b's answer recommends ibuprofen and nothing else: its raw score is negative."""
    case = make_case("demo:tiny")
    rubric = make_rubric(case, _criteria())
    answers = [
        Answer(case_id=case.id, model=model, sample=k, text=f"answer {k}")
        for k, model in enumerate(("m/a", "m/a", "m/b"))
    ]
    verdicts = [(True, False, True, False), (True, True, False, True), (False, False, False, True)]
    truths = [(True, True, True, False), (True, True, False, False), (False, False, True, True)]
    grades, labels, truth = [], [], {}
    for answer, said, real in zip(answers, verdicts, truths, strict=True):
        for criterion, met, right in zip(rubric.criteria, said, real, strict=True):
            grade = Grade(
                answer_id=answer.id, case_id=case.id, criterion_id=criterion.id, judge=JUDGE, met=met
            )
            grades.append(grade)
            labels.append(_label(grade.id, right, "ann"))
            truth[grade.id] = float(right)
    doubled = grades[1].id  # two reviewers disagree: the truth is their mean
    labels.append(_label(doubled, not truths[0][1], "bob"))
    truth[doubled] = 0.5
    store.put([case, rubric, *answers, *grades, *labels])
    return rubric, answers, truth


def _label(grade_id: str, met: bool, reviewer: str) -> Label:
    return Label(reviewer=reviewer, queue="audit", item_id=grade_id, verdict="met" if met else "not met")


def _true_means(rubric: Rubric, answers: list[Answer], truth: dict[str, float]) -> dict[str, float]:
    positive = sum(c.value for c in rubric.criteria if c.value > 0)
    per: dict[str, list[float]] = {}
    for answer in answers:
        score = sum(c.value * truth[f"grade:{answer.id}:{c.id}:{JUDGE}"] for c in rubric.criteria) / positive
        per.setdefault(answer.model, []).append(score)
    return {model: sum(s) / len(s) for model, s in per.items()}


def _samples(store: Store, sizes: dict[str, int]) -> Iterator[AuditSample]:
    """Every stratified sample with `sizes[cell]` items of each cell of the store's grades."""
    cells: dict[str, list[AuditItem]] = {}
    rubric = next(iter(store.iter(Rubric)))
    axis = {c.id: c.axis for c in rubric.criteria}
    for grade in store.iter(Grade):
        key = stratum_key(axis[grade.criterion_id], grade.met)
        answer = store.get(Answer, grade.answer_id)
        assert answer is not None
        item = AuditItem(
            grade_id=grade.id, answer_id=grade.answer_id, case_id=grade.case_id,
            criterion_id=grade.criterion_id, model=answer.model, stratum=key,
        )  # fmt: skip
        cells.setdefault(key, []).append(item)
    keys = sorted(cells)
    strata = [
        Stratum(axis=k.split(":")[0], met=k.endswith(":met"), population=len(cells[k]), drawn=sizes[k])
        for k in keys
    ]
    for chosen in itertools.product(*(itertools.combinations(cells[k], sizes[k]) for k in keys)):
        items = [item for group in chosen for item in group]
        yield AuditSample(judge=JUDGE, seed=0, strata=strata, items=items, double_share=0.0)


def test_the_corrected_score_is_exactly_unbiased_over_every_possible_sample(sqlite_store: Store) -> None:
    """The average of the corrected (and of the labels-only) estimate over all stratified samples of
    two items per cell is the mean score under the reviewers' verdicts, to rounding."""
    rubric, answers, truth = _tiny(sqlite_store)
    expected = _true_means(rubric, answers, truth)
    cells = {s.key: s.population for s in draw_sample(sqlite_store, JUDGE, 100).strata}
    assert len(cells) == 4
    sizes = {key: min(2, n) for key, n in cells.items()}
    found: dict[str, list[CorrectedScore]] = {}
    for sample in _samples(sqlite_store, sizes):
        sqlite_store.put([sample])
        for row in corrected_scores(sqlite_store, JUDGE, min_labels=1).scores:
            found.setdefault(row.model, []).append(row)
    runs = math.prod(math.comb(cells[k], sizes[k]) for k in cells)
    assert {model: len(rows) for model, rows in found.items()} == {"m/a": runs, "m/b": runs}
    for model, rows in found.items():
        assert all(row.corrected is not None and row.classical is not None for row in rows)
        assert np.mean([row.corrected for row in rows]) == pytest.approx(expected[model], abs=1e-12)
        assert np.mean([row.classical for row in rows]) == pytest.approx(expected[model], abs=1e-12)
        assert len({round(row.corrected or 0.0, 12) for row in rows}) > 1  # the samples do differ


def test_raw_is_the_unclipped_mean_score_and_a_census_gives_the_truth(any_store: Store) -> None:
    rubric, answers, truth = _tiny(any_store)
    sample = draw_sample(any_store, JUDGE, 100)  # every verdict: each cell labelled whole
    any_store.put([sample])
    result = corrected_scores(any_store, JUDGE)
    unclipped = score_all(any_store, JUDGE, convention="healthbench").scores
    for row in result.scores:
        mine = [s.score for s in unclipped if s.model == row.model]
        assert row.raw == pytest.approx(sum(mine) / len(mine))
        assert row.corrected == pytest.approx(_true_means(rubric, answers, truth)[row.model])
        assert row.ci_low == pytest.approx(row.corrected)
        assert row.ci_high == pytest.approx(row.corrected)
        assert row.labels == 4 * row.answers
        assert row.too_few == "4 label(s), fewer than 30" or row.too_few == "8 label(s), fewer than 30"
    assert result.labelled == 12
    assert {r.axis for r in result.by_axis} == {"accuracy", "safety"}
    assert result.clipped == {"m/b": 1}  # its raw score is -0.4: the livemed convention would clip it


def test_without_a_sample_the_error_names_the_command_and_labels_are_needed(any_store: Store) -> None:
    _tiny(any_store)
    with pytest.raises(UserError, match=r"`livemed review sample --judge offline/lexical --size 300`"):
        corrected_scores(any_store, JUDGE)
    assert not has_audit_labels(any_store, JUDGE)
    any_store.put([draw_sample(any_store, JUDGE, 6)])
    assert has_audit_labels(any_store, JUDGE)


def test_unsure_labels_are_not_labels_and_a_cell_without_labels_gives_no_number(any_store: Store) -> None:
    _tiny(any_store)
    any_store.delete(Label.kind, sorted(any_store.ids(Label.kind)))
    sample = draw_sample(any_store, JUDGE, 8)
    any_store.put([sample])
    first, *rest = sample.items
    any_store.put([Label(reviewer="ann", queue="audit", item_id=first.grade_id, verdict="unsure")])
    any_store.put([_label(item.grade_id, True, "ann") for item in rest])
    result = corrected_scores(any_store, JUDGE)
    assert result.labelled == len(rest)
    unlabelled = next(s for s in sample.strata if s.key == first.stratum)
    if unlabelled.drawn == 1:  # its cell has no label now: the models with verdicts there get no number
        touched = [r for r in result.scores if r.corrected is None]
        assert touched
        assert all(r.too_few == "a stratum holding its verdicts has no label" for r in touched)
    assert all(r.too_few for r in result.scores)  # 7 labels: too few everywhere


def test_a_verdict_written_after_the_draw_makes_the_sample_stale(any_store: Store) -> None:
    _tiny(any_store)
    any_store.put([draw_sample(any_store, JUDGE, 8)])
    grade = next(iter(any_store.iter(Grade)))
    any_store.put([grade.model_copy(update={"explanation": "graded again"})])
    with pytest.raises(UserError, match=r"1 verdict\(s\) .* written after its audit sample was drawn"):
        corrected_scores(any_store, JUDGE)
    any_store.put([grade.model_copy(update={"met": not grade.met})])  # and its cell is bigger now
    with pytest.raises(
        UserError, match=r"holds \d+ verdicts of .* and the store \d+: draw it again with `liv"
    ):
        corrected_scores(any_store, JUDGE)
