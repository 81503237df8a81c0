"""The exports that need the ecosystem's libraries (`pip install -e ".[dev,ecosystem]"`; marker
`ecosystem`, their own CI step): Parquet round-trips, the HF folder loads with `datasets`, and the
Inspect AI task runs with `inspect eval` against the local fake server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from livemed.records import ReleaseItem
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, judge_responder
from tests.live.helpers import cli

pytestmark = pytest.mark.ecosystem
UNTIL = "2026-12-31"


def export(config: Path, fmt: str, out: Path, *extra: str) -> Any:
    assert cli(config, "release", "create", "r1", "--until", UNTIL).exit_code == 0
    result = cli(config, "release", "export", "r1", "--format", fmt, "--out", str(out), *extra)
    assert result.exit_code == 0, result.output
    return result


def test_parquet_round_trips_the_jsonl_rows_with_published_a_utc_timestamp(
    config: Path, tmp_path: Path
) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    export(config, "parquet", tmp_path / "pq")
    assert (
        cli(config, "release", "export", "r1", "--format", "jsonl", "--out", str(tmp_path / "j")).exit_code
        == 0
    )
    lines = (tmp_path / "j" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    table = pq.read_table(tmp_path / "pq" / "cases.parquet")
    assert table.schema.field("published").type == pa.timestamp("us", tz="UTC")
    read = table.to_pylist()
    assert all(r["published"].utcoffset() == timedelta(0) for r in read)
    assert [{**r, "published": r["published"].isoformat()} for r in read] == rows
    assert rows


def test_the_parquet_file_loads_with_datasets_as_a_timestamp(config: Path, tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    export(config, "parquet", tmp_path / "pq")
    path = tmp_path / "pq" / "cases.parquet"
    loaded = datasets.load_dataset("parquet", data_files=str(path), cache_dir=str(tmp_path / "cache"))
    manifest = json.loads((tmp_path / "pq" / "manifest.json").read_text(encoding="utf-8"))
    assert loaded["train"].num_rows == manifest["cases"] > 0
    assert loaded["train"].features["published"] == datasets.Value("timestamp[us, tz=UTC]")
    assert sorted(loaded["train"]["content_hash"]) == sorted(manifest["hashes"].values())


def test_a_parquet_export_passes_verify_and_a_changed_row_fails_it(config: Path, tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "pq"
    export(config, "parquet", out)
    path = out / "cases.parquet"
    n = pq.read_table(path).num_rows
    good = cli(config, "release", "verify", str(out))
    assert good.exit_code == 0, good.output
    assert f"{n} row(s) match the manifest; {n} rehashed from their content" in " ".join(good.output.split())
    table = pq.read_table(path)
    later = [
        value + timedelta(days=1) if i == 0 else value
        for i, value in enumerate(table["published"].to_pylist())
    ]
    index = table.schema.get_field_index("published")
    changed = table.set_column(
        index, table.schema.field(index), pa.array(later, type=table.schema.field(index).type)
    )
    pq.write_table(changed, path)
    bad = cli(config, "release", "verify", str(out))
    assert bad.exit_code == 1
    first = table.to_pylist()[0]["id"]
    assert str(bad.exception) == (
        f"{out}: 1 mismatch(es) against its manifest; the first: cases.parquet:1 ({first}): "
        "column 'published' differs from its case_json/rubric_json"
    )


def test_the_hf_folder_loads_with_datasets_and_its_card_names_licences_and_the_hash(
    config: Path, tmp_path: Path
) -> None:
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "hf"
    export(config, "hf", out)
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert loaded["test"].num_rows == manifest["cases"] > 0
    assert sorted(loaded["test"]["content_hash"]) == sorted(manifest["hashes"].values())
    card = (out / "README.md").read_text(encoding="utf-8")
    assert manifest["release_hash"] in card
    assert "| demo |" in card
    assert "CC0-1.0" in card
    assert "offline/curate-baseline" in card
    assert "offline/rules" in card


def test_the_inspect_task_runs_with_inspect_eval_against_the_fake_server(
    config: Path, tmp_path: Path
) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    out = tmp_path / "inspect"
    export(config, "inspect", out)
    with Store(config.parent / "livemed.db") as store:
        frozen = list(store.iter(ReleaseItem, parent_id="release:r1"))
    chosen = sorted(frozen, key=lambda i: i.case.id)[:2]
    criteria = sum(len(i.rubric.criteria) for i in chosen)
    inspect = Path(sys.executable).with_name("inspect")
    with FakeOpenAIServer(responder=judge_responder()) as server:
        env = {**os.environ, "FAKE_BASE_URL": server.base_url, "FAKE_API_KEY": "sk-test-not-real"}
        args = [str(inspect), "eval", "livemed_task.py", "--model", "openai-api/fake/fake-candidate"]
        args += ["--limit", "2", "--log-dir", str(tmp_path / "logs"), "--display", "none"]
        done = subprocess.run(args, cwd=out, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        prompts = [r.body["messages"][-1]["content"] for r in server.chat_requests]  # type: ignore[index]
    assert len(prompts) == 2 + criteria  # one answer per sample, one grader call per criterion
    assert sum("<<<DATA criterion" in p for p in prompts) == criteria  # livemed's own grader prompt
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    assert log.status == "success"
    assert log.results is not None
    # the fake judge meets every positive criterion and no negative one: livemed's case score is 1
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(1.0)


def test_the_inspect_task_gives_no_score_for_unreadable_verdicts(config: Path, tmp_path: Path) -> None:
    """A grader whose replies cannot be read: the sample is an error in Inspect's log, never a score."""
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    out = tmp_path / "inspect"
    export(config, "inspect", out)

    def reply(body: dict[str, Any]) -> Behavior:
        last = str(body["messages"][-1]["content"])
        return Behavior(text="it is met, I think" if "<<<DATA criterion" in last else "See a doctor.")

    inspect = Path(sys.executable).with_name("inspect")
    with FakeOpenAIServer(responder=reply) as server:
        env = {**os.environ, "FAKE_BASE_URL": server.base_url, "FAKE_API_KEY": "sk-test-not-real"}
        args = [str(inspect), "eval", "livemed_task.py", "--model", "openai-api/fake/fake-candidate"]
        args += ["--limit", "1", "--log-dir", str(tmp_path / "logs"), "--display", "none"]
        subprocess.run(args, cwd=out, env=env, capture_output=True, text=True, timeout=300)
    log = read_eval_log(str(next((tmp_path / "logs").glob("*.eval"))))
    assert log.status == "error"
    assert log.error is not None
    assert "grader verdicts unreadable" in log.error.message
    assert log.results is None or not log.results.scores
