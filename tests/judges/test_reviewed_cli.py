"""`livemed judges agreement --grader J` without `--labels`: the stored verdicts against the stored
labels, printed, stored for the validity card, shown on the card line of `scores` and `certify`."""

from __future__ import annotations

import json
import random
from pathlib import Path

from livemed.judges.cards import AGREEMENT_NAMESPACE
from livemed.records import Label, ValidityCard
from livemed.review.sample import draw_sample
from livemed.store import Store
from tests.builders import graded_store
from tests.judges.test_cli import answered_store, refused, run

JUDGE = "offline/lexical"


def audited(path: Path, labelled: bool = True) -> Path:
    """A store of 200 verdicts of JUDGE, its audit sample of 80 (a quarter double) and, when
    `labelled`, a reviewer's label on each item (a second on the double ones), right 85% of the time."""
    rng = random.Random(3)
    with Store(path) as store:
        grades = {
            g.id: g.met
            for g in graded_store(
                store, [(rng.choice(["accuracy", "safety"]), rng.random() < 0.5) for _ in range(200)]
            )
        }
        sample = draw_sample(store, JUDGE, 80, seed=2, double_share=0.25)
        store.put([sample])
        if labelled:
            labels = []
            for item in sample.items:
                for reviewer in ("ana", "ben") if item.double else ("ana",):
                    met = grades[item.grade_id] == (rng.random() < 0.85)
                    labels.append(
                        Label(reviewer=reviewer, queue="audit", item_id=item.grade_id, verdict=_word(met))
                    )
            store.put(labels)
    return path


def _word(met: bool) -> str:
    return "met" if met else "not met"


def test_agreement_from_the_stored_labels_prints_stores_and_writes_them(tmp_path: Path) -> None:
    store = audited(tmp_path / "s.db")
    out = tmp_path / "agreement.json"
    text = run(store, "judges", "agreement", "--grader", JUDGE, "--json", str(out))
    assert f"grader {JUDGE} vs the reviewers' labels on its audit sample: 80 of 80 items labelled" in text
    assert "weighted to the grader's verdicts" in text
    data = json.loads(out.read_text())
    grader = data["grader"]
    f1 = grader["macro_f1"]
    shown = f"{f1['value']:.2f} [{f1['low']:.2f}, {f1['high']:.2f}] n=80"  # value, interval and n
    assert "grader vs reviewers, all axes" in text
    assert shown in text
    assert "trivial: always met" in text
    assert "trivial: majority (" in text
    assert "grader vs reviewers, axis accuracy" in text
    assert "grader vs reviewers, axis safety" in text
    assert "reviewer vs reviewer, items labelled twice" in text
    assert "grader vs reviewers, the same items" in text
    assert "met: precision" in text
    assert grader["macro_f1"]["value"] > grader["trivial"]["always met"]["macro_f1"]["value"]
    with Store(store) as s:
        assert s.state_get(AGREEMENT_NAMESPACE, JUDGE) == data  # where the validity card reads it
        assert s.get(Label, next(iter(s.ids(Label.kind)))) is not None  # labels untouched


def test_the_card_line_of_scores_shows_the_reviewers_beside_each_other(tmp_path: Path) -> None:
    store = audited(tmp_path / "s.db")
    run(store, "judges", "agreement", "--grader", JUDGE)
    scores = run(store, "scores", "--judge", JUDGE)
    assert f"grader {JUDGE} is unvalidated" in scores
    assert "reviewers' labels (" in scores
    assert "vs reviewers macro-F1" in scores
    assert "reviewer vs reviewer kappa" in scores
    assert "(trivial: always met" in scores


def test_a_validity_card_holds_and_shows_the_reviewers_agreement(tmp_path: Path, shared_data: Path) -> None:
    store = answered_store(tmp_path, shared_data)
    run(store, "grade", "--judge", JUDGE)
    with Store(store) as s:
        sample = draw_sample(s, JUDGE, 1000, double_share=0.5)
        s.put([sample])
        s.put(
            Label(reviewer=who, queue="audit", item_id=item.grade_id, verdict=_word(i % 3 != 0))
            for i, item in enumerate(sample.items)
            for who in (("ana", "ben") if item.double else ("ana",))
        )
    before = run(store, "judges", "certify", "--grader", JUDGE, "--data", str(tmp_path / "none"))
    assert "vs reviewers" not in before
    run(store, "judges", "agreement", "--grader", JUDGE)
    scores = run(store, "scores", "--judge", JUDGE)  # the card made before the labels' agreement
    assert f"grader {JUDGE} validity card" in scores
    assert "vs reviewers macro-F1" in scores
    certified = run(store, "judges", "certify", "--grader", JUDGE, "--data", str(tmp_path / "none"))
    assert "vs reviewers macro-F1" in certified
    assert "reviewer vs reviewer kappa" in certified
    assert "human macro-F1" not in certified  # the label-file figure is not shown for stored labels
    with Store(store) as s:
        card = max(s.iter(ValidityCard), key=lambda c: c.provenance.created_at)
    assert card.metrics["human_agreement"]["grader"]["n"] == len(sample.items)
    assert card.metrics["human_agreement"]["reviewers"]["n"] == sum(i.double for i in sample.items)


def test_without_a_sample_or_labels_it_refuses_in_one_line(tmp_path: Path) -> None:
    bare = tmp_path / "bare.db"
    with Store(bare) as s:
        graded_store(s, [("accuracy", True), ("safety", False)])
    said = refused(bare, "judges", "agreement", "--grader", JUDGE)
    assert f"no audit sample for grader '{JUDGE}'" in said
    assert f"`livemed review sample --judge {JUDGE} --size 300`" in said
    unlabelled = audited(tmp_path / "u.db", labelled=False)
    assert "no met / not met labels on the audit sample" in refused(
        unlabelled, "judges", "agreement", "--grader", JUDGE
    )
    template = tmp_path / "grader.txt"
    template.write_text("{conversation} {response} {criterion} {points}\n")
    said = refused(unlabelled, "judges", "agreement", "--grader", JUDGE, "--grader-template", str(template))
    assert "give --labels FILE" in said
    limited = refused(unlabelled, "judges", "agreement", "--grader", JUDGE, "--limit", "5")
    assert "give --labels FILE" in limited


def test_what_the_figures_leave_out_is_printed(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with Store(store) as s:
        grades = graded_store(s, [("accuracy", True)] * 5 + [("safety", False)] * 5)
        s.put([draw_sample(s, JUDGE, 100)])
        s.put(Label(reviewer="ana", queue="audit", item_id=g.id, verdict="met") for g in grades[:4])
        s.put([Label(reviewer="ana", queue="audit", item_id=grades[4].id, verdict="unsure")])
    text = run(store, "judges", "agreement", "--grader", JUDGE)
    assert "cells without a label (not represented): safety:not met" in text
    assert "1 item(s) labelled unsure only: left out" in text
    assert "no item is labelled by two reviewers yet" in text
    assert "n too small (4)" in text  # four items: no figure is shown as if it meant something
