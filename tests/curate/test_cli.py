"""`livemed curate` in-process: funnel, cases written, resume."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from livemed.cli import app
from livemed.records import Case
from livemed.store import Store
from tests.curate.conftest import report, thread


def test_curate_command_prints_a_funnel_and_resumes(tmp_path: Path, corpus_file: Path) -> None:
    db = tmp_path / "cli.db"
    with Store(db) as store:
        store.put([thread("a"), thread("b", answer=None), report("r")])
    args = [
        "--store",
        str(db),
        "curate",
        "--evidence",
        str(corpus_file),
        "--index-dir",
        str(tmp_path / "idx"),
    ]
    runner = CliRunner()
    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "curation funnel" in first.output
    assert "missing_advice 1" in first.output
    assert "3 document(s) curated: 2 case(s) accepted" in first.output
    assert "rule-based baseline" in first.output
    assert any((tmp_path / "idx").iterdir())  # the BM25 index was persisted
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "0 document(s) curated" in second.output
    assert "nothing new to curate" in second.output
    with Store(db) as store:
        assert len(list(store.iter(Case))) == 2
    redone = runner.invoke(app, [*args, "--redo"])
    assert redone.exit_code == 0, redone.output
    assert "3 document(s) curated: 2 case(s) accepted" in redone.output


def test_bm25_without_a_corpus_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "x.db"), "curate"])
    assert result.exit_code != 0
    assert "--evidence" in str(result.exception)


def test_unknown_retriever_suggests_a_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "x.db"), "curate", "--retriever", "bm52"])
    assert result.exit_code != 0
    assert "bm25" in str(result.exception)
