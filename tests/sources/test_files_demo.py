from __future__ import annotations

import json
from pathlib import Path

import pytest

from livemed.config import Config
from livemed.errors import SourceError, UnknownNameError
from livemed.records import Doc, ReplyRole
from livemed.sources import build_source
from livemed.sources.demo import Demo
from livemed.sources.demo import Settings as DemoSettings
from livemed.sources.files import Files, Mapping, Settings
from tests.sources.helpers import collect, day

SINCE, UNTIL = day("2025-01-01"), day("2025-12-31")


def thread(i: int, date: str = "2025-03-01T10:00:00Z", **extra: object) -> bytes:
    row = {
        "tid": f"t{i}",
        "created": date,
        "body": f"post {i}",
        "subject": f"title {i}",
        "answers": [{"text": "see a doctor", "role": "doc", "author": "dr x"}, "me too"],
        **extra,
    }
    return json.dumps(row).encode()


async def test_jsonl_with_mapping_reports_bad_lines_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "threads.jsonl"
    lines = [
        thread(1),
        b"{not json",
        b'{"tid": "t3", "created": "2025-03-01", "body": "caf\xe9"}',
        thread(4, date="yesterday"),
        thread(5, body="x" * 10_000_000),
        b"",
        thread(6, date="2024-06-01"),  # before the window: not yielded
        thread(7),
    ]
    path.write_bytes(b"\n".join(lines))
    mapping = Mapping(id="tid", date="created", post="body", title="subject", replies="answers")
    source = Files(Settings(path=path, mapping=mapping, role_map={"doc": "physician"}, licence="own"))
    docs, rejections = await collect(source.harvest(SINCE, UNTIL))
    assert [d.id for d in docs] == ["files:t1", "files:t7"]
    assert docs[0].title == "title 1"
    assert docs[0].licence == "own"
    assert docs[0].date_field == "created"
    assert [r.role for r in docs[0].replies] == [ReplyRole.PHYSICIAN, ReplyRole.OTHER]
    found = {r.reason: r.detail for r in rejections}
    assert set(found) == {"bad_json", "bad_encoding", "missing_date", "too_large"}
    assert found["bad_json"].startswith("threads.jsonl:2:")
    assert found["bad_encoding"].startswith("threads.jsonl:3:")
    assert found["too_large"].startswith("threads.jsonl:5:")
    assert all(r.source == "files" and r.stage == "harvest" for r in rejections)


async def test_csv_with_reply_roles_column(tmp_path: Path) -> None:
    path = tmp_path / "threads.csv"
    path.write_bytes(
        b"id,date,post,replies,roles\n"
        b'a1,2025-04-01,"My knee hurts\nwhen I run",'
        b'"[""ice it"", ""see a physio""]","[""verified"", ""asker""]"\n'
        b"a2,2025-04-02,caf\xe9,[],[]\n"
        b'a3,,no date,"[]","[]"\n'
    )
    source = Files(Settings(path=path, mapping=Mapping(title=None, reply_roles="roles")))
    docs, rejections = await collect(source.harvest(SINCE, UNTIL))
    assert [d.source_id for d in docs] == ["a1"]
    assert docs[0].text == "My knee hurts\nwhen I run"
    assert docs[0].metadata["file_line"] == "threads.csv:2"  # the row starts on line 2 and spans two
    assert [(r.text, r.role) for r in docs[0].replies] == [
        ("ice it", ReplyRole.VERIFIED),
        ("see a physio", ReplyRole.ASKER),
    ]
    assert sorted((r.reason, r.detail.split(": ")[0]) for r in rejections) == [
        ("bad_encoding", "threads.csv:4"),
        ("missing_date", "threads.csv:5"),
    ]


async def test_a_thread_with_an_unpaired_surrogate_is_a_rejection_and_a_binary_file_one_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "threads.jsonl"
    path.write_bytes(b"\n".join([thread(1), thread(2, body="bad \ud800 post"), thread(3)]))
    mapping = Mapping(id="tid", date="created", post="body", title="subject", replies="answers")
    docs, rejections = await collect(Files(Settings(path=path, mapping=mapping)).harvest(SINCE, UNTIL))
    assert [d.id for d in docs] == ["files:t1", "files:t3"]
    [rejected] = rejections
    assert rejected.reason == "bad_encoding"
    assert rejected.detail.startswith("threads.jsonl:2: unpaired surrogate \\ud800 (no character)")
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 40)
    with pytest.raises(SourceError, match=r"threads\.jsonl: not a text file \(NUL bytes"):
        await collect(Files(Settings(path=path, mapping=mapping)).harvest(SINCE, UNTIL))


async def test_files_without_path_or_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="path"):
        await collect(Files(Settings()).harvest(SINCE, UNTIL))
    with pytest.raises(SourceError, match=r"nope\.jsonl: cannot open"):
        await collect(Files(Settings(path=tmp_path / "nope.jsonl")).harvest(SINCE, UNTIL))


async def test_demo_reads_doc_lines_from_a_path(tmp_path: Path) -> None:
    doc = Doc(source="demo", source_id="d1", published=day("2025-05-01"), doc_type="thread", text="hello")
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"kind": "doc", **doc.model_dump(mode="json")}) + "\n{}\n", encoding="utf-8")
    docs, rejections = await collect(Demo(DemoSettings(path=path)).harvest(SINCE, UNTIL))
    assert docs == [doc]
    assert [(r.reason, r.record_id) for r in rejections] == [("invalid_doc", "demo:docs.jsonl:2")]
    with pytest.raises(SourceError, match="demo documents not found"):
        await collect(Demo(DemoSettings(path=tmp_path / "missing.jsonl")).harvest(SINCE, UNTIL))


def test_registry_builds_sources_and_suggests_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_NCBI", "k")
    config = Config(sources={"pubmed": {"api_key_env": "MY_NCBI", "email": "a@b.c"}})
    source = build_source("pubmed", config)
    assert source.name == "pubmed"
    assert source.rate == 10.0  # type: ignore[attr-defined]
    with pytest.raises(UnknownNameError, match="did you mean 'pubmed'"):
        build_source("pubmedd", config)
    with pytest.raises(Exception, match=r"sources\.europepmc"):
        build_source("europepmc", Config(sources={"europepmc": {"bogus": 1}}))
