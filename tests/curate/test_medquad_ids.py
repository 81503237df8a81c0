"""MedQuAD: every upstream XML layout is read, and evidence ids are unique and stable."""

from __future__ import annotations

import gzip
import json
import zipfile
from pathlib import Path

import pytest

from livemed.evidence.corpus import load_medquad
from livemed.evidence.medquad import CONVERSION_FORMAT, convert_archive, fetch_medquad, is_current
from tests.curate.test_medquad_fetch import ROOT, document, rows
from tests.fakes.http_replay import ReplayServer, Reply

# The two other layouts, in the structure of upstream's 9_CDC_QA/0000397.xml and 6_NINDS_QA/0000007.xml.
DISEASE_FILE = """<?xml version="1.0" encoding="UTF-8"?>
<DiseaseFile fid="0000397" source="CDC" url="http://www.cdc.gov/parasites/taeniasis/">
<Focus>Parasites - Taeniasis</Focus>
<UMLS>
<CUI></CUI>
<SemanticType></SemanticType>
<SemanticGroup></SemanticGroup>
</UMLS>
<QAPairs>
<QAPair pid="1">
<Question qid="0000397-1" qtype="information">What is (are) Parasites - Taeniasis ?</Question>
<Answer>Taeniasis in humans is a parasitic infection caused by
tapeworms.</Answer>
</QAPair>
<QAPair pid="2">
<Question qid="0000397-2" qtype="susceptibility">Who is at risk for Parasites - Taeniasis? ?</Question>
<Answer>People who eat raw or undercooked beef or pork.</Answer>
</QAPair>
</QAPairs>
</DiseaseFile>
"""
NINDS_DOC = """<?xml version="1.0" encoding="UTF-8"?>
<doc docid="0000007" corpus="NINDS" url="http://www.ninds.nih.gov/disorders/holmes_adie/holmes_adie.htm">
<doctitle-focus>Holmes-Adie</doctitle-focus>
<umls>
<cui></cui>
<semanticType></semanticType>
<semanticGroup></semanticGroup>
</umls>
<qaPairs>
<pair pid="1">
<question qid="0000007-1" qtype="information">what is holmes-adie syndrome ?</question>
<answer>Holmes-Adie syndrome is a neurological disorder affecting the pupil.</answer>
</pair>
<pair pid="2">
<question qid="0000007-2" qtype="treatment">is there any treatment for Holmes-Adie ?</question>
<answer> </answer>
</pair>
</qaPairs>
</doc>
"""


def pair(qid: str, question: str, answer: str) -> list[tuple[str, str, str, str]]:
    return [(qid, "information", question, answer)]


def archive(tmp_path: Path) -> Path:
    """Upstream's id collisions: `0000001-1` in two collections, and CancerGov's split page
    (0000013_2_1.xml, 0000013_2_2.xml: one `id`, the same question ids, other answers)."""
    files = {
        f"{ROOT}/LICENSE.txt": "Attribution 4.0 International\n",
        f"{ROOT}/1_CancerGov_QA/0000013_2_1.xml": document(
            "0000013_2", "CancerGov", "Childhood Cancer", pair("0000013_2-1", "What is it ?", "Part one.")
        ),
        f"{ROOT}/1_CancerGov_QA/0000013_2_2.xml": document(
            "0000013_2", "CancerGov", "Childhood Cancer", pair("0000013_2-1", "What is it ?", "Part two.")
        ),
        f"{ROOT}/2_GARD_QA/0000001.xml": document(
            "0000001", "GARD", "Aarskog", pair("0000001-1", "What is Aarskog ?", "A GARD answer.")
        ),
        f"{ROOT}/5_NIDDK_QA/0000001.xml": document(
            "0000001", "NIDDK", "Gout", pair("0000001-1", "What is Gout ?", "An NIDDK answer.")
        ),
        f"{ROOT}/6_NINDS_QA/0000007.xml": NINDS_DOC,
        f"{ROOT}/9_CDC_QA/0000397.xml": DISEASE_FILE,
    }  # fmt: skip
    path = tmp_path / "medquad.zip"
    with zipfile.ZipFile(path, "w") as zipped:
        for name, text in files.items():
            zipped.writestr(name, text)
    return path


def test_the_disease_file_and_doc_layouts_are_read(tmp_path: Path) -> None:
    conversion = convert_archive(archive(tmp_path), tmp_path / "out")
    assert conversion.bad_files == []
    assert conversion.files == 6
    assert conversion.pairs == 7
    assert conversion.empty_answers == 1
    data = {row["qid"]: row for row in rows(tmp_path / "out" / "medquad_answered_pairs.jsonl.gz")}
    assert data["0000397-1"] == {
        "qid": "0000397-1",
        "collection": "9_CDC_QA",
        "file": "0000397",
        "source": "CDC",
        "doc_id": "0000397",
        "url": "http://www.cdc.gov/parasites/taeniasis/",
        "focus": "Parasites - Taeniasis",
        "umls_cuis": [],
        "semantic_types": [],
        "semantic_group": "",
        "qtype": "information",
        "question": "What is (are) Parasites - Taeniasis ?",
        "answer": "Taeniasis in humans is a parasitic infection caused by tapeworms.",
    }
    ninds = data["0000007-1"]
    assert (ninds["source"], ninds["doc_id"], ninds["focus"], ninds["qtype"]) == (
        "NINDS",
        "0000007",
        "Holmes-Adie",
        "information",
    )
    assert ninds["answer"] == "Holmes-Adie syndrome is a neurological disorder affecting the pupil."
    assert "0000007-2" not in data  # its answer is empty


def test_evidence_ids_are_unique_and_the_same_on_every_conversion(tmp_path: Path) -> None:
    first = load_medquad(_converted(tmp_path, "a"))
    ids = [p.id for p in first]
    assert len(ids) == len(set(ids)) == 7
    assert "medquad:1_CancerGov_QA/0000013_2_1#0000013_2-1" in ids
    assert "medquad:1_CancerGov_QA/0000013_2_2#0000013_2-1" in ids
    assert {"medquad:2_GARD_QA/0000001#0000001-1", "medquad:5_NIDDK_QA/0000001#0000001-1"} <= set(ids)
    assert [p.id for p in load_medquad(_converted(tmp_path, "b"))] == ids


def _converted(tmp_path: Path, name: str) -> Path:
    convert_archive(archive(tmp_path), tmp_path / name)
    return tmp_path / name / "medquad_answered_pairs.jsonl.gz"


def test_a_line_converted_before_file_names_gets_an_ordinal_for_repeats(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl.gz"
    old = [  # format 1: no `file`; the split page's two files share doc_id and qid
        {"qid": "0000013_2-1", "collection": "1_CancerGov_QA", "doc_id": "0000013_2", "answer": "Part one."},
        {"qid": "0000013_2-1", "collection": "1_CancerGov_QA", "doc_id": "0000013_2", "answer": "Part two."},
        {"qid": "0000397-1", "collection": "9_CDC_QA", "doc_id": None, "answer": "Taeniasis."},
    ]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(row) + "\n" for row in old)
    assert [p.id for p in load_medquad(path)] == [
        "medquad:1_CancerGov_QA/0000013_2#0000013_2-1",
        "medquad:1_CancerGov_QA/0000013_2#0000013_2-1~2",
        "medquad:9_CDC_QA/0000397#0000397-1",
    ]


def test_a_cached_conversion_in_an_older_format_is_converted_again(tmp_path: Path) -> None:
    body = archive(tmp_path).read_bytes()
    cache = tmp_path / "cache"
    folder = cache / "medquad"
    folder.mkdir(parents=True)
    (folder / "medquad_answered_pairs.jsonl.gz").write_bytes(
        gzip.compress(b'{"qid": "1-1", "answer": "x"}\n')
    )
    (folder / "provenance.json").write_text(json.dumps({"pairs": 1}))  # written before `format`
    assert not is_current(cache)
    with ReplayServer(lambda path, query: Reply(200, body, {"Content-Type": "application/zip"})) as server:
        result = fetch_medquad(url=f"{server.url}/{ROOT}.zip", cache_dir=cache)
        assert result.fetched
        assert len(server.requests) == 1
        assert json.loads((folder / "provenance.json").read_text())["format"] == CONVERSION_FORMAT
        assert is_current(cache)
        assert not fetch_medquad(url=f"{server.url}/{ROOT}.zip", cache_dir=cache).fetched
        assert len(server.requests) == 1


@pytest.mark.shared_data
def test_ids_are_unique_over_the_real_corpus(shared_data: Path) -> None:
    passages = load_medquad(shared_data / "medquad" / "medquad_answered_pairs.jsonl.gz")
    ids = [p.id for p in passages]
    assert len(ids) > 15_000
    assert len(set(ids)) == len(ids)
