"""`livemed evidence fetch medquad` against a real HTTP server on 127.0.0.1, and `--evidence medquad`."""

from __future__ import annotations

import gzip
import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import SourceError, UserError
from livemed.evidence.corpus import load_medquad
from livemed.evidence.factory import resolve_evidence
from livemed.evidence.medquad import parse_document
from tests.fakes.http_replay import ReplayServer, Reply

ROOT = "MedQuAD-577bd37b96c02d1833b2c9eed2de9f96964e96cb"


def document(doc_id: str, source: str, focus: str, pairs: list[tuple[str, str, str, str]]) -> str:
    """A MedQuAD XML file in the upstream structure; pairs are (qid, qtype, question, answer)."""
    qa = "".join(
        f"""
    <QAPair pid="{i}">
      <Question qid="{qid}" qtype="{qtype}">{question}</Question>
      <Answer>{answer}</Answer>
    </QAPair>"""
        for i, (qid, qtype, question, answer) in enumerate(pairs, start=1)
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<Document id="{doc_id}" source="{source}" url="https://example.nih.gov/{doc_id}">
<Focus>{focus}</Focus>
<FocusAnnotations>
  <UMLS>
    <CUIs>
      <CUI>C0000001</CUI>
      <CUI>C0000002</CUI>
    </CUIs>
    <SemanticTypes>
      <SemanticType>T047</SemanticType>
    </SemanticTypes>
    <SemanticGroup>Disorders</SemanticGroup>
  </UMLS>
</FocusAnnotations>
<QAPairs>{qa}
</QAPairs>
</Document>
"""


def medquad_zip() -> bytes:
    files = {
        f"{ROOT}/LICENSE.txt": "Attribution 4.0 International\n",
        f"{ROOT}/readme.txt": "MedQuAD\n",
        f"{ROOT}/1_CancerGov_QA/0000001_1.xml": document(
            "0000001_1",
            "CancerGov",
            "Adult Leukemia",
            [
                ("0000001_1-1", "information", "What is (are) Adult Leukemia ?", "Leukemia is a\n  cancer."),
                ("0000001_1-2", "symptoms", "What are the symptoms of Adult Leukemia ?", "   "),
            ],
        ),
        f"{ROOT}/1_CancerGov_QA/0000002_1.xml": "<Document id='0000002_1'><Focus>Broken</Focus><QAPairs>",
        f"{ROOT}/5_NIDDK_QA/0000003.xml": document(
            "0000003",
            "NIDDK",
            "Gout",
            [
                ("0000003-1", "information", "What is (are) Gout ?", "Gout is a kind of arthritis."),
                ("0000003-2", "treatment", "How to treat Gout ?", "Gout is a kind of arthritis."),
                ("0000003-3", "treatment", "What are the treatments for Gout ?", "Drink   water\tdaily."),
            ],
        ),
        f"{ROOT}/10_MPlus_ADAM_QA/0000004.xml": document(
            "0000004", "MPlusADAM", "Ignored", [("0000004-1", "information", "What is it ?", "Removed.")]
        ),
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def rows(path: Path) -> list[dict[str, object]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def fetch(server: ReplayServer, cache: Path, *extra: str) -> tuple[int, str, BaseException | None]:
    url = f"{server.url}/abachaa/MedQuAD/archive/{ROOT}.zip"
    args = ["evidence", "fetch", "medquad", "--url", url, "--cache-dir", str(cache), *extra]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output, result.exception


def test_fetch_converts_the_answered_subsets_and_is_idempotent(tmp_path: Path) -> None:
    body = medquad_zip()
    cache = tmp_path / "cache"
    with ReplayServer(lambda path, query: Reply(200, body, {"Content-Type": "application/zip"})) as server:
        code, output, exc = fetch(server, cache)
        assert code == 0, (output, exc)
        assert len(server.requests) == 1

        target = cache / "medquad" / "medquad_answered_pairs.jsonl.gz"
        assert f"wrote {target}" in output
        umask = os.umask(0)
        os.umask(umask)
        assert target.stat().st_mode & 0o777 == 0o666 & ~umask  # as any new file, not private to its owner
        assert "4 QA pairs from 2 XML files" in output
        assert "1 empty answer(s) dropped, 1 malformed file(s) skipped" in output
        assert "0000002_1.xml" in output  # the bad file is named
        assert "CC BY 4.0" in output
        assert f"--evidence {target}" in output  # a custom cache folder is not where `medquad` looks
        assert "Ben Abacha" in output

        data = rows(target)
        assert [row["qid"] for row in data] == ["0000001_1-1", "0000003-1", "0000003-2", "0000003-3"]
        assert data[0] == {
            "qid": "0000001_1-1",
            "collection": "1_CancerGov_QA",
            "file": "0000001_1",
            "source": "CancerGov",
            "doc_id": "0000001_1",
            "url": "https://example.nih.gov/0000001_1",
            "focus": "Adult Leukemia",
            "umls_cuis": ["C0000001", "C0000002"],
            "semantic_types": ["T047"],
            "semantic_group": "Disorders",
            "qtype": "information",
            "question": "What is (are) Adult Leukemia ?",
            "answer": "Leukemia is a cancer.",
        }
        assert data[3]["answer"] == "Drink water daily."
        assert {row["collection"] for row in data} == {"1_CancerGov_QA", "5_NIDDK_QA"}  # not 10_

        assert (cache / "medquad" / "LICENSE.txt").read_text() == "Attribution 4.0 International\n"
        provenance = json.loads((cache / "medquad" / "provenance.json").read_text())
        assert provenance["url"].endswith(f"{ROOT}.zip")
        assert provenance["commit"] == ROOT.split("-")[1]
        assert len(provenance["archive_sha256"]) == 64
        assert provenance["pairs"] == 4
        assert provenance["empty_answers_dropped"] == 1
        assert provenance["per_collection"] == {"1_CancerGov_QA": 1, "5_NIDDK_QA": 3}
        assert len(provenance["bad_files"]) == 1
        assert "0000002_1.xml" in provenance["bad_files"][0]
        assert provenance["fetched_at"]
        assert not [p.name for p in (cache / "medquad").iterdir() if p.name.startswith(".")]  # no leftovers

        code, output, exc = fetch(server, cache)
        assert code == 0, (output, exc)
        assert "already there" in output
        assert len(server.requests) == 1  # nothing downloaded the second time

        code, output, exc = fetch(server, cache, "--force")
        assert code == 0, (output, exc)
        assert len(server.requests) == 2

    passages = load_medquad(target)  # one passage per distinct answer
    assert [p.id for p in passages] == [
        "medquad:1_CancerGov_QA/0000001_1#0000001_1-1",
        "medquad:5_NIDDK_QA/0000003#0000003-1",
        "medquad:5_NIDDK_QA/0000003#0000003-3",
    ]
    assert passages[0].title == "Adult Leukemia — What is (are) Adult Leukemia ?"
    assert passages[0].text == "Leukemia is a cancer."
    assert passages[0].licence == "CC BY 4.0"


def test_evidence_medquad_resolves_to_the_cached_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEMED_CACHE_DIR", str(tmp_path / "cache"))
    body = medquad_zip()
    with ReplayServer(lambda path, query: Reply(200, body)) as server:
        code, output, exc = fetch(server, tmp_path / "cache")
    assert code == 0, (output, exc)
    assert resolve_evidence("medquad") == tmp_path / "cache" / "medquad" / "medquad_answered_pairs.jsonl.gz"
    assert resolve_evidence("corpus.jsonl") == Path("corpus.jsonl")
    result = CliRunner().invoke(
        app,
        [
            "--store",
            str(tmp_path / "s.db"),
            "curate",
            "--evidence",
            "medquad",
            "--index-dir",
            str(tmp_path / "i"),
        ],
    )
    assert result.exit_code == 0, (result.output, result.exception)
    assert "nothing new to curate" in result.output


def test_evidence_medquad_without_the_cache_is_a_one_line_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LIVEMED_CACHE_DIR", str(tmp_path / "empty"))
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "s.db"), "curate", "--evidence", "medquad"])
    assert result.exit_code != 0
    assert isinstance(result.exception, UserError)
    message = str(result.exception)
    assert "\n" not in message
    assert "livemed evidence fetch medquad" in message
    assert not (tmp_path / "empty").exists()  # nothing was downloaded or created

    (tmp_path / "livemed.toml").write_text('[curate]\nevidence = "medquad"\n')
    result = CliRunner().invoke(
        app, ["--config", str(tmp_path / "livemed.toml"), "--store", str(tmp_path / "s.db"), "curate"]
    )
    assert isinstance(result.exception, UserError)
    assert "livemed evidence fetch medquad" in str(result.exception)


@pytest.mark.parametrize("status", [404, 500])
def test_a_network_failure_is_one_clear_error(tmp_path: Path, status: int) -> None:
    cache = tmp_path / "cache"
    with ReplayServer(lambda path, query: Reply(status, b"nope")) as server:
        code, _output, exc = fetch(server, cache, "--retries", "0")
    assert code != 0
    assert isinstance(exc, SourceError)
    message = str(exc)
    assert "\n" not in message
    assert f"HTTP {status}" in message
    assert "medquad" in message
    assert not (cache / "medquad" / "medquad_answered_pairs.jsonl.gz").exists()
    assert not [p for p in (cache / "medquad").iterdir()]  # no partial files left behind


def test_a_malformed_url_is_one_clear_error(tmp_path: Path) -> None:
    args = ["evidence", "fetch", "medquad", "--url", "http://[::1", "--cache-dir", str(tmp_path / "c")]
    result = CliRunner().invoke(app, args)
    assert isinstance(result.exception, SourceError)
    assert "invalid URL" in str(result.exception)


def test_a_download_that_is_not_a_zip_is_one_clear_error(tmp_path: Path) -> None:
    with ReplayServer(lambda path, query: Reply(200, b"<html>not a zip</html>")) as server:
        _code, _output, exc = fetch(server, tmp_path / "cache")
    assert isinstance(exc, SourceError)
    assert "not a zip" in str(exc)


def test_download_streams_to_a_file_and_retries_a_503(tmp_path: Path) -> None:
    import asyncio

    from livemed.sources.http import HttpClient

    replies = iter([Reply(503, b"busy", {"Retry-After": "0"}), Reply(200, b"x" * 200_000)])

    async def go(url: str) -> int:
        async with HttpClient("medquad", requests_per_second=100, backoff_base_s=0.01) as http:
            return await http.download(url, tmp_path / "a.zip")

    with ReplayServer(lambda path, query: next(replies)) as server:
        size = asyncio.run(go(f"{server.url}/a.zip"))
    assert size == 200_000
    assert (tmp_path / "a.zip").read_bytes() == b"x" * 200_000
    assert len(server.requests) == 2


def test_entities_and_dtds_in_a_file_are_not_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    xml = (
        f'<?xml version="1.0"?><!DOCTYPE Document [<!ENTITY x SYSTEM "file://{secret}">]>'
        '<Document id="1" source="GARD" url="u"><Focus>F</Focus><QAPairs><QAPair pid="1">'
        '<Question qid="1-1" qtype="information">What is F ?</Question><Answer>F is &x; rare.</Answer>'
        "</QAPair></QAPairs></Document>"
    )
    pairs, empty = parse_document(xml.encode(), "2_GARD_QA")
    assert empty == 0
    assert "SECRET" not in pairs[0]["answer"]
    assert pairs[0]["umls_cuis"] == []
    assert pairs[0]["semantic_group"] == ""
