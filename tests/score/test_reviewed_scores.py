"""`scores --rubric-version latest-approved`: each answer scored on its case's newest reviewed rubric, those
scores stored beside the writer-rubric ones (which stay as they were), a re-run reading nothing new, and
a newer reviewed version making a stored score stale."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter

from livemed.analysis.collect import load_scores
from livemed.models.fake import FakeModel
from livemed.records import Score
from livemed.records.review import CriterionChange
from livemed.rubrics.versions import apply_change
from livemed.score import stage as scoring
from livemed.score.stage import NOT_YET_GRADED, score_all
from livemed.store import Store
from tests.builders import REVIEW_CRITERIA, WORDS, grade_words, review, reviewable_store, word_grader

# By hand (livemed convention: clip(sum of met weights / sum of positive weights, 0, 1)).
# Writer rubric (+6 colchicine, +4 urgent care, -2 ibuprofen; P = 10) on both cases:
#   candidate ("Take colchicine") meets the first: 6/10; other (ibuprofen, urgent care): (4 - 2)/10.
WRITER = {"fake/candidate": 0.6, "fake/other": 0.2}
# Case 0 reviewed (+6 the edited criterion, -2 ibuprofen; P = 6): both meet the edited one (colchicine;
# urgent), other also the negative one. Case 1 was only approved: its scores are the writer's.
REVIEWED_0 = {"fake/candidate": 1.0, "fake/other": 4 / 6}


def _by(store: Store, rubric_version: str) -> dict[tuple[str, str], float]:
    return {(s.case_id, s.model): s.score for s in store.iter(Score) if s.rubric_version == rubric_version}


def _graded_and_reviewed(store: Store) -> None:
    reviewable_store(store)
    grade_words(store, FakeModel(WORDS, function=word_grader), "writer")
    score_all(store, WORDS)
    review(store)


def test_reviewed_scores_sit_beside_the_writer_scores(any_store: Store) -> None:
    _graded_and_reviewed(any_store)
    writer_at = any_store.updated_at("score", [s.id for s in any_store.iter(Score)])
    assert len(writer_at) == 4

    early = score_all(any_store, WORDS, rubric_version="latest-approved")
    assert early.excluded == {NOT_YET_GRADED: 2}  # case 0's edited criterion has no grade yet
    assert sorted(s.case_id for s in early.scores) == ["case:demo:1", "case:demo:1"]
    assert (len(early.reviewed_cases), len(early.cases)) == (2, 2)

    grade_words(any_store, FakeModel(WORDS, function=word_grader), "latest-approved")
    run = score_all(any_store, WORDS, rubric_version="latest-approved")
    assert run.excluded == {}
    expected = {("case:demo:0", m): v for m, v in REVIEWED_0.items()}
    expected |= {("case:demo:1", m): v for m, v in WRITER.items()}
    assert _by(any_store, "latest-approved") == pytest.approx(expected)
    assert {s.id.rsplit(":", 1)[1] for s in run.scores} == {"reviewed"}
    writer = {(c, m): WRITER[m] for (c, m) in expected}
    assert _by(any_store, "writer") == pytest.approx(writer)  # still stored, as they were
    assert any_store.updated_at("score", list(writer_at)) == writer_at  # and not rewritten
    payloads = dict(any_store.fields("score", TypeAdapter(dict[str, object])))  # as stored
    assert len(payloads) == 8
    assert all(("rubric_version" in p) == i.endswith(":reviewed") for i, p in payloads.items())
    again = score_all(any_store, WORDS)  # the writer-rubric run reads them back
    assert {(s.case_id, s.model): s.score for s in again.scores} == pytest.approx(writer)
    assert {s.rubric_version for s in again.scores} == {"writer"}


def test_a_writer_score_serialises_as_before_and_a_reviewed_one_names_its_rubrics() -> None:
    fields = {"answer_id": "a", "case_id": "c", "model": "m", "judge": "j", "score": 0.5}
    writer = Score(**fields, coverage=0.5, harm=0.0)
    assert "rubric_version" not in json.loads(writer.model_dump_json())
    assert writer.id == "score:a:j:livemed"
    reviewed = writer.model_copy(update={"rubric_version": "latest-approved"})
    assert json.loads(reviewed.model_dump_json())["rubric_version"] == "latest-approved"
    assert reviewed.id == "score:a:j:livemed:reviewed"
    old = json.loads(writer.model_dump_json())  # a payload stored before the field existed
    assert Score.model_validate(old).rubric_version == "writer"


def test_a_rerun_reads_nothing_and_a_newer_version_is_scored_again(
    any_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    _graded_and_reviewed(any_store)
    grade_words(any_store, FakeModel(WORDS, function=word_grader), "latest-approved")
    score_all(any_store, WORDS, rubric_version="latest-approved")
    read: list[str] = []
    real = scoring.verdicts_by_answer

    def counting(store: Store, answer_ids, judge):  # type: ignore[no-untyped-def]
        read.extend(answer_ids)
        return real(store, answer_ids, judge)

    monkeypatch.setattr(scoring, "verdicts_by_answer", counting)
    again = score_all(any_store, WORDS, rubric_version="latest-approved")
    assert (read, len(again.scores)) == ([], 4)  # every stored reviewed score was current

    # a reviewer strikes the negative criterion of case 1 after those scores were stored
    apply_change(
        any_store, "case:demo:1", "dr-b", CriterionChange(action="strike", criterion_id=REVIEW_CRITERIA[2].id)
    )
    rescored = score_all(any_store, WORDS, rubric_version="latest-approved")
    assert sorted(read) == sorted(s.answer_id for s in rescored.scores if s.case_id == "case:demo:1")
    case1 = {s.model: s.score for s in rescored.scores if s.case_id == "case:demo:1"}
    assert case1 == pytest.approx({"fake/candidate": 0.6, "fake/other": 0.4})  # 6/10 and 4/10 now
    assert _by(any_store, "writer")[("case:demo:1", "fake/other")] == pytest.approx(0.2)  # unchanged


def test_the_analyses_read_the_writer_scores_unless_asked(any_store: Store) -> None:
    _graded_and_reviewed(any_store)
    grade_words(any_store, FakeModel(WORDS, function=word_grader), "latest-approved")
    score_all(any_store, WORDS, rubric_version="latest-approved")
    writer = load_scores(any_store, judge=WORDS)
    assert sorted(s.score for s in writer.scores) == pytest.approx([0.2, 0.2, 0.6, 0.6])
    reviewed = load_scores(any_store, rubric_version="latest-approved")
    assert sorted(s.score for s in reviewed.scores) == pytest.approx([0.2, 0.6, 4 / 6, 1.0])
