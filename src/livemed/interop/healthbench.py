"""HealthBench JSONL (openai/simple-evals) ⇄ livemed cases and rubrics.

A HealthBench line holds `prompt` (chat messages), `rubrics` (`criterion`, `points`, `tags` such as
`axis:accuracy` and `level:example`), `example_tags` (such as `theme:emergency_referrals`),
`prompt_id` and optionally `ideal_completions_data`.

Import mapping (faithful first):
- each line → a `Case` (source "healthbench", source_id = prompt_id, `messages` = the prompt, query =
  the last user turn, advice = the ideal completion when given, else the positive criteria, status
  "accepted") and a `Rubric` (themes from `theme:` tags; original example tags and ideal completion
  kept in `Rubric.steps` for a lossless export);
- each rubric item → a `Criterion` keeping the original `points` and `tags`. Scores use `points`
  (`Criterion.value`), so HealthBench numbers are reproduced exactly. The integer `weight` livemed
  requires is `round(points)` clipped to [-10, 10] (±1 when it rounds to 0), with a finding on the
  rubric whenever it differs from the points. Items with 0 points carry no weight in any score and
  are skipped with a finding. Axis: `axis:communication_quality` and `axis:instruction_following`
  map to livemed's `communication`; a missing or unknown axis maps to `accuracy`, with a finding.
  That axis is a stand-in livemed's records need: scores never use it. Per-axis and per-tag scores
  of imported criteria use exactly their original tags, so an item without tags counts only in the
  overall score, as in simple-evals; native livemed criteria keep their axes.
- the case's `doc_id` is `healthbench:<prompt_id>`; no `Doc` record stands behind it (the file is
  the source);
- HealthBench has no publication dates: the caller supplies one (see `interop.dates`), and the
  case records where it came from in `Case.date_field`.

Export: imported examples are written back as they came; livemed's own cases carry their gold advice
as `ideal_completions_data` with `ideal_completions_group` "livemed_reference" (not one of
simple-evals' physician groups, so its physician-completion modes skip these examples instead of
failing on a missing key).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from livemed.errors import InputFileError
from livemed.jsonl import parse_objects
from livemed.records import Case, Criterion, Narrative, Provenance, Rubric

SOURCE = "healthbench"
LIVEMED_GROUP = "livemed_reference"  # `ideal_completions_group` of exported livemed gold advice
AXIS_MAP = {
    "accuracy": "accuracy",
    "completeness": "completeness",
    "communication_quality": "communication",
    "communication": "communication",
    "context_awareness": "context_awareness",
    "instruction_following": "communication",
    "safety": "safety",
}
EXPORT_AXIS = {"communication": "communication_quality"}
NO_REFERENCE = "(this HealthBench example has neither an ideal completion nor a positive criterion)"


def _weight(points: float) -> int:
    weight = max(-10, min(10, round(points)))
    return weight if weight != 0 else (1 if points > 0 else -1)


def _criterion(item: dict[str, Any], theme: str | None, findings: list[str]) -> Criterion | None:
    text = str(item.get("criterion", "")).strip()
    points = item.get("points")
    if not text or not isinstance(points, int | float) or isinstance(points, bool):
        raise ValueError(f"rubric item needs a 'criterion' text and numeric 'points', got {item!r:.120}")
    if points == 0:
        findings.append(f"import: skipped 0-point criterion {text[:60]!r}")
        return None
    tags = [str(t) for t in item.get("tags", [])]
    axes = [t.removeprefix("axis:") for t in tags if t.startswith("axis:")]
    axis = AXIS_MAP.get(axes[0]) if axes else None
    if axis is None:
        findings.append(f"import: {text[:60]!r} has axis {axes[:1] or 'none'}; mapped to accuracy")
        axis = "accuracy"
    weight = _weight(float(points))
    if weight != points:
        findings.append(
            f"import: points {points:g} of {text[:60]!r} stored as weight {weight}; scores use the points"
        )
    return Criterion(
        text=text,
        polarity="positive" if points > 0 else "negative",
        axis=axis,
        weight=weight,
        theme=theme,
        points=float(points),
        tags=tags,
    )


def _messages(prompt: Any) -> list[dict[str, str]]:
    if not isinstance(prompt, list) or not prompt:
        raise ValueError("'prompt' must be a non-empty list of messages")
    messages = []
    for message in prompt:
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"bad prompt message {message!r:.80}")
        messages.append({"role": str(message["role"]), "content": str(message.get("content", ""))})
    return messages


def parse_example(data: dict[str, Any], *, published: datetime, date_field: str) -> tuple[Case, Rubric]:
    """One HealthBench example → (Case, Rubric); raises ValueError with a readable message."""
    prompt_id = str(data.get("prompt_id") or "").strip()
    if not prompt_id:
        raise ValueError("missing 'prompt_id'")
    messages = _messages(data.get("prompt"))
    users = [m["content"] for m in messages if m["role"] == "user" and m["content"].strip()]
    if not users:
        raise ValueError("the prompt has no user message")
    example_tags = [str(t) for t in data.get("example_tags", [])]
    themes = [t.removeprefix("theme:") for t in example_tags if t.startswith("theme:")]
    findings: list[str] = []
    items = data.get("rubrics")
    if not isinstance(items, list) or not items:
        raise ValueError("'rubrics' must be a non-empty list")
    criteria = [c for item in items if (c := _criterion(item, themes[0] if themes else None, findings))]
    if not criteria:
        raise ValueError("no rubric item has non-zero points")
    ideal = data.get("ideal_completions_data") or None
    ideal_text = str(ideal.get("ideal_completion", "")).strip() if isinstance(ideal, dict) else ""
    positives = [c.text for c in criteria if c.polarity == "positive"]
    advice = [ideal_text] if ideal_text else positives or [NO_REFERENCE]
    case = Case(
        doc_id=f"{SOURCE}:{prompt_id}",
        source=SOURCE,
        source_id=prompt_id,
        published=published,
        date_field=date_field,
        narrative=Narrative(),
        query=users[-1],
        advice=advice,
        messages=messages,
        status="accepted",
        provenance=Provenance(settings={"imported_from": SOURCE}),
    )
    step = {
        "step": "import",
        "source": SOURCE,
        "example_tags": example_tags,
        "ideal_completions_data": ideal,
        "original": data,  # exported back as it came: 0-point items, unknown keys and all
    }
    rubric = Rubric(
        case_id=case.id,
        criteria=criteria,
        themes=themes,
        findings=findings,
        steps=[step],
        published=published,
        provenance=Provenance(settings={"imported_from": SOURCE}),
    )
    if (repeated := rubric.repeated_criterion()) is not None:
        raise ValueError(f"rubric item {repeated.text!r} appears twice with the same axis and points")
    return case, rubric


def read_healthbench(
    path: Path, *, published: datetime, date_field: str
) -> Iterator[tuple[Case, Rubric] | InputFileError]:
    """Stream a HealthBench JSONL file: (case, rubric) per good line, an error naming file:line otherwise."""
    return parse_objects(path, lambda data: parse_example(data, published=published, date_field=date_field))


def criterion_tags(criterion: Criterion, *, imported: bool) -> list[str]:
    """A criterion's HealthBench rubric tags. An imported criterion has exactly its original tags (none
    when it came with none: simple-evals counts such an item only in the overall score); a native
    livemed criterion gets its axis and `level:example` (what an export writes for it)."""
    if imported or criterion.tags:
        return list(criterion.tags)
    return [f"axis:{EXPORT_AXIS.get(criterion.axis, criterion.axis)}", "level:example"]


def _import_step(rubric: Rubric) -> dict[str, Any] | None:
    return next((s for s in rubric.steps if s.get("step") == "import" and s.get("source") == SOURCE), None)


def is_imported(rubric: Rubric) -> bool:
    """Whether the rubric came from a HealthBench file (its criteria keep their own tags)."""
    return _import_step(rubric) is not None


def example_tags_of(rubric: Rubric) -> list[str]:
    """The example's HealthBench tags: the original ones, or `theme:<t>` for each of the rubric's themes."""
    imported = _import_step(rubric)
    if imported is not None:
        return [str(tag) for tag in imported.get("example_tags", [])]
    return [f"theme:{t}" for t in rubric.themes]


def to_healthbench(case: Case, rubric: Rubric, prompt: list[dict[str, str]]) -> dict[str, Any]:
    """A livemed case and rubric as one HealthBench example (a dict to write as a JSONL line)."""
    imported = _import_step(rubric)
    if imported is not None and isinstance(imported.get("original"), dict):
        return dict(imported["original"])
    example_tags = example_tags_of(rubric)
    if imported is not None:  # imported before livemed kept the original line
        ideal = imported.get("ideal_completions_data")
    else:
        ideal = {  # the gold advice LA, in a group that is none of simple-evals' physician groups
            "ideal_completion": "\n".join(case.advice),
            "ideal_completions_group": LIVEMED_GROUP,
            "ideal_completions_ref_completions": [],
        }
    return {
        "prompt": prompt,
        "rubrics": [
            {
                "criterion": c.text,
                "points": (int(c.value) if float(c.value).is_integer() else c.value),
                "tags": criterion_tags(c, imported=imported is not None),
            }
            for c in rubric.criteria
        ],
        "example_tags": example_tags,
        "prompt_id": case.source_id if case.source == SOURCE else case.id,
        "ideal_completions_data": ideal,
    }
