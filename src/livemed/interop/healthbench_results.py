"""HealthBench results in openai/simple-evals' own JSON layout, from livemed `Score` records.

simple-evals (`simple_evals.py` with `healthbench_eval.py`) writes, per eval and model, the metrics of
its `EvalResult` plus `score`, keys sorted: for every name — `overall_score`, `score` and each example
or rubric tag — the mean clipped to [0, 1] under the name itself, `<name>:n_samples` and
`<name>:bootstrap_std` (the standard deviation of the clipped mean over 1,000 bootstrap resamples).
Each answer is one sample (several samples per case count like simple-evals' repeats). The values come
from HealthBench-convention scores (`Score.score` is the unclipped case score there, `Score.per_tag`
simple-evals' tag scores); livemed's bootstrap is seeded, simple-evals' is not, so the stds agree in
distribution, not digit for digit.

Beside it, `<stem>_allresults.json` holds what simple-evals' `_allresults.json` holds: `score`,
`metrics` (the same metrics without `score`), and per sample an HTML page (`htmls`), the conversation
with the reply (`convos`) and `metadata.example_level_metadata` — the sample's score, its token usage,
its rubric items with `criteria_met` and the grader's explanation, the prompt, the completion,
`prompt_id` and `completion_id` (sha256 of prompt id and reply, as simple-evals makes it). The prompt is
what livemed sends the candidate for the case (`candidate_messages`); a verdict that failed (in a score
whose failure policy counted it) has `criteria_met` null and says how it counted; token counts livemed does
not record (cached input, reasoning output) are null.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

from livemed.records import Answer, Case, Criterion, Grade, GradeFailure, Rubric, Score

if TYPE_CHECKING:
    from livemed.domains import DomainPack
    from livemed.models import Message
    from livemed.store import Store

Verdicts = dict[tuple[str, str], Grade | GradeFailure]  # (answer id, criterion id) -> the judge's verdict


def simple_evals_metrics(scores: Sequence[Score], *, seed: int = 0) -> dict[str, float | int]:
    """The metrics dict simple-evals writes for one model's HealthBench run (keys sorted)."""
    from livemed.common import stats

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
        metrics[name] = stats.aggregate(found, "healthbench")
        metrics[f"{name}:n_samples"] = len(found)
        std = stats.bootstrap(found, "healthbench", seed=seed)[2] if len(found) > 1 else 0.0
        metrics[f"{name}:bootstrap_std"] = std
    return dict(sorted(metrics.items()))


def results_path(path: Path, model: str, several: bool) -> Path:
    """Where one model's results go: `path` itself, or `<stem>_<model>.json` beside it for several."""
    if not several:
        return path
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", model).strip("_")
    return path.with_name(f"{path.stem}_{safe}{path.suffix or '.json'}")


def allresults_path(path: Path) -> Path:
    """Where the full results of a metrics file go: `<stem>_allresults.json` beside it (simple-evals')."""
    return path.with_name(f"{path.stem}_allresults.json")


def simple_evals_allresults(
    store: Store, scores: Sequence[Score], metrics: dict[str, float | int], pack: DomainPack | None = None
) -> dict[str, Any]:
    """The `_allresults.json` simple-evals writes beside one model's metrics (see the module's text)."""
    chosen = sorted(scores, key=lambda s: s.answer_id)
    answers = store.get_many(Answer, [s.answer_id for s in chosen])
    cases = store.get_many(Case, sorted({s.case_id for s in chosen}))
    rubrics = store.get_many(Rubric, [f"rubric:{key}" for key in cases])
    verdicts = _verdicts(store, chosen)
    samples = [
        _sample(s, answers[s.answer_id], cases[s.case_id], rubrics[f"rubric:{s.case_id}"], verdicts, pack)
        for s in chosen
    ]
    return {
        "score": metrics["score"],
        "metrics": {name: value for name, value in metrics.items() if name != "score"},
        "htmls": [html for html, _, _ in samples],
        "convos": [convo for _, convo, _ in samples],
        "metadata": {"example_level_metadata": [meta for _, _, meta in samples]},
    }


def _verdicts(store: Store, scores: Sequence[Score]) -> Verdicts:
    """Each scored answer's verdicts by its scores' judge: grades, and the failures its policy counted."""
    judges = {(s.answer_id, s.judge) for s in scores}
    ids = sorted({s.answer_id for s in scores})
    found: Verdicts = {}
    # the failures first: a grade, where both are stored, is the later word
    both: list[Grade | GradeFailure] = [*store.by_parents(GradeFailure, ids), *store.by_parents(Grade, ids)]
    for verdict in both:
        if (verdict.answer_id, verdict.judge) in judges:
            found[(verdict.answer_id, verdict.criterion_id)] = verdict
    return found


def _sample(
    score: Score, answer: Answer, case: Case, rubric: Rubric, verdicts: Verdicts, pack: DomainPack | None
) -> tuple[str, list[Message], dict[str, Any]]:
    """One sample's HTML, conversation and example-level metadata."""
    from livemed.answer.ask import candidate_messages
    from livemed.interop.healthbench import prompt_id_of

    prompt = candidate_messages(case, pack)
    completion: Message = {"role": "assistant", "content": answer.text}
    how = _COUNTED[score.failure_policy]
    items = [_rubric_item(c, verdicts.get((answer.id, c.id)), rubric, how) for c in rubric.criteria]
    key = prompt_id_of(case)
    meta = {
        "score": score.score,
        "usage": {
            "input_tokens": answer.prompt_tokens,
            "input_cached_tokens": None,
            "output_tokens": answer.completion_tokens,
            "output_reasoning_tokens": None,
            "total_tokens": answer.prompt_tokens + answer.completion_tokens,
        },
        "rubric_items": items,
        "prompt": prompt,
        "completion": [completion],
        "prompt_id": key,
        "completion_id": hashlib.sha256((key + answer.text).encode("utf-8")).hexdigest(),
    }
    return _html(prompt, completion, score.score, items), [*prompt, completion], meta


_COUNTED = {"strict": "not scored", "not-met": "counted as not met", "exclude": "left out of the score"}


def _rubric_item(
    criterion: Criterion, verdict: Grade | GradeFailure | None, rubric: Rubric, how: str
) -> dict[str, Any]:
    from livemed.interop.healthbench import criterion_tags, is_imported

    value = criterion.value
    item = {
        "criterion": criterion.text,
        "points": int(value) if float(value).is_integer() else value,
        "tags": criterion_tags(criterion, imported=is_imported(rubric)),
    }
    if isinstance(verdict, Grade):
        return {**item, "criteria_met": verdict.met, "explanation": verdict.explanation}
    why = verdict.reason if verdict is not None else "not graded"
    return {**item, "criteria_met": None, "explanation": f"no verdict ({why}): {how}"}


def _html(prompt: list[Message], completion: Message, score: float, items: list[dict[str, Any]]) -> str:
    """The sample as simple-evals' report shows it: the prompt, the reply, the score, the graded items
    (every text escaped)."""

    def message(m: Message) -> str:
        role = escape(m["role"])
        return f"<div class='message {role}'><b>{role}</b><pre>{escape(m['content'])}</pre></div>"

    grades = "<br>".join(f"[{i['criteria_met']}] [{i['points']}] {escape(i['criterion'])}" for i in items)
    return (
        "<h3>Prompt conversation</h3>\n"
        + "\n".join(message(m) for m in prompt)
        + f"\n<h3>Sampled message</h3>\n{message(completion)}\n<h3>Results</h3>\n"
        + f"<p>Score: {score}</p>\n<p>Rubrics with grades: {grades}</p>"
    )
