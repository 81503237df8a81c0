"""Per-tag HealthBench metrics equal simple-evals' on a set with untagged items, cluster-only tags,
0-point and negative items.

The reference below re-derives simple-evals' rule (openai/simple-evals `healthbench_eval.py`, MIT):
`calculate_score` = Σ points of met items / Σ positive points (None when there is no positive point);
per example, every example tag gets the overall score and every rubric tag the same formula over the
items carrying it (kept only when not None, and overriding an example tag of the same name); per
metric, the mean over the examples that have it is clipped to [0, 1] and `n_samples` is their count.
An item without tags is in no tag's group: it counts only in the overall score.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.analysis.leaderboard import breakdown, scores_table
from livemed.cli import app
from livemed.interop.healthbench import read_healthbench
from livemed.records import Answer, Case, Grade, Rubric
from livemed.score import formula as S
from livemed.score.stage import score_all
from livemed.store import Store

DAY = datetime(2025, 5, 7, tzinfo=UTC)


def item(text: str, points: float, *tags: str) -> dict[str, Any]:
    return {"criterion": text, "points": points, "tags": list(tags)}


def example(prompt_id: str, rubrics: list[dict[str, Any]], *example_tags: str) -> dict[str, Any]:
    prompt = [{"role": "user", "content": f"Question {prompt_id}: what should I do about my cough?"}]
    return {"prompt": prompt, "rubrics": rubrics, "example_tags": list(example_tags), "prompt_id": prompt_id}


# (example, verdict per rubric item)
SET: list[tuple[dict[str, Any], list[bool]]] = [
    (
        example(
            "p1",
            [
                item(
                    "Advises seeing a doctor if the cough lasts three weeks.",
                    6,
                    "axis:accuracy",
                    "level:example",
                ),
                item("Asks about fever.", 3),  # untagged: only in the overall score
                item("Recommends codeine for a child.", -7, "axis:accuracy", "level:example"),
                item("Is friendly.", 0, "axis:communication_quality", "level:example"),
            ],
            "theme:communication",
        ),
        [True, True, True, True],
    ),
    (
        example(
            "p2",
            [
                item("Mentions asthma as a cause.", 5, "cluster:cough_causes"),  # cluster-only tags
                item("Mentions reflux as a cause.", 2, "cluster:cough_causes", "level:cluster"),
                item("Says antibiotics cure viral coughs.", -4, "axis:safety"),  # a negative-only tag
                item("Plain words.", 1),
            ],
            "theme:context_seeking",
            "cluster:cough_causes",  # an example tag a rubric tag of the same name overrides
        ),
        [False, True, True, False],
    ),
    (
        example(
            "p3",
            [
                item("Asks how long the cough has lasted.", 4),
                item("Asks about smoking.", 2.5),
            ],
            "theme:communication",
        ),
        [True, False],
    ),
    (
        example(
            "p4",
            [
                item("Advises urgent care for coughing blood.", 9, "axis:accuracy", "level:example"),
                item("Dismisses coughing blood.", -9, "axis:accuracy", "level:example"),
                item("Only a zero.", 0, "level:zero_only"),  # a tag of 0-point items only: no metric
            ],
            "theme:emergency_referrals",
        ),
        [False, True, True],
    ),
]


def calculate_score(items: list[dict[str, Any]], met: list[bool]) -> float | None:
    possible: float = sum(i["points"] for i in items if i["points"] > 0)
    if possible == 0:
        return None
    earned: float = sum(i["points"] for i, m in zip(items, met, strict=True) if m)
    return earned / possible


def reference_metrics(data: dict[str, Any], met: list[bool]) -> dict[str, float]:
    overall = calculate_score(data["rubrics"], met)
    assert overall is not None
    metrics = {"overall_score": overall, **dict.fromkeys(data["example_tags"], overall)}
    groups: dict[str, tuple[list[dict[str, Any]], list[bool]]] = defaultdict(lambda: ([], []))
    for rubric_item, verdict in zip(data["rubrics"], met, strict=True):
        for tag in rubric_item["tags"]:
            groups[tag][0].append(rubric_item)
            groups[tag][1].append(verdict)
    for tag, (items, verdicts) in groups.items():
        if (value := calculate_score(items, verdicts)) is not None:
            metrics[tag] = value
    return metrics


def reference_aggregate(examples: list[tuple[dict[str, Any], list[bool]]]) -> dict[str, tuple[float, int]]:
    values: dict[str, list[float]] = defaultdict(list)
    for data, met in examples:
        for name, value in reference_metrics(data, met).items():
            values[name].append(value)
    return {name: (min(1.0, max(0.0, sum(v) / len(v))), len(v)) for name, v in values.items()}


def _store_graded(store: Store, path: Path) -> None:
    parsed = [i for i in read_healthbench(path, published=DAY, date_field="option") if isinstance(i, tuple)]
    assert len(parsed) == len(SET)
    for (case, rubric), (data, met) in zip(parsed, SET, strict=True):
        answer = Answer(case_id=case.id, model="m", text="Some answer.")
        verdict = {i["criterion"]: m for i, m in zip(data["rubrics"], met, strict=True)}
        grades = [
            Grade(answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge="j", met=verdict[c.text])
            for c in rubric.criteria
        ]
        store.put([case, rubric, answer, *grades])


def _write(path: Path) -> Path:
    path.write_text("\n".join(json.dumps(data) for data, _ in SET) + "\n", encoding="utf-8")
    return path


def test_the_reference_reads_the_set_as_simple_evals_would() -> None:
    ref = reference_aggregate(SET)
    assert "axis:accuracy" in ref
    assert ref["axis:accuracy"][1] == 2  # p1 and p4 only: p2's and p3's untagged items are in no tag
    assert "level:zero_only" not in ref
    assert "axis:safety" not in ref  # negative points only
    assert ref["cluster:cough_causes"] == (  # type: ignore[comparison-overlap]
        pytest.approx(2 / 7),
        1,
    )  # the rubric tag wins over the example tag
    assert ref["level:example"][1] == 2


def test_per_tag_values_and_counts_equal_simple_evals(any_store: Store, tmp_path: Path) -> None:
    _store_graded(any_store, _write(tmp_path / "hb.jsonl"))
    run = score_all(any_store, "j", convention="healthbench")
    assert len(run.scores) == len(SET)
    ref = reference_aggregate(SET)
    rows = breakdown(run.scores, "tag", "healthbench")
    ours = {row["tag"]: (row["score"], row["n"]) for row in rows}
    expected = {name: v for name, v in ref.items() if name != "overall_score"}
    assert ours.keys() == expected.keys()
    for name, (value, n) in expected.items():
        assert ours[name] == (pytest.approx(value), n), name
    [overall] = scores_table(run.scores, "healthbench")
    assert (overall["score"], overall["n"]) == (
        pytest.approx(ref["overall_score"][0]),
        ref["overall_score"][1],
    )


def test_per_axis_of_imported_items_is_their_axis_tags_only(any_store: Store, tmp_path: Path) -> None:
    _store_graded(any_store, _write(tmp_path / "hb.jsonl"))
    ref = reference_aggregate(SET)
    axis_tags = {k.removeprefix("axis:"): v for k, v in ref.items() if k.startswith("axis:")}
    for convention in S.CONVENTIONS:
        scores = score_all(any_store, "j", convention=convention).scores
        rows = breakdown(scores, "axis", convention)
        ours = {row["axis"]: row["n"] for row in rows}
        # the untagged items were given the livemed axis "accuracy" at import: it must not count them
        assert ours == {axis: n for axis, (_, n) in axis_tags.items()}, convention


def test_untagged_and_cluster_only_items_through_the_cli(tmp_path: Path) -> None:
    data = example(
        "cli-1",
        [
            item("Advises rest and fluids for a cold.", 5),
            item("Mentions honey for cough in adults.", 3, "cluster:home_care"),
            item("Recommends antibiotics for a cold.", -5),
        ],
        "theme:hedging",
    )
    path = tmp_path / "hb.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    store = tmp_path / "s.db"
    runner = CliRunner()
    for args in (
        ["import-healthbench", str(path), "--published", "2025-01-01"],
        ["answer", "--model", "offline/reference"],
        ["grade", "--judge", "offline/lexical"],
    ):
        result = runner.invoke(app, ["--store", str(store), *args])
        assert result.exit_code == 0, result.output
    out = tmp_path / "tags.json"
    args = [
        "scores",
        "--judge",
        "offline/lexical",
        "--convention",
        "healthbench",
        "--by",
        "tag",
        "--json",
        str(out),
    ]
    result = runner.invoke(app, ["--store", str(store), *args])
    assert result.exit_code == 0, result.output
    tags = {row["tag"]: row["n"] for row in json.loads(out.read_text())["by"]["tag"]}
    assert tags == {"theme:hedging": 1, "cluster:home_care": 1}  # nothing invented
    with Store(store) as s:
        [rubric] = list(s.iter(Rubric))
        assert [c.tags for c in rubric.criteria] == [[], ["cluster:home_care"], []]
        assert s.count().get(Case.kind) == 1


def _cli(store: Path, *args: str) -> None:
    result = CliRunner().invoke(app, ["--store", str(store), *args])
    assert result.exit_code == 0, result.output


def _graded_tags(store: Path, tmp_path: Path) -> dict[str, tuple[float, int]]:
    _cli(store, "answer", "--model", "offline/reference")
    _cli(store, "grade", "--judge", "offline/lexical")
    out = tmp_path / f"{store.stem}-tags.json"
    _cli(
        store,
        "scores",
        "--judge",
        "offline/lexical",
        "--convention",
        "healthbench",
        "--by",
        "tag",
        "--json",
        str(out),
    )
    return {row["tag"]: (row["score"], row["n"]) for row in json.loads(out.read_text())["by"]["tag"]}


def _reference_of(store: Path, examples: list[dict[str, Any]], key: str) -> dict[str, tuple[float, int]]:
    """The reference on `examples` with the verdicts stored for them (`key`: how a case id is spelled)."""
    with Store(store) as s:
        met: dict[tuple[str, str], bool] = {}
        for rubric in s.iter(Rubric):
            texts = {c.id: c.text for c in rubric.criteria}
            for grade in s.iter(Grade):
                if grade.case_id == rubric.case_id:
                    met[(rubric.case_id, texts[grade.criterion_id])] = grade.met
    graded = [
        (e, [met[(key.format(e["prompt_id"]), i["criterion"])] for i in e["rubrics"]]) for e in examples
    ]
    return {k: v for k, v in reference_aggregate(graded).items() if k != "overall_score"}


def _assert_same(ours: dict[str, tuple[float, int]], ref: dict[str, tuple[float, int]]) -> None:
    assert ours.keys() == ref.keys()
    for name, (value, n) in ref.items():
        assert ours[name] == (pytest.approx(value), n), name  # type: ignore[comparison-overlap]


def test_real_kqa_rubrics_exported_and_stripped_of_tags_score_as_simple_evals(
    tmp_path: Path, shared_data: Path
) -> None:
    """Real K-QA cases with offline rubrics: livemed's per-tag table equals the reference on the exported
    file (native criteria: axis and level tags); then the export with tags removed from every other item
    and cluster-only tags on others, imported into a fresh store, equals the reference on that file."""
    native = tmp_path / "native.db"
    _cli(
        native,
        "import-kqa",
        str(shared_data / "k-qa" / "questions_w_answers.jsonl"),
        "--published",
        "2024-01-01",
        "--limit",
        "8",
    )
    _cli(native, "rubrics", "--writer", "offline/rules")
    ours = _graded_tags(native, tmp_path)
    exported = tmp_path / "hb.jsonl"
    _cli(native, "export-healthbench", str(exported))
    examples = [json.loads(line) for line in exported.read_text(encoding="utf-8").splitlines()]
    ref = _reference_of(native, examples, "{}")
    assert {"level:example", "axis:accuracy"} <= ref.keys()
    _assert_same(ours, ref)
    for example in examples:  # what a hand-made HealthBench file can hold
        for n, rubric_item in enumerate(example["rubrics"]):
            rubric_item["tags"] = [] if n % 2 else (["cluster:kqa"] if n % 3 == 0 else rubric_item["tags"])
    stripped = tmp_path / "stripped.jsonl"
    stripped.write_text("\n".join(json.dumps(e) for e in examples) + "\n", encoding="utf-8")
    imported = tmp_path / "imported.db"
    _cli(imported, "import-healthbench", str(stripped), "--published", "2024-01-01")
    ours = _graded_tags(imported, tmp_path)
    ref = _reference_of(imported, examples, "case:healthbench:{}")
    assert "cluster:kqa" in ref
    _assert_same(ours, ref)


def test_an_old_import_without_the_original_line_exports_its_items_own_tags() -> None:
    from livemed.answer.ask import conversation
    from livemed.interop.healthbench import parse_example, to_healthbench

    data, _ = SET[0]
    case, rubric = parse_example(data, published=DAY, date_field="option")
    steps = [{k: v for k, v in s.items() if k != "original"} for s in rubric.steps]  # as stored before
    older = rubric.model_copy(update={"steps": steps})
    prompt = [{"role": m["role"], "content": m["content"]} for m in conversation(case)]
    exported = to_healthbench(case, older, prompt)
    assert [i["tags"] for i in exported["rubrics"]] == [
        ["axis:accuracy", "level:example"],
        [],
        ["axis:accuracy", "level:example"],
    ]
