"""The commands, in process: import → rubrics → answer → grade → scores, exports, agreement."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import Block, parse_blocks
from livemed.errors import ConfigError
from livemed.interop.kqa import REFERENCE_NAMESPACE
from livemed.models import Message, Settings
from livemed.models.fake import FakeModel
from livemed.models.registry import PROVIDERS
from livemed.records import Answer, Case, Grade, Rejection, Rubric, Run, Score
from livemed.store import Store


def run(store: Path, *args: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--store", str(store), *args], env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output + repr(result.exception)
    return " ".join(result.output.split())  # rich wraps long lines


def evidence_file(tmp_path: Path, shared_data: Path, lines: int = 1500) -> Path:
    path = tmp_path / "evidence.jsonl"
    with (
        gzip.open(shared_data / "medquad" / "medquad_answered_pairs.jsonl.gz", "rt") as src,
        path.open("w") as dst,
    ):
        for _, line in zip(range(lines), src, strict=False):
            dst.write(line)
    return path


def test_offline_pipeline_orders_reference_retrieval_empty(
    kqa_store: Path, tmp_path: Path, shared_data: Path
) -> None:
    out = run(kqa_store, "rubrics", "--writer", "offline/rules")
    assert "wrote 6 rubric" in out
    assert "reference Must_have statements covered by positive criteria" in out
    for model in ("offline/reference", "offline/empty"):
        assert "wrote 6 answer" in run(kqa_store, "answer", "--model", model)
    evidence = evidence_file(tmp_path, shared_data)
    run(kqa_store, "answer", "--model", "offline/retrieval", "--evidence", str(evidence))
    assert "already done" in run(kqa_store, "answer", "--model", "offline/empty")
    out = run(kqa_store, "grade", "--judge", "offline/lexical")
    assert "grade" in out
    again = run(kqa_store, "grade", "--judge", "offline/lexical")
    assert "wrote nothing" in again
    board = tmp_path / "board.json"
    out = run(kqa_store, "scores", "--judge", "offline/lexical", "--json", str(board))
    assert "convention: livemed" in out
    rows = {row["model"]: row for row in json.loads(board.read_text())["models"]}
    assert (
        rows["offline/reference"]["score"]
        > rows["offline/retrieval"]["score"]
        >= rows["offline/empty"]["score"]
    )
    assert rows["offline/empty"]["score"] == 0.0
    length = {row["model"]: row for row in json.loads(board.read_text())["length"]}
    assert length["offline/empty"]["median_words"] == 0.0  # empty answers: no length, constant
    assert length["offline/empty"]["rho"] is None
    assert length["offline/reference"]["n"] == rows["offline/reference"]["n"]
    assert "answer length vs score, offline/reference: Spearman rho" in out
    assert rows["offline/reference"]["n"] == 6
    assert rows["offline/reference"]["convention"] == "livemed"
    with Store(kqa_store) as store:
        assert store.count()["score"] == 18
        grade_runs = [r for r in store.iter(Run) if r.command == "grade"]
        assert [r.counts.get("grade", 0) for r in grade_runs].count(0) == 1  # the second run wrote nothing
        assert all(r.outcome == "ok" for r in grade_runs)
        assert all(s.convention == "livemed" for s in store.iter(Score))
        [score_run] = [r for r in store.iter(Run) if r.command == "scores"]  # scoring is in the provenance
        assert (score_run.outcome, score_run.counts["score"]) == ("ok", 18)
        assert score_run.settings["judge"] == "offline/lexical"
        assert score_run.settings["convention"] == "livemed"
    hb = run(kqa_store, "scores", "--judge", "offline/lexical", "--convention", "healthbench", "--by", "axis")
    assert "convention: healthbench" in hb
    assert "by axis (the case formula over each axis's criteria)" in hb


def test_kqa_import_keeps_must_have_as_reference(kqa_store: Path) -> None:
    with Store(kqa_store) as store:
        cases = list(store.iter(Case))
        references = store.state_items(REFERENCE_NAMESPACE)
    assert len(cases) == 6
    first = next(c for c in cases if c.query.startswith("Alright so I dont know much about Lexapro"))
    assert first.source == "k-qa"
    assert first.date_field == "option"
    assert first.narrative.is_empty()
    assert first.advice[0].startswith("Escitalopram, sold under the brand names Lexapro and Cipralex")
    assert len(references[first.id]["must_have"]) == 11


def test_healthbench_export_and_import_through_the_cli(kqa_store: Path, tmp_path: Path) -> None:
    run(kqa_store, "rubrics", "--writer", "offline/rules")
    exported = tmp_path / "hb.jsonl"
    assert "exported 6 example(s)" in run(kqa_store, "export-healthbench", str(exported))
    other = tmp_path / "other.db"
    out = run(other, "import-healthbench", str(exported))
    assert "imported 6 case(s)" in out
    assert "modification time" in out  # the date basis is said out loud
    with Store(kqa_store) as a, Store(other) as b:
        before = sorted((r.criteria[0].text, r.criteria[0].weight) for r in a.iter(Rubric))
        after = sorted((r.criteria[0].text, r.criteria[0].weight) for r in b.iter(Rubric))
        assert before == after
        assert all(c.date_field == "file_mtime" for c in b.iter(Case))


def test_judges_agreement_with_the_lexical_grader(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"response": "Take colchicine at a low dose.", "criterion": "Advises colchicine", "label": True},
        {"response": "Avoid ibuprofen.", "criterion": "Recommends ibuprofen", "label": False},
        {"response": "Rest.", "criterion": "Advises colchicine", "label": False},
        {"response": "A low dose of colchicine helps.", "criterion": "Advises colchicine", "label": True},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_json = tmp_path / "agreement.json"
    out = run(
        tmp_path / "s.db",
        "judges",
        "agreement",
        "--labels",
        str(labels),
        "--grader",
        "offline/lexical",
        "--json",
        str(out_json),
    )
    assert "macro-F1 1.000" in out
    assert "Cohen's kappa 1.000" in out
    assert json.loads(out_json.read_text())["n"] == 4


def test_agreement_leaves_failed_calls_out_and_exits_1_for_them_and_for_bad_lines(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"response": "Take colchicine.", "criterion": "Advises colchicine", "label": True},
        {"response": "Rest.", "criterion": "Advises colchicine", "label": False},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    base = ["--store", str(tmp_path / "s.db"), "judges", "agreement", "--labels", str(labels)]
    lexical = CliRunner().invoke(app, [*base, "--grader", "offline/lexical"], env={"COLUMNS": "200"})
    assert lexical.exit_code == 1
    assert "macro-F1 1.000" in lexical.output  # the readable lines are measured
    assert "1 label line(s) could not be read and were skipped" in str(lexical.exception)
    dead = CliRunner().invoke(app, [*base, "--grader", "fake/unscripted"], env={"COLUMNS": "200"})
    assert dead.exit_code == 1
    assert "macro-F1" not in dead.output  # no verdict: no number
    assert str(dead.exception) == "2 of 2 items failed: no verdict to measure"


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    result = CliRunner().invoke(
        app, ["--store", str(store), "grade", "--judge", "offline/lexical", "--mode", "x"]
    )
    assert result.exit_code != 0
    result = CliRunner().invoke(app, ["--store", str(store), "answer", "--model", "offline/lexical"])
    assert "cannot be used for `answer`" in str(result.exception)
    with Store(store) as s:
        assert s.count().get("answer", 0) == 0
        assert not list(s.iter(Answer))


def test_failed_answer_calls_are_rejections_not_answers(kqa_store: Path) -> None:
    result = CliRunner().invoke(
        app, ["--store", str(kqa_store), "answer", "-m", "fake/unscripted", "--limit", "2"]
    )
    assert result.exit_code == 1
    assert "rejected (fatal): 2" in " ".join(result.output.split())
    assert str(result.exception).startswith("2 of 2 answers failed: ")
    assert str(result.exception).endswith("; run again to retry them")
    with Store(kqa_store) as store:
        assert store.count().get("answer", 0) == 0
        assert {r.stage for r in store.iter(Rejection)} == {"answer"}
        runs = list(store.iter(Run))
        assert [r.outcome for r in runs] == ["failed"]
        assert runs[0].counts["call_failed"] == 2
    assert "wrote 2 rejection" in run(
        kqa_store, "answer", "--model", "fake/unscripted", "--limit", "2", code=1
    )


def scripted_judge(model_id: str) -> FakeModel:
    """A judge for the `fake` provider: a positive criterion is met by any non-empty response, a negative
    one never (the reference answer does none of the bad things a rubric names)."""

    def met(block: Block, response: str) -> bool:
        return bool(response.strip()) and not block.attrs.get("points", "").startswith("-")

    def reply(messages: list[Message], settings: Settings) -> str:
        text = messages[0]["content"]
        blocks = parse_blocks(text)
        [response] = [b.text.lower() for b in blocks if b.name == "response"]
        criteria = [b for b in blocks if b.name == "criterion"]
        if any("id" in b.attrs for b in criteria):
            verdicts = [
                {"id": int(b.attrs["id"]), "explanation": "scripted", "criteria_met": met(b, response)}
                for b in criteria
            ]
            return json.dumps({"verdicts": verdicts})
        return json.dumps({"explanation": "scripted", "criteria_met": met(criteria[0], response)})

    return FakeModel(model_id, function=reply)


@pytest.mark.parametrize("mode", ["per-criterion", "batched"])
def test_grading_with_an_llm_judge(kqa_store: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", "tests.cli.test_stage_commands:scripted_judge")
    run(kqa_store, "rubrics", "--writer", "offline/rules", "--limit", "2")
    run(kqa_store, "answer", "--model", "offline/reference", "--limit", "2")
    run(kqa_store, "answer", "--model", "offline/empty", "--limit", "2")
    out = run(kqa_store, "grade", "--judge", "fake/judge", "--mode", mode)
    assert f"grades by fake/judge ({mode})" in out
    assert "model usage" in out
    board = run(kqa_store, "scores", "--judge", "fake/judge")
    assert "offline/reference │ 1.000" in board
    assert "offline/empty │ 0.000" in board
    with Store(kqa_store) as store:
        grades = list(store.iter(Grade))
        assert {g.provenance.settings["mode"] for g in grades} == {mode}
        assert all(g.provenance.prompt_hash for g in grades)


def test_retrieval_without_a_corpus_uses_the_cases_pooled_evidence(tmp_path: Path) -> None:
    from livemed.records import AdviceCheck, EvidenceRef, Validation
    from tests.builders import make_case

    evidence = [EvidenceRef(id="pmid:1", snippet="Gout in the big toe is treated with colchicine.")]
    validation = Validation(
        s_cc=True,
        s_inf=0.8,
        s_align=1.0,
        advice_checks=[AdviceCheck(advice_index=1, score=1.0, evidence=evidence)],
    )
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.put([make_case(validation=validation), make_case("demo:2", query="Is my big toe gout?")])
    assert "wrote 2 answer" in run(db, "answer", "--model", "offline/retrieval")
    with Store(db) as store:
        assert {a.text for a in store.iter(Answer)} == {"Gout in the big toe is treated with colchicine."}
    empty = tmp_path / "empty.db"
    with Store(empty) as store:
        store.put([make_case()])
    result = CliRunner().invoke(app, ["--store", str(empty), "answer", "--model", "offline/retrieval"])
    assert "needs an evidence corpus" in str(result.exception)


def test_reimport_keeps_stored_cases_and_their_dates(kqa_store: Path, shared_data: Path) -> None:
    source = str(shared_data / "k-qa" / "questions_w_answers.jsonl")
    with Store(kqa_store) as store:
        before = {c.id: (c.published, c.date_field) for c in store.iter(Case)}
    out = run(kqa_store, "import-kqa", source, "--limit", "6")  # no --published: file mtime
    assert "imported 0 case(s)" in out
    assert "6 already in the store, kept" in out
    with Store(kqa_store) as store:
        assert {c.id: (c.published, c.date_field) for c in store.iter(Case)} == before
    out = run(kqa_store, "import-kqa", source, "--limit", "6", "--replace")
    assert "imported 6 case(s)" in out
    with Store(kqa_store) as store:
        assert {c.date_field for c in store.iter(Case)} == {"file_mtime"}
    run(kqa_store, "rubrics", "--writer", "offline/rules")
    run(kqa_store, "export-healthbench", str(kqa_store.parent / "hb.jsonl"))
    assert "imported 6 case(s)" in run(kqa_store, "import-healthbench", str(kqa_store.parent / "hb.jsonl"))
    out = run(kqa_store, "import-healthbench", str(kqa_store.parent / "hb.jsonl"))
    assert "imported 0 case(s)" in out
    assert "6 already in the store, kept" in out


def test_healthbench_tag_metrics_through_the_cli(tmp_path: Path) -> None:
    import json

    from tests.interop.test_healthbench import EXAMPLE_A, EXAMPLE_B

    examples = tmp_path / "hb.jsonl"
    examples.write_text("\n".join(json.dumps(e) for e in (EXAMPLE_A, EXAMPLE_B)) + "\n", encoding="utf-8")
    store = tmp_path / "s.db"
    run(store, "import-healthbench", str(examples))
    run(store, "answer", "--model", "offline/reference")
    run(store, "grade", "--judge", "offline/lexical")
    out = tmp_path / "tags.json"
    args = ["scores", "--judge", "offline/lexical", "--convention", "healthbench", "--by", "tag", "--json"]
    printed = run(store, *args, str(out))
    assert "by tag (example tags: the case score" in printed
    tags = {row["tag"] for row in json.loads(out.read_text())["by"]["tag"]}
    assert {"physician_agreed_category:emergent", "theme:context_seeking", "level:cluster"} <= tags
    assert {"axis:accuracy", "axis:instruction_following", "level:example"} <= tags
    refused = CliRunner().invoke(
        app, ["--store", str(store), "scores", "--judge", "offline/lexical", "--by", "tag"]
    )
    assert isinstance(refused.exception, ConfigError)  # a user error: one line, exit code 2
    assert "--convention healthbench" in str(refused.exception)


def test_retrieval_keeps_its_index_in_the_cache_dir_and_builds_none_with_nothing_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livemed.evidence import bm25
    from tests.builders import make_case

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"id": "p1", "title": "Gout", "text": "Gout is treated with colchicine."}) + "\n"
    )
    monkeypatch.setenv("LIVEMED_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.put([make_case()])
    assert "wrote 1 answer" in run(db, "answer", "--model", "offline/retrieval", "--evidence", str(corpus))
    assert len(list((tmp_path / "cache" / "evidence").glob("bm25-*/passages.jsonl"))) == 1

    def no_index(*args: object, **kwargs: object) -> None:
        raise AssertionError("indexed with nothing to answer")

    monkeypatch.setattr(bm25.BM25Retriever, "__init__", no_index)
    again = run(db, "answer", "--model", "offline/retrieval", "--evidence", str(corpus))
    assert "1 already done" in again
