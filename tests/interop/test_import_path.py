"""The fast import path (orjson, prepared rows, worker processes, the compiled upsert) stores exactly
what the record models make: every payload byte for byte `parse_example` + `model_dump_json` (only each
record's creation time differs), bad lines reported by file:line with workers too, a re-import writes
nothing."""

from __future__ import annotations

import json
import multiprocessing
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from typer.testing import CliRunner, Result

from livemed.cli import app
from livemed.errors import StoreOpenError
from livemed.interop import chunks
from livemed.interop.healthbench import (
    Bad,
    ExampleChunks,
    Kept,
    Prepared,
    case_id_of,
    parse_example,
    stored_lines,
)
from livemed.jsonl import decode_exact, json_objects, read_lines
from livemed.records import RECORD_TYPES, Case, Rubric
from livemed.records.rows import stored_row
from livemed.store import Store, naive_utc
from livemed.store.schema import records_table
from tests.interop.test_healthbench import DAY
from tests.interop.test_healthbench_import import BAD, good, line_of, with_item

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from scale import workload  # the benchmark's generator: the shape measured

CREATED = re.compile(r'"created_at":"[^"]*"')


def invoke(store: str, *args: str) -> Result:
    return CliRunner().invoke(app, ["--store", store, *args], env={"COLUMNS": "300"})


def varied() -> list[dict[str, Any]]:
    """Examples that take every branch of the mapping, with text JSON escapes and non-ASCII."""
    return [
        good("v-plain"),
        good(
            "v-ümlaut",
            prompt=[{"role": "user", "content": 'Fieber 39,5 °C — "was tun"?\n\ttab \\ \u2028 😀'}],
        ),
        with_item("v-half", points=2.5),
        with_item("v-tiny", points=1e-7),
        with_item("v-big", points=999_999.0),
        with_item("v-noaxis", tags=[]),
        good("v-zero", rubrics=[*good("x")["rubrics"], {"criterion": "Nothing.", "points": 0, "tags": []}]),
        good("v-neg", rubrics=[{"criterion": "Recommends aspirin.", "points": -6, "tags": ["axis:safety"]}]),
        good(
            "v-ideal", ideal_completions_data={"ideal_completion": " Rest. ", "ideal_completions_group": "G"}
        ),
        good("v-extra", unknown={"nested": [1, 2.0, None, True, "s", {"k": -0.0}]}),
        good("v-longint", unknown=12345678901234567890123),  # past 64 bits: Python's json reads it
        good("v-theme", example_tags=["theme:Emergency_Referrals", "physician_agreed_category:x"]),
        {**good("v-int-id"), "prompt_id": 1234},
        good("v-system", prompt=[{"role": "system", "content": "Be brief."}, *good("y")["prompt"]]),
        good(
            "v-controls",
            prompt=[{"role": "user", "content": "nul \u0000 bel \u0007 us \u001f del \u007f / \\"}],
        ),
        good(
            "v-floats",
            unknown=[1e300, 5e-324, 0.1, 1.7976931348623157e308, -2.5e-5, 1e16, 9223372036854775807],
        ),
        good("v-themes", example_tags=["theme:Global_Health", "theme:global health", "theme:hedging"]),
        good("v-no-theme", example_tags=[]),
        good(  # a plain item and one with a finding in one rubric
            "v-mixed",
            rubrics=[*good("z")["rubrics"], {"criterion": "Explains why.", "points": 1.5, "tags": []}],
        ),
        good(
            "v-all-negative",
            rubrics=[{"criterion": "Recommends aspirin.", "points": -6, "tags": ["axis:safety"]}],
        ),
        good("v-no-ideal", ideal_completions_data=None),
    ]


def test_every_payload_is_what_the_record_models_make(tmp_path: Path) -> None:
    lines = [*varied(), *(json.loads(x) for x in workload(tmp_path / "w.jsonl", 40).read_text().splitlines())]
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(json.dumps(d, ensure_ascii=False) for d in lines) + "\n", encoding="utf-8")
    for workers in ("0", "1"):
        store = tmp_path / f"s{workers}.db"
        result = invoke(
            str(store),
            "import-healthbench",
            str(path),
            "--published",
            DAY.date().isoformat(),
            "--workers",
            workers,
        )
        assert result.exit_code == 0, result.output
        with sqlite3.connect(store) as conn:
            rows = {
                (k, i): (p, pub, par)
                for k, i, p, pub, par in conn.execute(
                    "SELECT kind, id, payload, published_at, parent_id FROM records"
                )
            }
        assert len(rows) == 2 * len(lines)
        for data in lines:
            parsed = parse_example(data, published=DAY, date_field="option")
            assert case_id_of(data) == parsed[0].id
            for record in parsed:
                payload, published, parent = rows[(record.kind, record.id)]
                expected = record.model_dump_json()
                assert CREATED.sub("", payload) == CREATED.sub("", expected)  # byte for byte
                assert RECORD_TYPES[record.kind].model_validate_json(payload).model_dump_json() == payload
                assert parent == record.parent_id
                assert published == str(naive_utc(record.published_at)) + ".000000"


def test_orjson_decodes_a_line_as_pythons_json_or_leaves_it_to_json() -> None:
    lines = [
        '{"a": 1, "b": 2.5, "a": 3}',
        '{"n": 9223372036854775807, "m": -9223372036854775808, "u": 18446744073709551615}',
        '{"big": 18446744073709551616}',
        '{"neg": -9223372036854775809}',
        '{"f": [0.1, 1e-7, 1e300, 5e-324, -0.0, 1E+2, 123456789.123456789]}',
        '{"s": "\\ud83d\\ude00 \\u00e9 é \\n \\" \\\\ \\/"}',
        '{"lone": "\\ud800"}',
        '{"x": NaN}',
        '{"x": -Infinity}',
        '{"x": 1e999}',
        "[1, 2]",
        "   ",
        '{"text": "digits 1234567890123456789 in a string"}',
    ]
    for line in lines:
        raw = (line + "\n").encode()
        fast = decode_exact(raw)
        if fast is None:
            continue
        slow = json.loads(line)
        assert fast == slow, line
        assert _types(fast) == _types(slow), line
    assert decode_exact(b'{"big": 18446744073709551616}\n') is None  # orjson would make it a float
    assert decode_exact(b'{"x": NaN}\n') is None
    assert decode_exact(b'{"a": 1}\n') == {"a": 1}


def _types(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _types(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_types(v) for v in value]
    return type(value)


def test_json_objects_keeps_what_pythons_json_read(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"big": 18446744073709551616, "f": 1.5}\n{"x": NaN}\n{"ok": [1, "é"]}\n')
    out = list(json_objects(path))
    assert out[0] == (1, {"big": 18446744073709551616, "f": 1.5})
    assert isinstance(out[0][1]["big"], int)
    assert out[1][0] == 2  # type: ignore[index]
    assert out[1][1]["x"] != out[1][1]["x"]  # type: ignore[index]  # NaN, as before
    assert out[2] == (3, {"ok": [1, "é"]})


@pytest.mark.parametrize("workers", ["0", "2"])
def test_bad_lines_are_reported_by_file_and_line_with_or_without_workers(
    any_store: Store, tmp_path: Path, workers: str
) -> None:
    lines = []
    for n, (data, raw, _) in enumerate(BAD):
        lines += [json.dumps(good(f"ok{n}")), line_of(data, raw)]
    lines += [json.dumps(good(f"tail{n}")) for n in range(1200)]  # more than two chunks of lines
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke(
        any_store.url, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", workers
    )
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    reported = [int(n) for n in re.findall(rf"{re.escape(str(path))}:(\d+):", output)]
    assert reported == [2 * n + 2 for n in range(len(BAD))]  # each once, in file order
    for n, (_, _, message) in enumerate(BAD):
        assert f"{path}:{2 * n + 2}: {message}" in output
    assert f"imported {len(BAD) + 1200} case(s) with rubrics; {len(BAD)} bad line(s)" in output
    assert any_store.count()["case"] == len(BAD) + 1200


def test_a_reimport_writes_nothing_and_says_so(any_store: Store, tmp_path: Path) -> None:
    path = workload(tmp_path / "w.jsonl", 1500)
    first = invoke(
        any_store.url, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", "1"
    )
    assert first.exit_code == 0, first.output
    with any_store.engine.connect() as conn:
        before = conn.execute(sa.select(records_table.c.id, records_table.c.updated_at)).all()
    again = invoke(
        any_store.url, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", "1"
    )
    assert again.exit_code == 0, again.output
    assert "imported 0 case(s)" in again.output
    assert "1500 already in the store, kept" in again.output
    with any_store.engine.connect() as conn:
        after = conn.execute(sa.select(records_table.c.id, records_table.c.updated_at)).all()
    assert sorted(after) == sorted(before)  # not one row rewritten
    assert len(before) == 3000


def test_chunks_come_back_in_file_order_from_workers(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.jsonl", 1700)
    parse = ExampleChunks(path, DAY, "option")
    here = [p for chunk in chunks.parsed_chunks(path, parse, max_bytes=None, workers=0) for p in chunk]
    there = [p for chunk in chunks.parsed_chunks(path, parse, max_bytes=None, workers=2) for p in chunk]
    assert [p.case_id for p in there] == [p.case_id for p in here]
    assert len(here) == 1700
    assert all(isinstance(p, Prepared) for p in here)
    assert [CREATED.sub("", r.payload) for p in there for r in p.rows] == [  # type: ignore[union-attr]
        CREATED.sub("", r.payload)
        for p in here
        for r in p.rows  # type: ignore[union-attr]
    ]
    assert sum(1 for _ in read_lines(path, None)) == 1700


def test_workers_by_default_only_for_a_large_file(tmp_path: Path) -> None:
    small = workload(tmp_path / "small.jsonl", 10)
    large = tmp_path / "large.jsonl"
    large.write_bytes(small.read_bytes() * (chunks.PARALLEL_FROM_BYTES // small.stat().st_size + 1))
    assert chunks.default_workers(small) == 0
    cores = len(chunks.os.sched_getaffinity(0))  # type: ignore[attr-defined]
    assert chunks.default_workers(large) == min(cores, chunks.MAX_WORKERS)
    assert chunks.default_workers(tmp_path / "missing.jsonl") == 0


def test_cases_and_rubrics_read_back(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.jsonl", 30)
    store = str(tmp_path / "s.db")
    assert (
        invoke(
            store, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", "1"
        ).exit_code
        == 0
    )
    with Store(store) as opened:
        cases = list(opened.iter(Case))
        rubrics = list(opened.iter(Rubric))
    assert len(cases) == len(rubrics) == 30
    assert {r.case_id for r in rubrics} == {c.id for c in cases}


def test_a_stored_example_is_not_parsed_again_unless_replaced(any_store: Store, tmp_path: Path) -> None:
    path = tmp_path / "hb.jsonl"
    path.write_text("\n".join(json.dumps(good(f"p{n}")) for n in range(3)) + "\n")
    assert invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01").exit_code == 0
    changed = [good("p0"), good("p1", rubrics="not a list"), good("p3")]  # p1 stored, now bad
    path.write_text("\n".join(json.dumps(d) for d in changed) + "\n")
    kept = invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01")
    assert kept.exit_code == 0, kept.output
    assert "imported 1 case(s) with rubrics; 0 bad line(s)" in kept.output
    assert "2 already in the store, kept" in kept.output
    replaced = invoke(
        any_store.url, "import-healthbench", str(path), "--published", "2025-01-01", "--replace"
    )
    assert replaced.exit_code == 1
    assert f"{path}:2: rubrics: expected a non-empty list of items" in " ".join(replaced.output.split())
    lines = list(read_lines(path, None))
    assert stored_lines(lines, lambda ids: any_store.has("case", ids)) == frozenset({1, 2, 3})
    parse = ExampleChunks(path, DAY, "option")
    assert parse(lines, frozenset({2}))[1] == Kept("case:healthbench:p1")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_a_line_repeated_in_the_file_is_kept_as_first_written(tmp_path: Path, workers: str) -> None:
    """Into a store that held no case the import looks nothing up: a prompt id met again after its
    batch was written is kept (the first version stays), as when the store is asked."""
    path = workload(tmp_path / "w.jsonl", 2100)  # more than one write batch
    first = json.loads(path.read_text().split("\n")[0])
    again = {**first, "prompt": [{"role": "user", "content": "A changed question?"}]}
    with path.open("a") as handle:
        handle.write(json.dumps(again) + "\n")
    store = str(tmp_path / "s.db")
    result = invoke(store, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", workers)
    assert result.exit_code == 0, result.output
    assert "imported 2100 case(s) with rubrics; 0 bad line(s)" in result.output
    assert "1 already in the store, kept" in result.output
    with Store(store) as opened:
        case = opened.get(Case, f"case:healthbench:{first['prompt_id']}")
    assert case is not None
    assert case.query == first["prompt"][-1]["content"]


def test_the_parse_needs_no_sqlalchemy_so_workers_start_before_the_store_opens() -> None:
    code = (
        "import sys; import livemed.cli.interop_commands, livemed.interop.chunks, "
        "livemed.interop.healthbench; print(sorted(m for m in sys.modules if m.startswith('sqlalchemy')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("workers", ["0", "2"])
def test_stored_lines_are_kept_with_workers_too(any_store: Store, tmp_path: Path, workers: str) -> None:
    """Into a store that holds cases, every chunk is looked up before it is parsed: a stored example is
    kept, one whose line is now bad is kept, not reported, in the first chunks as in the later ones."""
    path = workload(tmp_path / "w.jsonl", 3200)  # the first 2 × 2 + 1 chunks of 500, and more
    assert invoke(any_store.url, "import-healthbench", str(path), "--published", "2025-01-01").exit_code == 0
    lines = [json.loads(line) for line in path.read_text().split("\n") if line]
    for n in (3, 3100):  # a line in the first chunk, one in a later chunk: stored, now bad
        lines[n]["rubrics"] = "not a list"
    lines.append({**lines[0], "prompt_id": "new-one"})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    again = invoke(
        any_store.url, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", workers
    )
    assert again.exit_code == 0, again.output
    assert "imported 1 case(s) with rubrics; 0 bad line(s)" in again.output
    assert "3200 already in the store, kept" in again.output


@pytest.mark.parametrize("workers", ["0", "2"])
def test_into_a_new_store_a_line_repeating_a_written_case_is_kept_even_if_bad(
    tmp_path: Path, workers: str
) -> None:
    path = workload(tmp_path / "w.jsonl", 1500)  # the first 1,000 are written before the last line is read
    first = json.loads(path.read_text().split("\n")[0])
    with path.open("a") as handle:
        handle.write(json.dumps({**first, "rubrics": "not a list"}) + "\n")
    store = str(tmp_path / "new.db")
    result = invoke(store, "import-healthbench", str(path), "--published", "2025-01-01", "--workers", workers)
    assert result.exit_code == 0, result.output
    assert "imported 1500 case(s) with rubrics; 0 bad line(s)" in result.output
    assert "1 already in the store, kept" in result.output


def test_with_overlap_the_first_chunks_are_parsed_before_ready_and_whole(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.jsonl", 4000)  # 8 chunks
    parse = ExampleChunks(path, DAY, "option")
    calls: list[int] = []

    def skip_all(lines: chunks.Lines) -> frozenset[int]:
        calls.append(lines[0][0])
        return frozenset(number for number, _ in lines)

    for overlap, workers, parsed in ((True, 2, 5 * 500), (False, 2, 0), (True, 0, 0)):
        calls.clear()
        out = chunks.parsed_chunks(
            path, parse, max_bytes=None, workers=workers, ready=lambda: skip_all, overlap=overlap
        )
        items = [item for chunk in out for item in chunk]
        assert sum(isinstance(item, Prepared) for item in items) == parsed, (overlap, workers)
        assert sum(isinstance(item, Kept) for item in items) == 4000 - parsed
        assert calls == [n * 500 + 1 for n in range(parsed // 500, 8)]  # skip: the chunks read after ready


def test_a_store_that_cannot_open_is_one_error_while_workers_parse(tmp_path: Path) -> None:
    """The store opens after the workers started: failing there stops them and says why, once."""
    path = workload(tmp_path / "w.jsonl", 3000)
    folder = tmp_path / "not-a-store"
    folder.mkdir()
    result = invoke(
        str(folder), "import-healthbench", str(path), "--published", "2025-01-01", "--workers", "2"
    )
    assert isinstance(result.exception, StoreOpenError)  # `livemed` prints it as one line, exit 2
    assert "cannot open store" in str(result.exception)
    assert "imported" not in result.output
    assert not multiprocessing.active_children()  # the workers were stopped


def _random_example(rng: random.Random, number: int) -> dict[str, Any]:
    """A HealthBench example of random shape: texts drawn from ASCII, controls, escapes and non-ASCII,
    plain and odd rubric items, themes in several spellings, unknown keys with numbers of every size."""
    alphabet = 'abc XYZ 019 "\\/\n\t\u0000\u001f\u007f\u00e9\u2028\u4e2d\U0001f600'

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) + "."

    def item() -> dict[str, Any]:
        axis = rng.choice(["accuracy", "completeness", "communication_quality", "instruction_following", "x"])
        points = rng.choice([1, 2, 5, 10, -3, -10, 2.5, 12, 0.25])
        tags = rng.choice([[f"axis:{axis}", "level:example"], [f"axis:{axis}"], [], ["level:cluster"]])
        return {"criterion": text(), "points": points, "tags": tags}

    themes = rng.sample(["theme:hedging", "theme:Global_Health", "theme:emergency_referrals", "other:x"], 2)
    data: dict[str, Any] = {
        "prompt": [
            {"role": r, "content": text()}
            for r in ("system", "user", "assistant", "user")[: rng.randint(2, 4)]
        ],
        "rubrics": [item() for _ in range(rng.randint(1, 8))],
        "example_tags": themes,
        "prompt_id": rng.choice([f"r-{number}", number]),
        "ideal_completions_data": rng.choice(
            [None, {"ideal_completion": text(), "ideal_completions_group": "G"}]
        ),
    }
    if rng.random() < 0.5:
        data["extra"] = {"n": rng.choice([0.1, 1e300, -0.0, 5e-324, 2**62, -7]), "s": text()}
    return data


def _parsed_or_error(data: dict[str, Any]) -> tuple[Case, Rubric] | str:
    try:
        return parse_example(data, published=DAY, date_field="option")
    except ValueError as error:
        return str(error)


def test_every_row_of_a_chunk_is_what_the_record_models_make_for_random_examples(tmp_path: Path) -> None:
    """`ExampleChunks` validates the first example of a chunk and writes the others' payloads from its
    dump: for 2,000 random examples in chunks of 50, every row equals `stored_row` of `parse_example`'s
    records byte for byte (creation times aside), and each payload validates back to itself."""
    rng = random.Random(20)
    examples = [_random_example(rng, n) for n in range(2000)]
    lines: chunks.Lines = [(n, orjson.dumps(d) + b"\n") for n, d in enumerate(examples, start=1)]
    parse = ExampleChunks(tmp_path / "random.jsonl", DAY, "option")
    got = [example for at in range(0, len(lines), 50) for example in parse(lines[at : at + 50])]
    assert len(got) == len(examples)
    prepared = 0
    for data, example in zip(examples, got, strict=True):
        records = _parsed_or_error(data)
        if isinstance(records, str):
            assert isinstance(example, Bad)
            assert example.detail == records
            continue
        assert isinstance(example, Prepared)
        prepared += 1
        for row, record in zip(example.rows, records, strict=True):
            expected = stored_row(record)
            assert row[:4] == expected[:4]
            assert CREATED.sub("", row.payload) == CREATED.sub("", expected.payload)
            assert RECORD_TYPES[record.kind].model_validate_json(row.payload).model_dump_json() == row.payload
    assert prepared > 1000  # most examples are good ones, so the rows written from a dump are tested
