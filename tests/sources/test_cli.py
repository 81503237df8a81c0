from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.records import Doc, Rejection, Run
from livemed.sources import SOURCES
from livemed.sources.base import DocOrRejection, SourceSettings
from livemed.store import Store
from tests.fakes.http_replay import ReplayServer, Reply
from tests.sources.helpers import day

BODY = (
    "<p>My father is 68 and takes lisinopril for hypertension. His doctor suggested ibuprofen for knee "
    "arthritis pain. Is there a risk for his kidney function or blood pressure with this combination?</p>"
    "<p>He also has type 2 diabetes treated with metformin, and his last blood test showed a creatinine of "
    "1.4 mg/dL. His cardiologist has not been told about the ibuprofen yet. What should we watch for?</p>"
)


def se_handler(path: str, query: dict[str, str]) -> Reply:
    if path == "/search/advanced":
        base = int(day("2025-03-05").timestamp())
        items: list[dict[str, Any]] = [
            {
                "question_id": i,
                "title": f"NSAID and ACE inhibitor {i}",
                "body": BODY if i != 3 else "<p>hi</p>",
                "creation_date": base + i,
                "link": f"https://medicalsciences.stackexchange.com/q/{i}",
                "owner": {"user_id": 1, "display_name": "asker"},
                "content_license": "CC BY-SA 4.0",
            }
            for i in (1, 2, 3)
        ]
        return Reply.json({"items": items, "has_more": False, "quota_remaining": 100})
    return Reply.json({"items": [], "has_more": False, "quota_remaining": 100})


def config(tmp_path: Path, se_url: str, epmc_url: str) -> Path:
    path = tmp_path / "livemed.toml"
    path.write_text(
        f"""
cutoff = 2025-01-01
[sources.stackexchange]
base_url = "{se_url}"
backoff_base_s = 0.01
[sources.europepmc]
base_url = "{epmc_url}"
backoff_base_s = 0.01
max_retries = 1
[prefilter]
min_chars = 50
""",
        encoding="utf-8",
    )
    return path


def test_sources_and_harvest_commands_with_local_servers(tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "250"})
    store_path = tmp_path / "store.db"
    with ReplayServer(se_handler) as se, ReplayServer(lambda p, q: Reply(503, b"down")) as epmc:
        base = ["--store", str(store_path), "--config", str(config(tmp_path, se.url, epmc.url))]
        listing = runner.invoke(app, [*base, "sources"])
        assert listing.exit_code == 0, listing.output
        for name in ("europepmc", "pubmed", "stackexchange", "files", "demo"):
            assert name in listing.output
        assert se.url in listing.output

        args = [
            *base,
            "harvest",
            "-s",
            "stackexchange",
            "-s",
            "europepmc",
            "--since",
            "2025-03-01",
            "--until",
            "2025-03-31",
        ]
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output
        assert "europepmc" in result.output
        assert "HTTP 503" in result.output
        assert "duplicate_near" in result.output  # questions 1 and 2 have the same body
        assert "too_short" in result.output
        again = runner.invoke(app, [*args[:-4], "--since", "2025-03-01", "--until", "2025-03-31"])
        assert again.exit_code == 1

    with Store(store_path) as store:
        docs = list(store.iter(Doc))
        assert [d.id for d in docs] == ["stackexchange:1"]
        assert docs[0].text.startswith("My father is 68")
        assert docs[0].language == "en"
        marks = store.state_items("watermark")
        assert marks == {}  # a --since window after the cutoff (2025-01-01) leaves the gap for a default run
        runs = [r for r in store.iter(Run) if r.command == "harvest"]
        assert len(runs) == 2
        assert all(r.outcome == "failed" for r in runs)  # europepmc failed in both
        assert all(r.error and "europepmc" in r.error and "HTTP 503" in r.error for r in runs)
        first = min(runs, key=lambda r: r.started_at)
        assert (first.counts["europepmc.failed"], first.counts["stackexchange.failed"]) == (1, 0)
        assert first.counts["stackexchange.kept"] == 1
        assert first.counts["stackexchange.rejected.prefilter.duplicate_near"] == 1
        assert first.counts["stackexchange.rejected.prefilter.too_short"] == 1
        later = max(runs, key=lambda r: r.started_at)
        assert later.counts["stackexchange.kept"] == 0
        assert later.counts["stackexchange.skipped"] == 3
        assert store.count()["doc"] == 1


def test_demo_source_from_a_configured_path_and_a_missing_file(tmp_path: Path) -> None:
    good = Doc(
        source="demo",
        source_id="d1",
        published=day("2025-05-01"),
        doc_type="thread",
        text=BODY.replace("<p>", "").replace("</p>", " "),
    )
    data = tmp_path / "docs.jsonl"
    data.write_text(good.model_dump_json() + "\n", encoding="utf-8")
    cfg = tmp_path / "livemed.toml"
    cfg.write_text(f'cutoff = 2025-01-01\n[sources.demo]\npath = "{data}"\n', encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "200"})
    base = ["--store", str(tmp_path / "s.db"), "--config", str(cfg)]
    result = runner.invoke(app, [*base, "harvest", "--source", "demo"])
    assert result.exit_code == 0, result.output
    with Store(tmp_path / "s.db") as store:
        assert store.has("doc", ["demo:d1"]) == {"demo:d1"}
    cfg.write_text(
        f'cutoff = 2025-01-01\n[sources.demo]\npath = "{tmp_path / "gone.jsonl"}"\n', encoding="utf-8"
    )
    missing = runner.invoke(app, [*base, "harvest", "--source", "demo"])
    assert missing.exit_code == 1
    assert "demo documents not found" in missing.output
    assert "sources.demo.path" in missing.output


class BrokenSettings(SourceSettings):
    pass


class Broken:
    """A source with a bug: one document, then an exception that is not a SourceError."""

    name = "broken"
    ordered = True

    def __init__(self, settings: BrokenSettings) -> None:
        self.settings = settings

    async def harvest(
        self, since: datetime, until: datetime, *, limit: int | None = None
    ) -> AsyncIterator[DocOrRejection]:
        yield Doc(source="broken", source_id="b1", published=day("2025-05-01"), text=BODY)
        raise KeyError("items")


Settings = BrokenSettings  # what the source registry looks up beside the class


def test_a_bad_record_is_a_rejection_and_a_broken_source_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SOURCES, "broken", "tests.sources.test_cli:Broken")
    text = BODY.replace("<p>", "").replace("</p>", " ")
    rows: list[dict[str, Any]] = [
        {"id": "good1", "date": "2025-04-01", "post": text, "replies": [{"text": "ok", "author": "dr a"}]},
        {"id": "bad", "date": "2025-04-02", "post": text, "replies": [{"text": "ok", "author": 5}]},
        {"id": "good2", "date": "2025-04-03", "post": text + " Also, he smokes.", "replies": ["thanks"]},
    ]
    export = tmp_path / "threads.jsonl"
    export.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    cfg = tmp_path / "livemed.toml"
    cfg.write_text(f'cutoff = 2025-01-01\n[sources.files]\npath = "{export}"\n', encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "250"})
    base = ["--store", str(tmp_path / "s.db"), "--config", str(cfg)]
    result = runner.invoke(app, [*base, "harvest", "-s", "broken", "-s", "files", "--no-prefilter"])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    failures = [line for line in result.output.splitlines() if "source failed" in line]
    assert failures == ["source failed: broken: unexpected KeyError: 'items'"]
    with Store(tmp_path / "s.db") as store:
        assert sorted(store.ids("doc")) == ["broken:b1", "files:good1", "files:good2"]
        [rejected] = store.iter(Rejection)
        assert (rejected.stage, rejected.reason) == ("harvest", "bad_replies")
        assert rejected.detail.startswith("threads.jsonl:2: ")
        assert "'bad'" in rejected.detail
        assert "reply 0: author" in rejected.detail
        marks = store.state_items("watermark")
        assert "broken" not in marks  # a failed source keeps its watermark
        assert marks["files"].startswith("2025-04-03")
        [run] = [r for r in store.iter(Run) if r.command == "harvest"]
        assert run.outcome == "failed"
        assert run.counts["broken.failed"] == 1
        assert run.counts["files.failed"] == 0


def test_skipped_bad_records_make_harvest_exit_1_and_the_rest_is_stored(tmp_path: Path) -> None:
    """The bad-input rule: records skipped -> exit 1 with one line; a re-run adds nothing and says so."""
    text = BODY.replace("<p>", "").replace("</p>", " ")
    good = {"id": "good1", "date": "2025-04-01", "post": text, "replies": ["thanks"]}
    export = tmp_path / "threads.jsonl"
    export.write_text(json.dumps(good) + "\n{not json\n", encoding="utf-8")
    cfg = tmp_path / "livemed.toml"
    cfg.write_text(f'cutoff = 2025-01-01\n[sources.files]\npath = "{export}"\n', encoding="utf-8")
    runner = CliRunner(env={"COLUMNS": "250"})
    base = ["--store", str(tmp_path / "s.db"), "--config", str(cfg)]
    result = runner.invoke(app, [*base, "harvest", "-s", "files", "--no-prefilter"])
    assert result.exit_code == 1, result.output
    assert "1 record(s) could not be read and were skipped" in result.output
    with Store(tmp_path / "s.db") as store:
        assert sorted(store.ids("doc")) == ["files:good1"]
        [rejected] = store.iter(Rejection)
        assert rejected.detail.startswith("threads.jsonl:2: ")
    again = runner.invoke(app, [*base, "harvest", "-s", "files", "--no-prefilter"])
    assert again.exit_code == 0, again.output  # logged by the first run: counted as already stored
