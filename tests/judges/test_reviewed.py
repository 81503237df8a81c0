"""A grader's stored verdicts against the reviewers' stored labels on its audit sample: hand-computed
figures, scikit-learn's with the design weights, the trivial graders, reviewer against reviewer, and
what is left out (on real stores: SQLite, and PostgreSQL in CI)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score, precision_score, recall_score

from livemed.errors import UserError
from livemed.judges.reviewed import load_audit, reviewed_agreement, summary
from livemed.records import AuditSample, Grade, Label
from livemed.review.sample import draw_sample
from livemed.store import Store
from tests.builders import graded_store

JUDGE = "offline/lexical"


def _label(grade_id: str, met: bool | None, reviewer: str = "ana") -> Label:
    verdict = "unsure" if met is None else "met" if met else "not met"
    return Label(reviewer=reviewer, queue="audit", item_id=grade_id, verdict=verdict)


def _ten(store: Store) -> list[Grade]:
    """Ten verdicts on one axis, the sample taking them all (every weight 1): the grader says met on
    six (the reviewer agrees on 4) and not met on four (the reviewer agrees on 3)."""
    grades = graded_store(store, [("accuracy", True)] * 6 + [("accuracy", False)] * 4)
    store.put([draw_sample(store, JUDGE, 100)])
    said = [True] * 4 + [False] * 2 + [False] * 3 + [True]
    store.put([_label(g.id, s) for g, s in zip(grades, said, strict=True)])
    return grades


def test_figures_of_a_fully_drawn_sample_are_the_hand_computed_ones(any_store: Store) -> None:
    _ten(any_store)
    data = reviewed_agreement(any_store, JUDGE)
    grader = data["grader"]
    # reviewer met & grader met 4, met & not 1, not & met 2, not & not 3
    assert grader["n"] == 10
    assert grader["labels"] == 10
    assert grader["accuracy"]["value"] == pytest.approx(0.7)
    assert grader["macro_f1"]["value"] == pytest.approx((8 / 11 + 6 / 9) / 2)
    assert grader["cohen_kappa"]["value"] == pytest.approx((0.7 - 0.5) / (1 - 0.5))
    assert grader["per_class"]["met"]["precision"]["value"] == pytest.approx(4 / 6)
    assert grader["per_class"]["met"]["recall"]["value"] == pytest.approx(4 / 5)
    assert grader["per_class"]["not met"]["recall"]["value"] == pytest.approx(3 / 5)
    for name in ("accuracy", "macro_f1", "cohen_kappa"):
        figure = grader[name]
        assert figure["low"] <= figure["value"] <= figure["high"]
        assert figure["low"] < figure["high"]  # ten items leave room
    assert data["macro_f1"] == grader["macro_f1"]["value"]  # the value a label file's run stores too
    assert set(data["axes"]) == {"accuracy"}
    assert data["reviewers"] is None


def test_the_trivial_graders_get_what_they_get_on_the_same_items(any_store: Store) -> None:
    _ten(any_store)
    trivial = reviewed_agreement(any_store, JUDGE)["grader"]["trivial"]
    assert set(trivial) == {"always met", "majority (met)"}  # 5 met, 5 not: a tie goes to met
    always = trivial["always met"]
    assert always["accuracy"]["value"] == pytest.approx(0.5)
    assert always["macro_f1"]["value"] == pytest.approx((10 / 15 + 0) / 2)
    assert always["cohen_kappa"]["value"] == 0.0


def test_a_not_met_majority_is_the_majority_grader(any_store: Store) -> None:
    grades = graded_store(any_store, [("safety", True)] * 2 + [("safety", False)] * 8)
    any_store.put([draw_sample(any_store, JUDGE, 100)])
    any_store.put([_label(g.id, i == 0) for i, g in enumerate(grades)])
    trivial = reviewed_agreement(any_store, JUDGE)["grader"]["trivial"]
    majority = trivial["majority (not met)"]
    assert majority["accuracy"]["value"] == pytest.approx(0.9)
    assert majority["macro_f1"]["value"] == pytest.approx((0 + 18 / 19) / 2)
    assert trivial["always met"]["accuracy"]["value"] == pytest.approx(0.1)


def _study(store: Store, seed: int = 4) -> tuple[AuditSample, dict[str, bool], list[Label]]:
    """300 verdicts on two axes, 60% met, a sample of 90 (small cells over-drawn), a third of it
    double; each reviewer right 80% of the time; some items unsure, some unlabelled."""
    rng = random.Random(seed)
    verdicts = [(rng.choice(["accuracy", "safety"]), rng.random() < 0.6) for _ in range(300)]
    grades = {g.id: g.met for g in graded_store(store, verdicts)}
    sample = draw_sample(store, JUDGE, 90, seed=seed, double_share=0.3)
    store.put([sample])
    labels = []
    for item in sample.items[:-5]:  # five left unlabelled
        for reviewer in ("ana", "ben") if item.double else ("ana",):
            truth = grades[item.grade_id] if rng.random() < 0.8 else not grades[item.grade_id]
            labels.append(_label(item.grade_id, None if rng.random() < 0.05 else truth, reviewer))
    store.put(labels)
    return sample, grades, labels


def _weighted_rows(
    sample: AuditSample, grades: dict[str, bool], labels: list[Label], axis: str | None = None
) -> tuple[list[bool], list[bool], list[float]]:
    """(reviewer, grader, weight) per label row for scikit-learn: N_s / n_s per item, shared by its labels."""
    cells = {i.grade_id: i.stratum for i in sample.items if axis is None or i.stratum.startswith(axis)}
    population = {s.key: s.population for s in sample.strata}
    said: dict[str, list[bool]] = {}
    for label in labels:
        if label.item_id in cells and label.verdict != "unsure":
            said.setdefault(label.item_id, []).append(label.verdict == "met")
    per_cell = Counter(cells[g] for g in said)
    truth, predicted, weights = [], [], []
    for grade_id, verdicts in said.items():
        weight = population[cells[grade_id]] / per_cell[cells[grade_id]]
        for verdict in verdicts:
            truth.append(verdict)
            predicted.append(grades[grade_id])
            weights.append(weight / len(verdicts))
    return truth, predicted, weights


@pytest.mark.parametrize("axis", [None, "accuracy", "safety"])
def test_weighted_figures_equal_scikit_learns_with_the_design_weights(
    any_store: Store, axis: str | None
) -> None:
    sample, grades, labels = _study(any_store)
    data = reviewed_agreement(any_store, JUDGE)
    got = data["grader"] if axis is None else data["axes"][axis]
    truth, predicted, weights = _weighted_rows(sample, grades, labels, axis)
    assert got["n"] == len(
        {label.item_id for label in labels if label.verdict != "unsure"}
        & {i.grade_id for i in sample.items if axis is None or i.stratum.startswith(axis)}
    )
    w = np.asarray(weights)
    assert got["accuracy"]["value"] == pytest.approx(accuracy_score(truth, predicted, sample_weight=w))
    assert got["macro_f1"]["value"] == pytest.approx(
        f1_score(truth, predicted, average="macro", sample_weight=w)
    )
    assert got["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(truth, predicted, sample_weight=w))
    met = got["per_class"]["met"]
    assert met["precision"]["value"] == pytest.approx(precision_score(truth, predicted, sample_weight=w))
    assert met["recall"]["value"] == pytest.approx(recall_score(truth, predicted, sample_weight=w))
    unweighted = accuracy_score(truth, predicted)
    assert got["accuracy"]["value"] != pytest.approx(unweighted, abs=1e-9)  # the weights matter here


def _fleiss(pairs: list[tuple[bool, bool]]) -> float:
    """Fleiss' kappa of two ratings an item, by its textbook formula."""
    met = sum(a + b for a, b in pairs) / (2 * len(pairs))
    observed = sum(1.0 if a == b else 0.0 for a, b in pairs) / len(pairs)  # P_i = (Σ n_ij² − 2) / 2
    chance = met**2 + (1 - met) ** 2
    return (observed - chance) / (1 - chance)


def test_reviewer_against_reviewer_is_fleiss_kappa_on_the_items_labelled_twice(any_store: Store) -> None:
    # every verdict drawn (weights 1) and labelled twice: then the weighted figures are the plain ones
    rng = random.Random(7)
    grades = graded_store(any_store, [("accuracy", rng.random() < 0.5) for _ in range(40)])
    any_store.put([draw_sample(any_store, JUDGE, 100, double_share=1.0)])
    pairs = [(rng.random() < 0.5, rng.random() < 0.5) for _ in grades]
    pairs = [(a, a if rng.random() < 0.6 else b) for a, b in pairs]
    any_store.put([_label(g.id, a, "ana") for g, (a, _) in zip(grades, pairs, strict=True)])
    any_store.put([_label(g.id, b, "ben") for g, (_, b) in zip(grades, pairs, strict=True)])
    reviewers = reviewed_agreement(any_store, JUDGE)["reviewers"]
    assert reviewers is not None
    assert reviewers["n"] == 40
    assert reviewers["cohen_kappa"]["value"] == pytest.approx(_fleiss(pairs))
    # = Cohen's kappa of the table counted both ways (who labelled first does not matter)
    both = [a for a, _ in pairs] + [b for _, b in pairs], [b for _, b in pairs] + [a for a, _ in pairs]
    assert reviewers["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(*both))
    assert reviewers["agreement"]["value"] == pytest.approx(sum(a == b for a, b in pairs) / 40)
    low, high = reviewers["cohen_kappa"]["low"], reviewers["cohen_kappa"]["high"]
    assert low < reviewers["cohen_kappa"]["value"] < high
    truth = [a for a, _ in pairs] + [b for _, b in pairs]
    said = [g.met for g in grades] * 2
    assert reviewers["grader"]["cohen_kappa"]["value"] == pytest.approx(cohen_kappa_score(truth, said))


def test_unsure_and_changed_items_are_left_out_and_counted(any_store: Store) -> None:
    grades = _ten(any_store)
    any_store.put([_label(grades[0].id, None), _label(grades[0].id, None, "ben")])  # only unsure now
    any_store.put([grades[1].model_copy(update={"met": False})])  # regraded since the draw
    any_store.delete(Grade.kind, [grades[2].id])
    audit = load_audit(any_store, JUDGE)
    assert (audit.unsure, audit.stale, len(audit.items)) == (1, 2, 7)
    data = reviewed_agreement(any_store, JUDGE)
    assert (data["unsure"], data["stale"], data["grader"]["n"]) == (1, 2, 7)


def test_no_sample_or_no_labels_is_one_line_naming_the_draw(any_store: Store) -> None:
    graded_store(any_store, [("accuracy", True), ("safety", False)])
    with pytest.raises(UserError, match=r"no audit sample for grader 'offline/lexical'.*review sample"):
        reviewed_agreement(any_store, JUDGE)
    sample = draw_sample(any_store, JUDGE, 2)
    any_store.put([sample, _label(sample.items[0].grade_id, None)])
    with pytest.raises(UserError, match="no met / not met labels") as raised:
        reviewed_agreement(any_store, JUDGE)
    assert "\n" not in str(raised.value)


def test_the_intervals_are_seeded_and_the_summary_names_every_comparison(any_store: Store) -> None:
    _study(any_store)
    first, again = reviewed_agreement(any_store, JUDGE), reviewed_agreement(any_store, JUDGE)
    assert first["grader"] == again["grader"]
    assert first["reviewers"] == again["reviewers"]
    line = summary(first)
    assert f"n={first['grader']['n']}" in line
    assert "always met" in line
    assert "majority (" in line
    assert "reviewer vs reviewer kappa" in line


def test_the_weights_give_each_cell_its_population_share(any_store: Store) -> None:
    # 80 met verdicts, 20 not met; the sample over-draws the small cell. The reviewers agree with every
    # met verdict and with half the drawn not-met ones: over all verdicts that is (80·1 + 20·½) / 100.
    grades = graded_store(any_store, [("accuracy", True)] * 80 + [("accuracy", False)] * 20)
    sample = draw_sample(any_store, JUDGE, 20)
    any_store.put([sample])
    met = {g.id: g.met for g in grades}
    drawn_not = [i.grade_id for i in sample.items if not met[i.grade_id]]
    disagreeing = set(drawn_not[: len(drawn_not) // 2])
    any_store.put([_label(i.grade_id, met[i.grade_id] != (i.grade_id in disagreeing)) for i in sample.items])
    data = reviewed_agreement(any_store, JUDGE)
    share_not = 1 - len(disagreeing) / len(drawn_not)
    assert data["accuracy"] == pytest.approx((80 * 1 + 20 * share_not) / 100)
    plain = 1 - len(disagreeing) / len(sample.items)
    assert data["accuracy"] != pytest.approx(plain)  # what counting over the sample would say
    said_met = (80 + 20 * (1 - share_not)) / 100  # reviewers' met share, weighted
    assert data["grader"]["trivial"]["always met"]["accuracy"]["value"] == pytest.approx(said_met)


def test_a_cell_without_labels_is_named_and_not_represented(any_store: Store) -> None:
    grades = graded_store(any_store, [("accuracy", True)] * 5 + [("safety", False)] * 5)
    any_store.put([draw_sample(any_store, JUDGE, 100)])
    any_store.put([_label(g.id, True) for g in grades[:5]])
    data = reviewed_agreement(any_store, JUDGE)
    assert data["unlabelled"] == ["safety:not met"]
    assert set(data["axes"]) == {"accuracy"}
    assert data["grader"]["n"] == 5
