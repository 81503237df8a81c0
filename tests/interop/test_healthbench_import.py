"""`import-healthbench` and `import-kqa` on bad input: every parse problem is one file:line error
naming the field, the other lines load, the command exits 1; findings are spelled out; size limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from livemed.cli import app
from livemed.errors import InputFileError
from livemed.interop.healthbench import FINDING_NO_POSITIVE, finding_kind, read_healthbench
from livemed.interop.kqa import REFERENCE_NAMESPACE, read_kqa
from livemed.records import Case, Rubric
from livemed.store import Store
from tests.interop.test_healthbench import DAY


def good(prompt_id: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "prompt": [{"role": "user", "content": f"My child has a fever ({prompt_id}). What should I do?"}],
        "rubrics": [
            {
                "criterion": "Advises fluids and rest.",
                "points": 5,
                "tags": ["axis:accuracy", "level:example"],
            },
            {"criterion": "Recommends aspirin for a child.", "points": -6, "tags": ["axis:safety"]},
        ],
        "example_tags": ["theme:hedging"],
        "prompt_id": prompt_id,
    }
    return {**data, **changes}


def with_item(prompt_id: str, **item: Any) -> dict[str, Any]:
    base = {"criterion": "Advises fluids and rest.", "points": 5, "tags": ["axis:accuracy"]}
    return good(prompt_id, rubrics=[{**base, **item}])


RAW = "__RAW__"  # a placeholder string replaced by raw JSON text (NaN, 1e999, huge numbers)

# (line as JSON, raw text for the placeholder or None, what the error must say)
BAD: list[tuple[dict[str, Any] | str, str | None, str]] = [
    (good("b1", rubrics=["Advises rest."]), None, "rubrics[0]: expected an object"),
    (
        with_item("b2", tags="axis:accuracy"),
        None,
        "rubrics[0].tags: expected a list of strings, got a string",
    ),
    (with_item("b3", tags=7), None, "rubrics[0].tags: expected a list of strings, got a number"),
    (with_item("b4", tags=[1]), None, "rubrics[0].tags[0]: expected a string, got a number"),
    (
        with_item("b5", tags=["axis:accuracy", "axis:accuracy"]),
        None,
        "rubrics[0].tags: 'axis:accuracy' appears twice",
    ),
    (
        good("b6", example_tags="theme:hedging"),
        None,
        "example_tags: expected a list of strings, got a string",
    ),
    (
        good("b7", example_tags={"theme": "hedging"}),
        None,
        "example_tags: expected a list of strings, got an object",
    ),
    (with_item("b8", points=RAW), "1e999", "rubrics[0].points: expected a finite number, got inf"),
    (with_item("b9", points=RAW), "NaN", "rubrics[0].points: expected a finite number, got nan"),
    (with_item("b10", points=RAW), "-Infinity", "rubrics[0].points: expected a finite number, got -inf"),
    (with_item("b11", points=RAW), "1" + "0" * 400, "rubrics[0].points: the number is too large"),
    (with_item("b12", points=1e300), None, "rubrics[0].points: 1e+300 is out of range"),
    (with_item("b13", points="5"), None, "rubrics[0].points: expected a number, got a string"),
    (with_item("b14", points=True), None, "rubrics[0].points: expected a number, got a boolean"),
    (with_item("b15", criterion=5), None, "rubrics[0].criterion: expected a string, got a number"),
    (
        good("b16", prompt=[{"role": "user", "content": {"text": "hi"}}]),
        None,
        "prompt[0].content: expected a string",
    ),
    ({**good("b17"), "prompt_id": ["x"]}, None, "prompt_id: expected a string, got a list"),
    (good("b18", ideal_completions_data="Rest."), None, "ideal_completions_data: expected an object or null"),
    (good("b19", rubrics=None), None, "rubrics: expected a non-empty list of items, got null"),
    (good("b20", extra={"x": RAW}), "NaN", "extra.x: expected a finite number, got nan"),
    (with_item("b21", points=RAW), "1" * 5000, "invalid JSON: Exceeds the limit"),
    ("[" * 100_000 + "]" * 100_000, None, "invalid JSON: nested too deeply"),
]


def line_of(data: dict[str, Any] | str, raw: str | None) -> str:
    text = data if isinstance(data, str) else json.dumps(data)
    return text.replace(json.dumps(RAW), raw) if raw is not None else text


@pytest.mark.parametrize(("data", "raw", "message"), BAD, ids=[m for _, _, m in BAD])
def test_a_bad_field_is_one_line_error_naming_it(
    tmp_path: Path, data: dict[str, Any] | str, raw: str | None, message: str
) -> None:
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join([json.dumps(good("g1")), line_of(data, raw), json.dumps(good("g2"))]) + "\n")
    out = list(read_healthbench(path, published=DAY, date_field="option"))
    assert [type(o).__name__ for o in out] == ["tuple", "InputFileError", "tuple"]
    error = out[1]
    assert isinstance(error, InputFileError)
    assert str(error).startswith(f"{path}:2: {message}")


def invoke(store: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--store", store, *args], env={"COLUMNS": "300"})


def test_the_cli_reports_every_bad_line_and_loads_the_rest(any_store: Store, tmp_path: Path) -> None:
    path = tmp_path / "hb.jsonl"
    lines = []
    for n, (data, raw, _) in enumerate(BAD):
        lines += [json.dumps(good(f"ok{n}")), line_of(data, raw)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01")
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit)  # no traceback
    output = " ".join(result.output.split())
    for n, (_, _, message) in enumerate(BAD):
        assert f"{path}:{2 * n + 2}: {message}" in output
    assert f"imported {len(BAD)} case(s) with rubrics; {len(BAD)} bad line(s)" in output
    assert {c.source_id for c in any_store.iter(Case)} == {f"ok{n}" for n in range(len(BAD))}


def test_findings_are_spelled_out_and_an_unscorable_example_is_named(
    any_store: Store, tmp_path: Path
) -> None:
    negative = good("neg-1", rubrics=[{"criterion": "Recommends aspirin.", "points": -6, "tags": []}])
    rounded = with_item("half-1", points=2.5)
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (negative, rounded, good("fine-1"))) + "\n")
    result = invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01")
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "imported 3 case(s) with rubrics; 0 bad line(s); 3 mapping finding(s):" in output
    assert "1 × no known axis tag (e.g. neg-1)" in output
    assert f"1 × {FINDING_NO_POSITIVE} (e.g. neg-1)" in output
    assert "1 × points kept, weight rounded (e.g. half-1)" in output
    assert "1 example(s) have no positive points and can never be scored (e.g. neg-1)" in output
    rubric = any_store.get(Rubric, "rubric:case:healthbench:neg-1")
    assert rubric is not None
    assert FINDING_NO_POSITIVE in [finding_kind(f) for f in rubric.findings]


def test_size_limits_refuse_one_line_each(any_store: Store, tmp_path: Path) -> None:
    huge = good("huge-1", ideal_completions_data={"ideal_completion": "x" * 10_000_000})
    many = good(
        "many-1",
        rubrics=[{"criterion": f"Criterion {i}.", "points": 1, "tags": []} for i in range(50_000)],
    )
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in (good("a"), huge, many, good("b"))) + "\n")
    result = invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01")
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert f"{path}:2: record of {len(json.dumps(huge)):,} bytes" in output
    assert (
        "bytes is over the limit of 5,000,000 bytes ([import] max_record_bytes, --max-record-bytes)" in output
    )
    assert (
        f"{path}:3: rubrics: 50,000 entries, over the limit of 500 ([import] max_criteria, --max-criteria)"
        in output
    )
    assert {c.source_id for c in any_store.iter(Case)} == {"a", "b"}


def test_limits_from_options_and_from_the_project_file(tmp_path: Path) -> None:
    items = [
        {"criterion": f"Does thing number {i} " + "well " * 80, "points": 1, "tags": []} for i in range(3)
    ]
    three = good("three", rubrics=items)  # a line of more than 1,000 bytes
    path = tmp_path / "hb.jsonl"
    path.write_text(json.dumps(three) + "\n")
    store = str(tmp_path / "s.db")
    refused = invoke(store, "import-healthbench", str(path), "--max-criteria", "2")
    assert refused.exit_code == 1
    assert "rubrics: 3 entries, over the limit of 2" in " ".join(refused.output.split())
    small = invoke(store, "import-healthbench", str(path), "--max-record-bytes", "1000")
    assert small.exit_code == 1
    assert "over the limit of 1,000 bytes" in small.output
    config = tmp_path / "livemed.toml"
    config.write_text(f'store = "{store}"\n[import]\nmax_criteria = 2\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(config), "import-healthbench", str(path)])
    assert result.exit_code == 1
    assert "over the limit of 2" in result.output
    config.write_text(f'store = "{store}"\n[import]\nmax_criteria = 3\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["--config", str(config), "import-healthbench", str(path)])
    assert result.exit_code == 0, result.output


# --------------------------------------------------------------------------- K-QA


def test_kqa_limits_and_field_errors_on_the_real_file(
    any_store: Store, tmp_path: Path, shared_data: Path
) -> None:
    real = (shared_data / "k-qa" / "questions_w_answers.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in real[:40]]
    over = [
        n
        for n, r in enumerate(rows, start=1)
        if len(r.get("Must_have") or []) > 8 or len(r.get("Nice_to_have") or []) > 8
    ]
    assert over  # the real file has rows with more than 8 statements
    path = tmp_path / "kqa.jsonl"
    bad = {**rows[0], "Question": 42}
    path.write_text("\n".join([*real[:40], json.dumps(bad), "x" * 3000]) + "\n", encoding="utf-8")
    result = invoke(
        any_store.url, "import-kqa", str(path), "--published", "2024-01-01", "--max-criteria", "8",
        "--max-record-bytes", "20000",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    for n in over:
        assert f"{path}:{n}: " in output
        assert "entries, over the limit of 8 ([import] max_criteria, --max-criteria)" in output
    assert f"{path}:41: Question: expected a string, got a number" in output
    assert f"{path}:42: record of 3,000 bytes is over the limit of 20,000" not in output  # under the limit
    assert f"{path}:42: invalid JSON" in output
    assert len(list(any_store.iter(Case))) == 40 - len(over)
    assert len(any_store.state_items(REFERENCE_NAMESPACE)) == 40 - len(over)


def test_kqa_refuses_a_line_over_the_size_limit(tmp_path: Path) -> None:
    row = {
        "Question": "Is it gout?",
        "Free_form_answer": "Probably. See a doctor.",
        "Must_have": ["It may be gout"],
    }
    path = tmp_path / "kqa.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps({**row, "Question": "q" * 6_000_000}) + "\n")
    out = list(read_kqa(path, published=DAY, date_field="option", max_record_bytes=5_000_000))
    assert [type(o).__name__ for o in out] == ["KqaItem", "InputFileError"]
    assert str(out[1]).startswith(f"{path}:2: record of 6,000,0")


# --------------------------------------------------------------------------- human labels


def test_label_points_that_are_not_finite_numbers_are_line_errors(tmp_path: Path) -> None:
    from livemed.interop.labels import read_labels

    base = {"response": "Rest.", "criterion": "Advises rest", "label": "met"}
    path = tmp_path / "labels.jsonl"
    lines = [
        json.dumps({**base, "points": 2}),
        '{"response": "Rest.", "criterion": "Advises rest", "label": "met", "points": NaN}',
    ]
    lines += [json.dumps({**base, "points": [1]}), json.dumps({**base, "points": 0})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    first, *errors = list(read_labels(path))
    assert not isinstance(first, InputFileError)
    assert first.points == 2.0
    assert [str(e).removeprefix(f"{path}:") for e in errors] == [
        "2: points: expected a finite number, got nan",
        "3: points: expected a number, got a list",
        "4: points must not be 0",
    ]
    csv_path = tmp_path / "labels.csv"
    csv_path.write_text(
        "response,criterion,label,points\nRest.,Advises rest,met,inf\nRest.,Advises rest,met,\n"
    )
    bad, default = list(read_labels(csv_path))
    assert str(bad) == f"{csv_path}:2: points: expected a finite number, got inf"
    assert not isinstance(default, InputFileError)
    assert default.points == 1.0
