"""Scores from stored verdicts: every answer fully graded by a judge gets a `Score` record.

An answer with a criterion whose grader call failed is *not yet graded*: it gets no Score, and a score
stored for it earlier is removed (a failed call never stays a number). So is an answer with an unusable
verdict (unparsable, missing or ambiguous) under the default policy `strict`; the policies `not-met`
and `exclude` score such verdicts only for a model whose failed verdicts are at most
`max_failure_share` of its verdicts from the judge (`failure_shares`; above it, the answers with one
are not graded, and the share is on the ScoreRun for the table). Answers are scored in chunks:
verdicts are read for 500 answers at a time (only the fields scoring uses), each chunk's scores are
written before the next chunk is read (a killed run keeps them), and a score newer than every verdict
on its answer and than its rubric is kept as it is, so a re-run does only what changed. The run keeps
a compact `ScoreRow` of each score (`score.rows`), never the records: a few hundred bytes an answer.

With `rubric_version="latest-approved"` each answer is scored on its case's newest reviewed rubric
(`rubrics.versions`; the writer's where no reviewer has acted); those scores sit beside the
writer-rubric ones (`Score.rubric_version`, an id ending `:reviewed`), so both stay stored and
reproducible, and a stored one is current only while it is also newer than its case's newest version.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple, NotRequired

from pydantic import AwareDatetime, TypeAdapter
from typing_extensions import TypedDict

from livemed.common.stats import ZERO_POSITIVE
from livemed.interop.healthbench import EXPORT_AXIS, SOURCE, example_tags_of, is_imported
from livemed.pipeline.runner import batched
from livemed.records import Answer, Criterion, Grade, GradeFailure, Rubric, RubricVersion, Score
from livemed.records.grading import (
    CALL_FAILED,
    RubricChoice,
    canonical_themes,
    criterion_key_id,
)
from livemed.rubrics.versions import chosen_versions, reviewed
from livemed.score import formula as S
from livemed.score.rows import RowMaker, ScoreRow, score_id
from livemed.store import Store

NOT_YET_GRADED = "not yet graded (a grader call failed or was not made)"
UNUSABLE = "not yet graded (an unusable verdict)"
CHUNK = 500  # answers scored (and their scores written) per batch
RUBRIC_CACHE = 20_000  # rubrics kept between batches at most (memory)


@dataclass
class ScoreRun:
    scores: list[ScoreRow] = field(default_factory=list)  # a compact row of each Score written or kept
    excluded: Counter[str] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)  # model -> answers with a scorable rubric
    shares: dict[str, FailureShare] = field(default_factory=dict)  # models with an unusable verdict
    max_failure_share: float = S.MAX_FAILURE_SHARE
    rubric_version: RubricChoice = "writer"
    cases: set[str] = field(default_factory=set)  # latest-approved: the cases of the answers seen
    reviewed_cases: set[str] = field(default_factory=set)  # latest-approved: those with a reviewed version


class FailureShare(NamedTuple):
    """A model's unusable verdicts from one judge out of all its verdicts from that judge."""

    failed: int
    verdicts: int

    @property
    def share(self) -> float:
        return self.failed / self.verdicts if self.verdicts else 0.0


@dataclass(frozen=True)
class _Prepared:
    """What scoring needs of one rubric, worked out once for every answer to its case: each criterion's
    id (a hash), weight, axis, theme and tags; the criteria of each axis, theme and HealthBench tag (as
    indices); the HealthBench example tags, the rubric's themes and publication date."""

    ids: tuple[str, ...]
    parts: tuple[tuple[float, str, str | None, tuple[str, ...]], ...]  # value, axis, theme, tags
    values: tuple[float, ...]
    axes: S.Groups  # `S.axis_keys` of each criterion
    example_tags: tuple[str, ...]
    rubric_themes: tuple[str, ...]
    published: datetime | None
    positive: bool  # some criterion has a positive weight
    imported: bool

    @classmethod
    def of(cls, rubric: Rubric) -> _Prepared:
        criteria = [(c.id, c.value, c.axis, c.theme, tuple(c.tags)) for c in rubric.criteria]
        return cls._build(
            criteria, is_imported(rubric), example_tags_of(rubric), rubric.themes, rubric.published
        )

    @classmethod
    def of_view(cls, view: _RubricView) -> _Prepared:
        """From the fields scoring reads of a stored rubric (`_RUBRIC`, several times cheaper than the
        whole record, whose validators and nested models cost ~0.2 ms a rubric): what `Criterion.id`,
        `Criterion.value`, the two theme validators and `interop.healthbench`'s `is_imported` and
        `example_tags_of` make of them (tests/score/test_score_groups.py checks it equals `of`)."""
        one_theme = _one_theme_spelling
        criteria = [
            (
                criterion_key_id(c["text"], c["axis"], c["weight"]),
                points if (points := c.get("points")) is not None else float(c["weight"]),
                c["axis"],
                one_theme(c.get("theme")),
                tuple(c.get("tags", ())),
            )
            for c in view["criteria"]
        ]
        steps = view.get("steps", [])
        step = next((s for s in steps if s.get("step") == "import" and s.get("source") == SOURCE), None)
        themes = canonical_themes(view.get("themes", []))
        if step is not None:
            example_tags = [str(tag) for tag in step.get("example_tags", [])]
        else:
            example_tags = [f"theme:{t}" for t in themes]
        return cls._build(criteria, step is not None, example_tags, themes, view.get("published"))

    @classmethod
    def _build(
        cls,
        criteria: list[tuple[str, float, str, str | None, tuple[str, ...]]],  # id, value, axis, theme, tags
        imported: bool,
        example_tags: list[str],
        themes: list[str],
        published: datetime | None,
    ) -> _Prepared:
        # an imported criterion's axes are its own `axis:` tags only (its livemed axis may be a stand-in)
        parts = tuple(
            (value, "" if imported else axis, theme, tags) for _, value, axis, theme, tags in criteria
        )
        axes = []
        for _, axis, _, tags in parts:  # `S.axis_keys`
            tagged = [tag.removeprefix("axis:") for tag in tags if tag.startswith("axis:")]
            axes.append(tagged or ([axis] if axis else []))
        return cls(
            ids=tuple(c[0] for c in criteria),
            parts=parts,
            values=tuple(part[0] for part in parts),
            axes=S.index_groups(axes),
            example_tags=tuple(example_tags),
            rubric_themes=tuple(themes),
            published=published,
            positive=any(part[0] > 0 for part in parts),
            imported=imported,
        )

    @functools.cached_property
    def themes(self) -> S.Groups:
        """Each criterion's theme (the livemed convention's per-theme scores)."""
        return S.index_groups([[theme] if theme else [] for _, _, theme, _ in self.parts])

    @functools.cached_property
    def tags(self) -> S.Groups:
        """HealthBench's rubric tags (`interop.healthbench.criterion_tags`; the healthbench convention)."""
        return S.index_groups(
            [
                list(tags)
                if self.imported or tags
                else [f"axis:{EXPORT_AXIS.get(axis, axis)}", "level:example"]
                for _, axis, _, tags in self.parts
            ]
        )

    def verdicts(self, verdicts: dict[str, bool | None]) -> tuple[bool | None, ...] | None:
        """Each criterion's verdict, in order; None when one is missing (not fully graded)."""
        try:
            return tuple(verdicts[i] for i in self.ids)
        except KeyError:
            return None

    def items(self, verdicts: dict[str, bool | None]) -> list[S.Item] | None:
        if any(i not in verdicts for i in self.ids):
            return None
        return [
            S.Item(value, verdicts[i], axis=axis, theme=theme, tags=tags)
            for i, (value, axis, theme, tags) in zip(self.ids, self.parts, strict=True)
        ]


class _AnswerView(TypedDict):
    """The fields of a stored Answer that scoring reads (not its text)."""

    case_id: str
    model: str


_ANSWER = TypeAdapter(_AnswerView)


class _AnswerRef(NamedTuple):
    """An answer as scoring sees it: its id, case and model."""

    id: str
    case_id: str
    model: str


class _CriterionView(TypedDict):
    text: str
    polarity: Literal["positive", "negative"]
    axis: str
    weight: int
    theme: NotRequired[str | None]
    points: NotRequired[float | None]
    tags: NotRequired[list[str]]


class _StepView(TypedDict, total=False):
    step: Any
    source: Any
    example_tags: Any


class _RubricView(TypedDict):
    """The fields of a stored Rubric that scoring reads (not its findings, nor its steps' outputs)."""

    case_id: str
    criteria: list[_CriterionView]
    themes: NotRequired[list[str]]
    steps: NotRequired[list[_StepView]]
    published: NotRequired[AwareDatetime | None]


_RUBRIC = TypeAdapter(_RubricView)
# a criterion's theme as its validator spells it; a store holds few themes, each spelled once here
_one_theme_spelling = functools.lru_cache(maxsize=4096)(Criterion._one_theme_spelling)


def items_for(rubric: Rubric, verdicts: dict[str, bool | None]) -> list[S.Item] | None:
    """Score items for a rubric from verdicts by criterion id (None = failed); None if any is missing.

    An imported criterion's axes are its own `axis:` tags only (its livemed axis may be a stand-in)."""
    return _Prepared.of(rubric).items(verdicts)


def verdicts_of(store: Store, answer_id: str, judge: str) -> tuple[dict[str, bool | None], int]:
    """criterion id -> met (None for an unusable verdict), and the number of unusable verdicts; a Grade
    wins over a failure. A criterion whose grader call failed has no verdict at all: it is left out, so
    the answer is not fully graded (and gets no score) until the call succeeds."""
    return verdicts_by_answer(store, [answer_id], judge).get(answer_id, ({}, 0))


class _Verdict(TypedDict):
    """The fields of a stored Grade or GradeFailure that scoring reads (the rest is not parsed)."""

    answer_id: str
    criterion_id: str
    judge: str


class _Met(_Verdict):
    met: bool


class _Failed(_Verdict):
    reason: str


_MET, _FAILED = TypeAdapter(_Met), TypeAdapter(_Failed)


def verdicts_by_answer(
    store: Store, answer_ids: Sequence[str], judge: str
) -> dict[str, tuple[dict[str, bool | None], int]]:
    """`verdicts_of` for many answers at once (one query per kind per 500 answers; only the fields
    scoring needs are read from each payload)."""
    failed: dict[str, set[str]] = {}
    graded: dict[str, dict[str, bool | None]] = {}
    for _, failure in store.fields_by_parents(GradeFailure.kind, answer_ids, _FAILED):
        if failure["judge"] == judge and failure["reason"] != CALL_FAILED:
            failed.setdefault(failure["answer_id"], set()).add(failure["criterion_id"])
    for _, grade in store.fields_by_parents(Grade.kind, answer_ids, _MET):
        if grade["judge"] == judge:
            graded.setdefault(grade["answer_id"], {})[grade["criterion_id"]] = grade["met"]
    out: dict[str, tuple[dict[str, bool | None], int]] = {}
    for key in answer_ids:
        unusable, met = failed.get(key, set()), graded.get(key, {})
        verdicts: dict[str, bool | None] = dict.fromkeys(unusable)
        verdicts.update(met)
        out[key] = (verdicts, len(unusable - met.keys()))
    return out


def score_answer(
    answer: Answer,
    rubric: Rubric,
    items: list[S.Item],
    *,
    judge: str,
    failures: int,
    convention: S.Convention,
    policy: S.FailurePolicy,
) -> Score | None:
    """The Score record of one graded answer (`items`: `items_for(rubric, verdicts)`); None when the
    rubric has no positive weight."""
    return _score(
        answer,
        _Prepared.of(rubric),
        tuple(item.met for item in items),
        judge=judge,
        failures=failures,
        convention=convention,
        policy=policy,
    )


def _score(
    answer: Answer | _AnswerRef,
    prepared: _Prepared,
    met: tuple[bool | None, ...],
    *,
    judge: str,
    failures: int,
    convention: S.Convention,
    policy: S.FailurePolicy,
    rubric_version: RubricChoice = "writer",
) -> Score | None:
    values = prepared.values
    raw = S.group_raw(values, met, range(len(values)), policy)
    if raw is None:
        return None
    value = S.clip01(raw) if convention == "livemed" else raw
    per_tag: dict[str, float] = {}
    if convention == "healthbench":  # themes are example tags there: each gets the case score
        per_theme = dict.fromkeys(prepared.rubric_themes, value)
        # simple-evals' tag metrics: each example tag gets the case score, each rubric tag the case
        # formula over its own criteria (a rubric tag overrides an example tag of the same name)
        per_tag = {
            **dict.fromkeys(prepared.example_tags, value),
            **S.group_scores(values, met, prepared.tags, convention, policy),
        }
    else:
        per_theme = S.group_scores(values, met, prepared.themes, convention, policy)
    coverage, harm = S.group_coverage_harm(values, met, policy) or (0.0, 0.0)
    return Score(
        answer_id=answer.id,
        case_id=answer.case_id,
        model=answer.model,
        judge=judge,
        convention=convention,
        score=value,
        per_axis=S.group_scores(values, met, prepared.axes, convention, policy),
        per_theme=per_theme,
        per_tag=per_tag,
        coverage=coverage or 0.0,
        harm=harm or 0.0,
        failures=failures,
        failure_policy=policy,
        published=prepared.published,
        rubric_version=rubric_version,
    )


def score_all(
    store: Store,
    judge: str,
    *,
    convention: S.Convention = "livemed",
    policy: S.FailurePolicy = S.DEFAULT_POLICY,
    model: str | None = None,
    models: Collection[str] | None = None,
    batch_size: int = CHUNK,
    max_failure_share: float = S.MAX_FAILURE_SHARE,
    rubric_version: RubricChoice = "writer",
) -> ScoreRun:
    """Score every answer (of `model`, or of `models`) fully graded by `judge`; others are counted by
    reason. Streams `batch_size` answers at a time: their verdicts and rubrics are read, and their
    scores written, one chunk at a time, so a killed run keeps the chunks it finished. An answer whose
    stored score was written after every verdict on it and after its rubric is current: that score is
    read back, not computed again (a re-run with nothing new reads no verdicts). An answer with an
    unusable verdict is scored only under `not-met`/`exclude` and only for a model whose share of
    unusable verdicts is at most `max_failure_share`. `rubric_version`: the writer's rubrics, or each
    case's newest reviewed version (see the module doc)."""
    wanted = set(models) if models is not None else {model} if model is not None else None
    run = ScoreRun(
        shares=failure_shares(store, judge, wanted),
        max_failure_share=max_failure_share,
        rubric_version=rubric_version,
    )
    counted = frozenset(
        name for name, share in run.shares.items() if policy != "strict" and share.share <= max_failure_share
    )
    rubrics: dict[str, _Prepared | None] = {}
    rows = RowMaker()
    answers = (
        _AnswerRef(answer_id, view["case_id"], view["model"])
        for answer_id, view in store.fields(Answer.kind, _ANSWER)
        if wanted is None or view["model"] in wanted
    )
    for chunk in batched(answers, batch_size):
        ids = {a.id: score_id(a.id, judge, convention, policy, rubric_version) for a in chunk}
        versions_at = _versions_written(run, store, chunk)
        current = _current_scores(store, chunk, list(ids.values()), versions_at)
        todo: list[_AnswerRef] = []
        unscored: list[str] = []
        for answer in chunk:
            kept = current.get(ids[answer.id])
            if kept is None or kept.failure_policy != policy:  # a legacy score under the default id
                todo.append(answer)
            elif kept.failures and answer.model not in counted:
                run.answers[answer.model] += 1
                run.excluded[UNUSABLE] += 1
                unscored.append(answer.id)
            else:
                run.answers[answer.model] += 1  # a stored score means the rubric has a positive weight
                run.scores.append(rows.row(kept))
        verdicts = verdicts_by_answer(store, [a.id for a in todo], judge) if todo else {}
        _prepare(store, rubrics, sorted({a.case_id for a in todo} - rubrics.keys()), rubric_version)
        fresh: list[Score] = []
        for answer in todo:
            prepared, found_verdicts = rubrics[answer.case_id], verdicts[answer.id]
            counts = answer.model in counted  # its unusable verdicts are scored by the policy
            _score_one(
                run, fresh, answer, prepared, found_verdicts, unscored, judge, convention, policy, counts
            )
        store.put(fresh)
        run.scores.extend(rows.row(score) for score in fresh)
        _drop_stale_scores(store, unscored, judge, convention, policy, rubric_version)
        if policy != "strict" and rubric_version == "writer":
            _drop_legacy_ids(store, fresh)
        if len(rubrics) > RUBRIC_CACHE:  # answers come in case order: older cases are not asked again
            rubrics.clear()
    return run


def _prepare(
    store: Store, rubrics: dict[str, _Prepared | None], case_ids: list[str], choice: RubricChoice
) -> None:
    """Add what scoring needs of these cases' rubrics to `rubrics`: from the stored fields of the
    writer's rubric, or from the whole rubric with a reviewed version's criteria where `choice` picks one."""
    versions = chosen_versions(store, case_ids, choice)
    writer = [c for c in case_ids if c not in versions]
    found = dict(store.fields_many(Rubric.kind, [f"rubric:{case_id}" for case_id in writer], _RUBRIC))
    for case_id in writer:
        view = found.get(f"rubric:{case_id}")
        rubrics[case_id] = _Prepared.of_view(view) if view is not None else None
    whole = store.get_many(Rubric, [f"rubric:{case_id}" for case_id in versions]) if versions else {}
    for case_id, version in versions.items():
        rubric = whole.get(f"rubric:{case_id}")
        rubrics[case_id] = _Prepared.of(reviewed(rubric, version)) if rubric is not None else None


def _versions_written(run: ScoreRun, store: Store, chunk: Sequence[_AnswerRef]) -> dict[str, datetime]:
    """Scoring on reviewed rubrics: when each case of `chunk` with a reviewed version had its newest one
    written (its cases are counted on `run`); nothing for the writer's rubrics."""
    if run.rubric_version == "writer":
        return {}
    case_ids = sorted({a.case_id for a in chunk})
    run.cases.update(case_ids)
    if not store.any_of(RubricVersion.kind):
        return {}
    written = store.updated_at(RubricVersion.kind, case_ids, by_parent=True)
    run.reviewed_cases.update(written)
    return written


def has_unusable(store: Store, judge: str) -> bool:
    """Whether the store holds an unusable verdict of `judge` (its answers wait for --retry-failures)."""
    return any(
        f["judge"] == judge and f["reason"] != CALL_FAILED
        for _, f in store.fields(GradeFailure.kind, _FAILED)
    )


def failure_shares(store: Store, judge: str, wanted: Collection[str] | None) -> dict[str, FailureShare]:
    """Per model (of `wanted`, or every model) with an unusable verdict from `judge`: how many of its
    verdicts from `judge` are unusable. Stored failures are few: their answers' verdicts are counted
    only when there is one (a store without any reads no grade)."""
    failed: Counter[str] = Counter()
    for _, failure in store.fields(GradeFailure.kind, _FAILED):
        if failure["judge"] == judge and failure["reason"] != CALL_FAILED:
            failed[failure["answer_id"]] += 1
    if not failed:
        return {}
    by_model: dict[str, list[str]] = {}
    for answer_id, view in store.fields(Answer.kind, _ANSWER):
        if wanted is None or view["model"] in wanted:
            by_model.setdefault(view["model"], []).append(answer_id)
    suffix = f":{judge}"
    out: dict[str, FailureShare] = {}
    for name, answer_ids in by_model.items():
        unusable = sum(failed.get(a, 0) for a in answer_ids)
        if unusable:
            graded = sum(i.endswith(suffix) for i in store.ids_by_parents(Grade.kind, answer_ids))
            out[name] = FailureShare(unusable, graded + unusable)
    return out


def _current_scores(
    store: Store,
    answers: Sequence[_AnswerRef],
    score_ids: list[str],
    versions_at: dict[str, datetime] | None = None,
) -> dict[str, Score]:
    """The stored scores (by id) that are newer than every verdict on their answer and its rubric, and
    than its case's newest reviewed version when `versions_at` (case id -> its write time) has one."""
    written = store.updated_at(Score.kind, score_ids)
    if not written:
        return {}
    answer_ids = [a.id for a in answers]
    latest = store.updated_at(Grade.kind, answer_ids, by_parent=True)
    for answer_id, moment in store.updated_at(GradeFailure.kind, answer_ids, by_parent=True).items():
        latest[answer_id] = max(moment, latest.get(answer_id, moment))
    rubric_ids = sorted({f"rubric:{a.case_id}" for a in answers})
    rubric_written = store.updated_at(Rubric.kind, rubric_ids)
    versions_at = versions_at or {}
    current = []
    for answer, one in zip(answers, score_ids, strict=True):
        at = written.get(one)
        rubric_at = rubric_written.get(f"rubric:{answer.case_id}")
        verdict_at = latest.get(answer.id)
        if at is None or rubric_at is None or verdict_at is None:
            continue
        if at > verdict_at and at > max(rubric_at, versions_at.get(answer.case_id, rubric_at)):
            current.append(one)
    return store.get_many(Score, current) if current else {}


def _score_one(
    run: ScoreRun,
    out: list[Score],
    answer: _AnswerRef,
    prepared: _Prepared | None,
    found: tuple[dict[str, bool | None], int],
    unscored: list[str],
    judge: str,
    convention: S.Convention,
    policy: S.FailurePolicy,
    counts_unusable: bool,
) -> None:
    if prepared is None:
        run.excluded["no rubric"] += 1
        return
    if prepared.positive:
        run.answers[answer.model] += 1
    met = prepared.verdicts(found[0])
    failures = 0 if met is None else met.count(None)  # of the rubric's criteria now (not stale ones)
    if met is None or (failures and not counts_unusable and prepared.positive):
        run.excluded[NOT_YET_GRADED if met is None else UNUSABLE] += 1
        unscored.append(answer.id)
        return
    record = _score(
        answer,
        prepared,
        met,
        judge=judge,
        failures=failures,
        convention=convention,
        policy=policy,
        rubric_version=run.rubric_version,
    )
    if record is None:
        run.excluded[ZERO_POSITIVE] += 1
    else:
        out.append(record)


def _drop_stale_scores(
    store: Store,
    answer_ids: list[str],
    judge: str,
    convention: str,
    policy: str,
    rubric_version: RubricChoice = "writer",
) -> None:
    """A score stored earlier for an answer that is not fully graded now (e.g. by a livemed that scored
    failed grader calls as not met, or on a reviewed rubric with a criterion edited since) is removed:
    a failed call never stays a number."""
    ids = [score_id(a, judge, convention, policy, rubric_version) for a in answer_ids]
    for start in range(0, len(ids), 500):
        stale = store.has(Score.kind, ids[start : start + 500])
        if stale:
            store.delete(Score.kind, sorted(stale))


def _drop_legacy_ids(store: Store, scores: Sequence[Score]) -> None:
    """Before scores carried their failure policy in their id, a `not-met` (the default then) or `exclude`
    score took the default id: such a stored score is replaced by the one just written beside it."""
    legacy = [s.id.rsplit(":", 1)[0] for s in scores]
    found = store.has(Score.kind, legacy)
    stale = [i for i in found if (old := store.get(Score, i)) is not None and old.failure_policy != "strict"]
    if stale:
        store.delete(Score.kind, sorted(stale))
