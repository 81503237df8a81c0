"""`livemed update` streams: the first new cases are answered while curation is still working on the
rest (no barrier between curate, rubrics and answers+grades), and the records are those of an update
that no one held up."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from livemed.cli.context import AppState
from livemed.cli.update_commands import build_tools
from livemed.live.update import run_update
from livemed.records import Case, Doc, Rejection, Run
from livemed.store import Store
from tests.fakes.openai_server import FakeOpenAIServer, judge_responder
from tests.live.helpers import KEY_ENV, cli, contents, project

FIRST = 16  # documents curated freely (one curation batch); the rest wait for the model server
DOCS = 40
WAIT_S = 60.0  # how long a held document waits for the first model request before the run fails


class HeldAfterFirst:
    """The real curation chain, except that every document after the first `FIRST` is held until the
    fake server has received a request (an answer: curation and rubrics here make no model call).
    Stage after stage, nothing would reach the server before curation ended: the update fails."""

    def __init__(self, chain: Any, server: FakeOpenAIServer) -> None:
        self.chain, self.server = chain, server
        self.started = 0
        self.curated = 0
        self.curated_at_first_request: int | None = None

    async def __call__(self, doc: Doc) -> Case | Rejection:
        self.started += 1
        if self.started > FIRST:
            waited = 0.0
            while not self.server.chat_requests:
                if waited > WAIT_S:
                    raise RuntimeError(f"no model request while {doc.id} waited: the stages did not stream")
                await asyncio.sleep(0.01)
                waited += 0.01
            if self.curated_at_first_request is None:
                self.curated_at_first_request = self.curated
        outcome: Case | Rejection = await self.chain(doc)
        self.curated += 1
        return outcome


def test_update_answers_the_first_cases_before_curation_has_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-not-real")
    with FakeOpenAIServer(responder=judge_responder()) as server:
        config = project(tmp_path / "held", docs=DOCS, url=server.base_url)
        state = AppState(config_path=str(config))
        tools = build_tools(state, None)
        gates: list[HeldAfterFirst] = []

        def held_chain(engine: Any) -> Any:
            gates.append(HeldAfterFirst(tools.chain(engine), server))
            return gates[-1]

        summary, run = run_update(state.store, state.config.update, replace(tools, chain=held_chain))
        state.store.close()
        first_request_at = server.chat_requests[0].received_at
        answers = [r for r in server.chat_requests if "criterion" not in str(r.body)]
    [gate] = gates
    assert run.error is None
    assert run.outcome == "ok"
    assert gate.started == gate.curated > FIRST  # every document was curated, some after the gate
    assert gate.curated_at_first_request is not None
    assert gate.curated_at_first_request < gate.curated  # documents were still uncurated then
    assert answers
    assert answers[0].received_at == first_request_at  # that first request was an answer
    assert summary.stage("curate").new["cases"] == run.counts["curate: cases"] > 0
    assert summary.stage("answers and grades").new["answers"] == summary.stage("curate").new["cases"]

    with FakeOpenAIServer(responder=judge_responder()) as server:
        reference = project(tmp_path / "free", docs=DOCS, url=server.base_url)
        assert cli(reference, "update").exit_code == 0
    assert contents(config) == contents(reference)  # the same records as an update no one held up


def imported_icd(code: str, cache: Path) -> bool:
    """Whether running `code` in a fresh interpreter (cache folder `cache`) read `simple_icd_10_cm`."""
    script = f"{code}\nimport sys\nprint('simple_icd_10_cm' in sys.modules)"
    env = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200", "LIVEMED_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.split()[-1] == "True"


def test_an_update_with_nothing_new_never_reads_the_icd_tables(config: Path, tmp_path: Path) -> None:
    """The vocabulary pre-filter builds its ICD-10 automaton on the first document it checks; an
    update that harvests nothing new checks none (the tables were most of such an update's time)."""
    argv = ["--config", str(config), "update"]
    update = f"from livemed.cli.application import app\napp({argv!r}, standalone_mode=False)"
    assert not imported_icd(update, tmp_path / "cache")
    with Store(config.parent / "livemed.db") as store:
        assert not [r for r in store.iter(Run) if r.command == "update" and r.outcome != "ok"]
    project(config.parent, docs=11)  # one demo document more: it is checked, so the tables are read
    assert imported_icd(update, tmp_path / "cache")


def test_the_icd_words_are_read_once_when_a_document_is_checked_then_come_from_the_cache(
    tmp_path: Path,
) -> None:
    made = (
        "from livemed.prefilter.vocabulary import VocabularyFilter, icd10_terms\nfilter = VocabularyFilter()"
    )
    assert not imported_icd(made, tmp_path)
    doc = "Doc(source='demo', source_id='x', published='2025-01-01T00:00:00Z', text='fever and cough')"
    check = f"{made}\nfrom livemed.records import Doc\nfilter({doc})\nprint(len(icd10_terms()))"
    assert imported_icd(check, tmp_path)  # no cache yet: the tables are read, the words written
    [cached] = (tmp_path / "vocabulary").iterdir()
    assert not imported_icd(check, tmp_path)  # the second process reads the words from the cache
    same = "from livemed.prefilter import vocabulary as v\nassert v.icd10_terms() == v._read_icd10_terms()"
    assert imported_icd(same, tmp_path)  # the cached words are the words the tables give
    assert len(cached.read_text(encoding="utf-8").split()) > 1000


def test_with_a_max_cost_the_streamed_stages_share_what_is_left_equally(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=4)  # offline curator, writer, candidate and judge
    state = AppState(config_path=str(config))
    tools = build_tools(state, None)
    budgets: list[float | None] = []

    def engine(budget: float | None, no_cache: bool) -> Any:
        budgets.append(budget)
        return tools.engine(budget, no_cache)

    plan = state.config.update.model_copy(update={"max_cost": 3.0})
    _, run = run_update(state.store, plan, replace(tools, engine=engine))
    state.store.close()
    assert run.outcome == "ok"
    assert budgets == [1.0, 1.0, 1.0]  # curate, rubrics, answers+grades: one third each
