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

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from livemed.errors import InputFileError
from livemed.interop import fields
from livemed.interop.chunks import Lines
from livemed.interop.fields import kind_of
from livemed.jsonl import decode_exact, line_object, parse_object, parse_objects
from livemed.records import Case, Criterion, Provenance, Rubric
from livemed.records.grading import canonical_theme, canonical_themes
from livemed.records.rows import StoredRow, naive_utc, stored_row

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


FINDING_ZERO = "0-point item skipped"
FINDING_AXIS = "no known axis tag"
FINDING_WEIGHT = "points kept, weight rounded"
FINDING_NO_POSITIVE = "no positive points (never scored)"
MAX_CRITERIA_SETTING = "[import] max_criteria, --max-criteria"
LIMIT_NAME = "[import] max_record_bytes, --max-record-bytes"


def finding(kind: str, detail: str) -> str:
    """A mapping finding as stored on `Rubric.findings`: `import: <kind>: <detail>`."""
    return f"import: {kind}: {detail}"


def finding_kind(text: str) -> str:
    """The kind of a stored mapping finding (`other` for one in another format)."""
    parts = text.split(": ", 2)
    return parts[1] if len(parts) == 3 and parts[0] == "import" else "other"


def _weight(points: float) -> int:
    weight = max(-10, min(10, round(points)))
    return weight if weight != 0 else (1 if points > 0 else -1)


def _plain_criterion(item: Any, theme: str | None) -> dict[str, Any] | None:
    """The `Criterion` (`_criterion`) of the common rubric item, checked in one pass: an object with a
    text, a non-zero number of points within range that is a whole number of weight (-10..10), distinct
    string tags and a known axis. None for any other item (`_checked_criterion` names what is wrong or
    notes a finding)."""
    if type(item) is not dict:
        return None
    text, points, tags = item.get("criterion"), item.get("points"), item.get("tags")
    if type(text) is not str or type(tags) is not list or not (text := text.strip()):
        return None
    if type(points) is not int and type(points) is not float:  # exactly: a bool is no number of points
        return None
    if not (-10 <= points <= 10 and points != 0 and points == int(points)):  # NaN fails the first
        return None
    try:
        "".join(tags)  # every tag a string (one pass in C)
    except TypeError:
        return None
    if len(set(tags)) != len(tags):
        return None
    axis = None
    for tag in tags:
        if tag.startswith("axis:"):
            axis = AXIS_MAP.get(tag[5:])
            break
    if axis is None:
        return None
    return _criterion(text, "positive" if points > 0 else "negative", axis, int(points), theme, points, tags)


def _checked_criterion(
    item: Any, where: str, theme: str | None, findings: list[str]
) -> dict[str, Any] | None:
    """A rubric item field by field: each error names its field, each finding is noted."""
    if not isinstance(item, dict):
        raise ValueError(
            f"{where}: expected an object with 'criterion', 'points' and 'tags', got {kind_of(item)}"
        )
    text = fields.text(item.get("criterion"), f"{where}.criterion")
    points = fields.points(item.get("points"), f"{where}.points")
    tags = fields.string_list(item.get("tags"), f"{where}.tags", unique=True)  # simple-evals asserts it
    if points == 0:
        findings.append(finding(FINDING_ZERO, f"{text[:60]!r} (0 points count in no score)"))
        return None
    axes = [t.removeprefix("axis:") for t in tags if t.startswith("axis:")]
    axis = AXIS_MAP.get(axes[0]) if axes else None
    if axis is None:
        detail = (
            f"{text[:60]!r} has axis {axes[:1] or 'none'}; its livemed axis is accuracy (scores use the tags)"
        )
        findings.append(finding(FINDING_AXIS, detail))
        axis = "accuracy"
    weight = _weight(points)
    if weight != points:
        detail = f"points {points:g} of {text[:60]!r} stored as weight {weight}; scores use the points"
        findings.append(finding(FINDING_WEIGHT, detail))
    return _criterion(text, "positive" if points > 0 else "negative", axis, weight, theme, points, tags)


def _criterion(
    text: str, polarity: str, axis: str, weight: int, theme: str | None, points: float, tags: list[str]
) -> dict[str, Any]:
    """A `Criterion` as validation leaves it: its fields in the model's order, as JSON values."""
    return {
        "text": text,
        "polarity": polarity,
        "axis": axis,
        "weight": weight,
        "theme": theme,
        "source_fact": None,
        "points": float(points),
        "tags": list(tags),
    }


def _messages(prompt: Any) -> list[dict[str, str]]:
    if not isinstance(prompt, list) or not prompt:
        raise ValueError(f"prompt: expected a non-empty list of messages, got {kind_of(prompt)}")
    messages = []
    for index, message in enumerate(prompt):
        if not isinstance(message, dict) or message.get("role") not in ("system", "user", "assistant"):
            raise ValueError(f"prompt[{index}]: expected a message with role system, user or assistant")
        content = message.get("content", "")
        if not isinstance(content, str):  # kept as written: no stripping
            raise ValueError(f"prompt[{index}].content: expected a string, got {kind_of(content)}")
        messages.append({"role": str(message["role"]), "content": content})
    return messages


def _prompt_id(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return fields.text(value, "prompt_id")


def _criteria(
    items: Any, theme: str | None, findings: list[str], max_criteria: int | None
) -> list[dict[str, Any]]:
    """The example's criteria as `_criterion`s (`theme`: the example's first theme, in one spelling)."""
    if not isinstance(items, list) or not items:
        got = "an empty list" if items == [] else kind_of(items)
        raise ValueError(f"rubrics: expected a non-empty list of items, got {got}")
    fields.at_most(items, "rubrics", max_criteria, MAX_CRITERIA_SETTING)
    found = [
        c
        for n, item in enumerate(items)
        if (c := _plain_criterion(item, theme) or _checked_criterion(item, f"rubrics[{n}]", theme, findings))
    ]
    if not found:
        raise ValueError("rubrics: no item has non-zero points")
    if not any(c["polarity"] == "positive" for c in found):
        findings.append(
            finding(FINDING_NO_POSITIVE, "every item has negative points: no answer can be scored")
        )
    return found


def parse_example(
    data: dict[str, Any], *, published: datetime, date_field: str, max_criteria: int | None = None
) -> tuple[Case, Rubric]:
    """One HealthBench example → (Case, Rubric); raises ValueError naming the field at fault.

    `max_criteria`: refuse an example with more rubric items than this."""
    fields.finite_everywhere(data)
    return _parse(data, published, date_field, max_criteria)


def _parse(
    data: dict[str, Any], published: datetime, date_field: str, max_criteria: int | None
) -> tuple[Case, Rubric]:
    """`parse_example` of an object known to hold only finite numbers."""
    return _records(_own_fields(data, max_criteria), published, date_field, _provenance())


class Own(NamedTuple):
    """An example's own fields of its Case and of its Rubric, as their validation leaves them (JSON
    values, in the models' field order). Every other field is the same for each example of an import:
    its date, where the date came from, the import's provenance (`_records`)."""

    case: dict[str, Any]
    rubric: dict[str, Any]


def _own_fields(data: dict[str, Any], max_criteria: int | None) -> Own:
    """Every check of an example, and its own fields; raises ValueError naming the field at fault."""
    prompt_id = _prompt_id(data.get("prompt_id"))
    messages = _messages(data.get("prompt"))
    users = [m["content"] for m in messages if m["role"] == "user" and m["content"].strip()]
    if not users:
        raise ValueError("prompt: no user message")
    example_tags = fields.string_list(data.get("example_tags"), "example_tags", unique=True)
    themes = [t.removeprefix("theme:") for t in example_tags if t.startswith("theme:")]
    theme = (canonical_theme(themes[0]) or None) if themes else None  # as `Criterion.theme` spells it
    findings: list[str] = []
    criteria = _criteria(data.get("rubrics"), theme, findings, max_criteria)
    ideal = data.get("ideal_completions_data") or None
    if not isinstance(ideal, dict | None):
        raise ValueError(f"ideal_completions_data: expected an object or null, got {kind_of(ideal)}")
    ideal_text = str(ideal.get("ideal_completion", "")).strip() if isinstance(ideal, dict) else ""
    positives = [c["text"] for c in criteria if c["polarity"] == "positive"]
    doc_id = f"{SOURCE}:{prompt_id}"
    step = {
        "step": "import",
        "source": SOURCE,
        "example_tags": example_tags,
        "ideal_completions_data": ideal,
        "original": data,  # exported back as it came: 0-point items, unknown keys and all
    }
    if (repeated := _repeated(criteria)) is not None:
        raise ValueError(f"rubric item {repeated!r} appears twice with the same axis and points")
    return Own(
        {
            "doc_id": doc_id,
            "source_id": prompt_id,
            "query": users[-1],
            "advice": [ideal_text] if ideal_text else positives or [NO_REFERENCE],
            "messages": messages,
        },
        {
            "case_id": f"case:{doc_id}",  # `Case.id`
            "criteria": criteria,
            "themes": canonical_themes(themes),
            "findings": findings,
            "steps": [step],
        },
    )


def _provenance() -> Provenance:
    return Provenance(settings={"imported_from": SOURCE})


def _records(own: Own, published: datetime, date_field: str, provenance: Provenance) -> tuple[Case, Rubric]:
    """The example's Case and Rubric, validated."""
    case = Case(
        source=SOURCE,
        published=published,
        date_field=date_field,
        narrative={},  # validated as an empty Narrative with the case, in one call
        status="accepted",
        provenance=provenance,
        **own.case,
    )
    rubric = Rubric(published=published, provenance=provenance, **own.rubric)
    return case, rubric


def _repeated(criteria: list[dict[str, Any]]) -> str | None:
    """The text of a criterion another one shares its id with (`Rubric.repeated_criterion`), without
    hashing: a criterion's id is a hash of (text, axis, weight), so two share one exactly when those
    are equal."""
    seen: set[tuple[str, str, int]] = set()
    for criterion in criteria:
        if (key := (criterion["text"], criterion["axis"], criterion["weight"])) in seen:
            return key[0]
        seen.add(key)
    return None


def read_healthbench(
    path: Path,
    *,
    published: datetime,
    date_field: str,
    max_record_bytes: int | None = None,
    max_criteria: int | None = None,
) -> Iterator[tuple[Case, Rubric] | InputFileError]:
    """Stream a HealthBench JSONL file: (case, rubric) per good line, an error naming file:line otherwise
    (a line over `max_record_bytes` or with more than `max_criteria` rubric items is one such error)."""
    return parse_objects(
        path,
        lambda data: _parse(data, published, date_field, max_criteria),
        max_bytes=max_record_bytes,
        limit_name=LIMIT_NAME,
        lenient=fields.finite_everywhere,
    )


class Kept(NamedTuple):
    """An example whose case the store holds already: not parsed again (`stored_lines`)."""

    case_id: str


def case_id_of(data: dict[str, Any]) -> str | None:
    """The id an example's case gets (`Case.id` of `parse_example`), None when its prompt_id is bad."""
    try:
        return f"case:{SOURCE}:{_prompt_id(data.get('prompt_id'))}"
    except ValueError:
        return None


def stored_lines(lines: Lines, stored: Callable[[list[str]], set[str]]) -> frozenset[int]:
    """The numbers of the lines whose case `stored` (e.g. `Store.has` of kind case) says is stored,
    from the lines' prompt ids alone; a line that does not decode is never among them."""
    ids: dict[int, str] = {}
    for number, raw in lines:
        data = decode_exact(raw) if isinstance(raw, bytes) else None
        if isinstance(data, dict) and (case_id := case_id_of(data)) is not None:
            ids[number] = case_id
    found = stored(list(dict.fromkeys(ids.values())))
    return frozenset(number for number, case_id in ids.items() if case_id in found)


class Prepared(NamedTuple):
    """An example ready to store: its case's id and source id, the rubric's findings, both rows."""

    case_id: str
    source_id: str
    findings: list[str]
    rows: tuple[StoredRow, StoredRow]


class Bad(NamedTuple):
    """A line that is not a good example: its number, what is wrong, and the id its case would have
    when orjson reads the line and its prompt_id is good (the same lines `stored_lines` looks up)."""

    line: int
    detail: str
    case_id: str | None


Example = Prepared | Kept | Bad


@dataclass(frozen=True)
class ExampleChunks:
    """Parses a chunk of a HealthBench file's lines (`interop.chunks`) into `Prepared` examples, a bad
    line into `Bad`, an already stored one into `Kept`: `read_healthbench`'s results, made into store
    rows where they are parsed (picklable, so that a worker process can run it)."""

    path: Path
    published: datetime
    date_field: str
    max_record_bytes: int | None = None
    max_criteria: int | None = None

    def __call__(self, lines: Lines, stored: frozenset[int] = frozenset()) -> list[Example]:
        """The chunk's examples in order; a line among `stored` (`stored_lines`) becomes `Kept`."""
        out: list[Example] = []
        rows = _Rows(self.published, self.date_field, _provenance())
        for number, raw in lines:
            if number in stored and isinstance(raw, bytes):
                data = decode_exact(raw)
                if isinstance(data, dict) and (case_id := case_id_of(data)) is not None:
                    out.append(Kept(case_id))
                    continue
            item = line_object(self.path, number, raw, self.max_record_bytes, LIMIT_NAME)
            if item is None:
                continue
            own = parse_object(self.path, item, self._own_fields, fields.finite_everywhere)
            if isinstance(own, InputFileError):
                decoded = item[1] if not isinstance(item, InputFileError) and item[2] else None
                out.append(Bad(number, own.detail, case_id_of(decoded) if decoded is not None else None))
                continue
            exact = not isinstance(item, InputFileError) and item[2]
            out.append(
                Prepared(
                    own.rubric["case_id"], own.case["source_id"], own.rubric["findings"], rows.of(own, exact)
                )
            )
        return out

    def _own_fields(self, data: dict[str, Any]) -> Own:
        return _own_fields(data, self.max_criteria)


class _Rows:
    """The store rows of a chunk's examples. The first example's Case and Rubric are validated and
    dumped as JSON values: every other field of theirs is the same for each example of the chunk (its
    date, where the date came from, one provenance), so a later example's payload is that dump with
    the example's own fields (`Own`, as validation leaves them: `_own_fields` checked them all) put in
    place, written by orjson: byte for byte the payload that validating and dumping each example makes
    (tests/interop/test_import_path.py), in less than half the time (docs/benchmarks.md). A line that
    Python's json read (a number orjson does not read exactly) is validated and dumped on its own."""

    def __init__(self, published: datetime, date_field: str, provenance: Provenance) -> None:
        self.published, self.date_field, self.provenance = published, date_field, provenance
        self.published_at = naive_utc(published)
        self.templates: tuple[dict[str, Any], dict[str, Any]] | None = None

    def of(self, own: Own, exact: bool) -> tuple[StoredRow, StoredRow]:
        if self.templates is None or not exact:
            case, rubric = _records(own, self.published, self.date_field, self.provenance)
            if self.templates is None and exact:
                self.templates = (case.model_dump(mode="json"), rubric.model_dump(mode="json"))
            return stored_row(case), stored_row(rubric)
        case_json, rubric_json = self.templates
        case_id, doc_id = own.rubric["case_id"], own.case["doc_id"]
        return (
            StoredRow(Case.kind, case_id, doc_id, self.published_at, _dumps({**case_json, **own.case})),
            StoredRow(
                Rubric.kind,
                f"rubric:{case_id}",
                case_id,
                self.published_at,
                _dumps({**rubric_json, **own.rubric}),
            ),
        )


def _dumps(value: dict[str, Any]) -> str:
    return orjson.dumps(value).decode()


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


def prompt_id_of(case: Case) -> str:
    """The case's HealthBench `prompt_id`: an imported example's own, else the case id."""
    return case.source_id if case.source == SOURCE else case.id


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
        "prompt_id": prompt_id_of(case),
        "ideal_completions_data": ideal,
    }
