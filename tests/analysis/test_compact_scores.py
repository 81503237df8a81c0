"""The analyses read the store through compact columns (`load_scores`, field views); the tables
they give are the ones the whole records give."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

from livemed.analysis.collect import load_scores
from livemed.analysis.completeness import count
from livemed.analysis.contamination import analyse
from livemed.analysis.inputs import CaseScore, ScoreRef, case_scores, select
from livemed.analysis.leaderboard import compare, leaderboard
from livemed.analysis.length import length_bias, length_rows, stored_lengths
from livemed.analysis.provenance import prompt_hashes, stored_prompt_hashes
from livemed.records import Answer, Case, ErrorLabel, Grade, Rubric, Score
from livemed.store import Store
from tests.analysis.builders import study
from tests.reports.conftest import FAST, registry


def _reference_rows(scores: list[Score], dates: dict[str, datetime]) -> list[CaseScore]:
    """The (model, case) rows computed straight from the records, the way livemed 0.1 did."""
    groups: dict[tuple[str, str], list[Score]] = defaultdict(list)
    for s in scores:
        groups[(s.model, s.case_id)].append(s)
    out = []
    for (model, case_id), group in sorted(groups.items()):
        n = len(group)
        sums: dict[str, float] = defaultdict(float)
        counts: Counter[str] = Counter()
        for s in group:
            for key, value in s.per_axis.items():
                sums[key] += value
                counts[key] += 1
        out.append(
            CaseScore(
                model=model,
                case_id=case_id,
                score=sum(s.score for s in group) / n,
                published=dates.get(case_id) or next((s.published for s in group if s.published), None),
                per_axis={key: sums[key] / counts[key] for key in sorted(sums)},
                coverage=sum(s.coverage for s in group) / n,
                harm=sum(s.harm for s in group) / n,
                failures=sum(s.failures for s in group),
                samples=n,
                answer_ids=tuple(sorted(s.answer_id for s in group)),
            )
        )
    return out


def _store(tmp_path: Path) -> Store:
    store = Store(tmp_path / "s.db")
    records = study(n_cases=60)
    # a second judge and the exclude policy beside the analysed scores: the selection must drop them
    extra = [
        s.model_copy(update={"judge": "other/judge", "score": 0.0})
        for s in records
        if isinstance(s, Score) and s.case_id.endswith(("1", "2"))
    ]
    excluded = [
        s.model_copy(update={"failure_policy": "exclude", "score": 1.0})
        for s in records
        if isinstance(s, Score)
    ]
    # a second sample of one model on some cases: rows average over samples
    second: list[Answer | Score] = []
    for r in records:
        if isinstance(r, Answer) and r.model == "fake/weak" and r.case_id.endswith("3"):
            twin = r.model_copy(update={"sample": 1, "text": r.text + " and rest"})
            second.append(twin)
            score = next(s for s in records if isinstance(s, Score) and s.answer_id == r.id)
            second.append(
                score.model_copy(update={"answer_id": twin.id, "score": 0.25, "per_axis": {"safety": 0.5}})
            )
    store.put([*records, *extra, *excluded, *second])
    return store


def test_compact_scores_give_the_tables_of_the_whole_records(tmp_path: Path) -> None:
    with _store(tmp_path) as store:
        scored = load_scores(store, judge="fake/judge")
        records = select(list(store.iter(Score)), judge="fake/judge")
        dates = {c.id: c.published for c in store.iter(Case)}
        rows = _reference_rows(records, dates)
        assert any(r.samples == 2 for r in rows)
        assert scored.rows == rows == case_scores(records, dates)
        assert list(scored.scores) == [
            ScoreRef(s.answer_id, s.case_id, s.model, s.judge, s.score, s.published) for s in records
        ]
        assert scored.scores[3] == list(scored.scores)[3]
        scorable = {r.case_id for r in store.iter(Rubric) if any(c.value > 0 for c in r.criteria)}
        answers = Counter(a.model for a in store.iter(Answer) if a.case_id in scorable)
        assert scored.grading == count(answers, records)
        assert leaderboard(scored.rows, resamples=500) == leaderboard(rows, resamples=500)
        models = sorted({r.model for r in rows})
        assert compare(scored.rows, models[0], models[1], resamples=500, permutations=500) == compare(
            rows, models[0], models[1], resamples=500, permutations=500
        )
        assert analyse(scored.rows, registry(), FAST) == analyse(rows, registry(), FAST)
        wanted = {s.answer_id for s in records}
        lengths = stored_lengths(store, wanted)
        whole = [a for a in store.iter(Answer) if a.id in wanted]
        assert length_rows(lengths, scored.scores) == length_bias(whole, records)
        kinds = (Case, Rubric, Answer, Grade, ErrorLabel)
        every = [r for cls in kinds for r in store.iter(cls)]
        assert stored_prompt_hashes(store, [cls.kind for cls in kinds]) == prompt_hashes(every)


def test_the_judge_choice_reads_the_same_as_from_records(tmp_path: Path) -> None:
    import pytest

    from livemed.errors import UserError

    with _store(tmp_path) as store:
        with pytest.raises(UserError, match="several judges"):
            load_scores(store)
        assert load_scores(store, judge="other/judge").rows == _reference_rows(
            select(list(store.iter(Score)), judge="other/judge"),
            {c.id: c.published for c in store.iter(Case)},
        )
        excluded = load_scores(store, judge="fake/judge", policy="exclude")
        assert {s.score for s in excluded.scores} == {1.0}
        with pytest.raises(UserError, match="no healthbench scores"):
            load_scores(store, convention="healthbench")
