"""Several `livemed` processes on one PostgreSQL store partition the work: the same records as one
process, every call sent once (counted at the local fake server), and a killed worker's claims taken
over by another so that nothing is lost."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from livemed.records import Answer, Grade, GradeFailure, Run
from livemed.store import Store
from tests.conftest import _fresh_postgres, _postgres_url
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, judge_responder
from tests.live.helpers import KEY_ENV as LIVE_KEY_ENV
from tests.live.test_eval import CANDIDATE, CRITERIA, JUDGE, KEY_ENV, healthbench_file

PROGRAM = Path(sys.executable).with_name("livemed")
EXAMPLES = 24
pytestmark = pytest.mark.postgres


def _postgres_and_program() -> str:
    """The test server's URL; skips without PostgreSQL or the installed `livemed` program."""
    base = _postgres_url()
    if not base:
        pytest.skip("PostgreSQL not configured (set LIVEMED_TEST_POSTGRES_URL; .ci/run does)")
    if not PROGRAM.exists():
        pytest.skip("the livemed program is not installed in this environment")
    return base


@pytest.fixture
def pg_url() -> Iterator[str]:
    for store in _fresh_postgres(_postgres_and_program()):
        yield store.url


def project(folder: Path, store_url: str, server_url: str, *extra: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [f"store = {json.dumps(store_url)}"]
    for model in (CANDIDATE, JUDGE):
        lines += [
            f'[models."{model}"]',
            f'base_url = "{server_url}"',
            f'api_key_env = "{KEY_ENV}"',
            "max_concurrency = 4",
            "max_retries = 0",
            *extra,
            f'[prices."{model}"]',
            "input = 0.15",
            "output = 0.6",
        ]
    config = folder / "livemed.toml"
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def start(config: Path, *argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, KEY_ENV: "sk-test-not-real", LIVE_KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    command = [str(PROGRAM), "--config", str(config), *argv]
    pipe = subprocess.PIPE
    return subprocess.Popen(command, env=env, stdout=pipe, stderr=pipe, text=True, cwd=config.parent)


def run_all(config: Path, workers: int, *argv: str) -> list[str]:
    processes = [start(config, *argv) for _ in range(workers)]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, out + err
        outputs.append(out)
    return outputs


def stored(url: str) -> dict[str, Any]:
    with Store(url) as store:
        return {
            "answers": sorted((a.id, a.text) for a in store.iter(Answer)),
            "grades": sorted((g.id, g.met, g.explanation) for g in store.iter(Grade)),
            "failures": sorted(f.id for f in store.iter(GradeFailure)),
        }


def sent(server: FakeOpenAIServer) -> Counter[str]:
    """How often each distinct request body reached the server."""
    return Counter(json.dumps(r.body, sort_keys=True) for r in server.chat_requests)


def one_process_records(tmp_path: Path, data: Path, *grading: str) -> dict[str, Any]:
    base = _postgres_url()
    assert base is not None
    with FakeOpenAIServer(responder=judge_responder()) as server:
        for store in _fresh_postgres(base):
            url = store.url
            config = project(tmp_path / "one", url, server.base_url)
            run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
            run_all(config, 1, "answer", "--model", CANDIDATE)
            run_all(config, 1, "grade", "--judge", JUDGE, *grading)
            return stored(url)
    raise AssertionError("no store")


@pytest.mark.parametrize("workers", [2, 4])
def test_n_workers_on_one_postgresql_store_send_each_call_once(
    tmp_path: Path, pg_url: str, workers: int
) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    with FakeOpenAIServer(responder=judge_responder(latency=0.05)) as server:
        config = project(tmp_path / "many", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        answered = run_all(config, workers, "answer", "--model", CANDIDATE)
        graded = run_all(config, workers, "grade", "--judge", JUDGE)
        calls = sent(server)
    assert len(calls) == EXAMPLES + EXAMPLES * CRITERIA
    assert set(calls.values()) == {1}  # no call sent twice
    found = stored(pg_url)
    assert found == one_process_records(tmp_path, data)
    assert len(found["grades"]) == EXAMPLES * CRITERIA
    assert all("answers by" in out for out in answered)
    assert all("grades by" in out for out in graded)
    with Store(pg_url) as store:
        runs = [r for r in store.iter(Run) if r.command == "grade"]
        assert store.state_items("claim") == {}  # every claim given back
    assert len(runs) == workers
    assert {r.outcome for r in runs} == {"ok"}
    shares = [r.counts.get("grade", 0) for r in runs]
    # Each grade written by one worker. How the work was shared is timing (a loaded machine staggers the
    # starts, and the first worker may grade everything before the others start): not asserted.
    assert sum(shares) == EXAMPLES * CRITERIA


@pytest.mark.parametrize(
    ("mode", "key"), [("per-criterion", "grade|grade-answer:"), ("batched", "grade|grade-batch:")]
)
def test_a_killed_worker_loses_its_claims_to_the_next_and_nothing_is_lost(
    tmp_path: Path, pg_url: str, mode: str, key: str
) -> None:
    """Per criterion a claim is an answer (its criteria in flight share it); batched, an answer's
    batch of criteria (one call)."""
    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    total = EXAMPLES * CRITERIA
    with FakeOpenAIServer(responder=judge_responder(latency=0.4)) as server:
        config = project(tmp_path / "p", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE)
        answering = len(server.chat_requests)
        victim = start(config, "grade", "--judge", JUDGE, "--mode", mode)
        with Store(pg_url) as store:
            deadline = time.monotonic() + 60
            while next(store.ids("grade"), None) is None and time.monotonic() < deadline:
                time.sleep(0.05)
            held = store.state_items("claim")
            assert held, "the worker holds claims while it grades"
            assert all(k.startswith(key) for k in held)
            victim.send_signal(signal.SIGKILL)
            victim.communicate(timeout=30)
            orphaned = len(store.state_items("claim"))
            before = len(list(store.iter(Grade)))
        assert 0 < before < total
        assert orphaned > 0  # the killed worker's claims are still there
        run_all(config, 1, "grade", "--judge", JUDGE, "--mode", mode)
        grading = Counter(json.dumps(r.body, sort_keys=True) for r in server.chat_requests[answering:])
    found = stored(pg_url)
    assert len(found["grades"]) == total  # nothing lost
    assert found["failures"] == []
    assert len(grading) == (total if mode == "per-criterion" else EXAMPLES)
    repeated = sum(n - 1 for n in grading.values())
    assert repeated <= 8  # at most what was in flight when it died (2 x max_concurrency); never a written one
    with Store(pg_url) as store:
        assert store.state_items("claim") == {}


def test_two_update_workers_on_postgresql_store_what_one_update_stores(tmp_path: Path, pg_url: str) -> None:
    from tests.live.helpers import contents
    from tests.live.helpers import project as live_project

    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        alone = live_project(tmp_path / "alone", docs=10, url=server.base_url)
        run_all(alone, 1, "update")  # one process, on the project's SQLite store
        one = sent(server)
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        shared = live_project(tmp_path / "shared", docs=10, url=server.base_url)
        run_all(shared, 2, "--store", pg_url, "update")
        two = sent(server)
    assert set(two.values()) == {1}  # no call sent twice
    assert two == one  # the same calls
    stored = contents(shared, pg_url)
    assert stored == contents(alone)
    with Store(pg_url) as store:
        updates = [r for r in store.iter(Run) if r.command == "update"]
        harvests = [r for r in store.iter(Run) if r.command == "harvest"]
    assert [r.outcome for r in updates] == ["ok", "ok"]
    kept = sum(r.counts.get("demo.kept", 0) for r in harvests)
    assert kept == len(stored["docs"])  # each document harvested once (one worker at a time harvests)


def test_two_eval_workers_each_end_with_every_answer_graded(tmp_path: Path, pg_url: str) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    with FakeOpenAIServer(responder=judge_responder(latency=0.05)) as server:
        config = project(tmp_path / "p", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        outputs = run_all(config, 2, "eval", "-m", CANDIDATE, "--judge", JUDGE)  # each exits 0: all graded
        calls = sent(server)
    assert set(calls.values()) == {1}
    assert len(calls) == EXAMPLES * (1 + CRITERIA)
    assert all(CANDIDATE in out for out in outputs)  # both print the ranked leaderboard
    with Store(pg_url) as store:
        assert sum(1 for _ in store.iter(Grade)) == EXAMPLES * CRITERIA


def test_two_workers_never_grade_an_unusable_verdict_again(tmp_path: Path, pg_url: str) -> None:
    """An unparsable verdict is a verdict (not retried): a second worker that finds another's failure
    stored after it claimed leaves it, so every grading request reaches the server once. A worker that
    wrote unusable verdicts exits 1 saying so (they are not grades)."""
    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    with FakeOpenAIServer(responder=lambda body: Behavior(text="I cannot decide.", latency=0.05)) as server:
        config = project(tmp_path / "many", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE)
        answering = len(server.chat_requests)
        outputs = []
        for process in [start(config, "grade", "--judge", JUDGE) for _ in range(2)]:
            out, err = process.communicate(timeout=300)
            outputs.append(out)
            wrote_failures = re.search(r"wrote [1-9]\d* grade failures", out) is not None
            assert process.returncode == (1 if wrote_failures else 0), out + err
            if wrote_failures:
                assert "verdicts unusable (unparsable " in err
        grading = Counter(json.dumps(r.body, sort_keys=True) for r in server.chat_requests[answering:])
    assert len(grading) >= EXAMPLES * CRITERIA
    assert set(grading.values()) == {1}  # no grading request sent twice
    wrote = [int(m) for out in outputs for m in re.findall(r"wrote (\d+) grade failures", out)]
    assert sum(wrote) == EXAMPLES * CRITERIA  # and none graded again from the shared cache either
    with Store(pg_url) as store:
        assert len(list(store.iter(GradeFailure))) == EXAMPLES * CRITERIA


BATCHED = ("--mode", "batched")


@pytest.mark.parametrize("workers", [2, 4])
def test_n_workers_grading_batched_claim_each_answers_batch_once(
    tmp_path: Path, pg_url: str, workers: int
) -> None:
    """Batched grading claims an answer's batch of criteria: N workers send each batch call once (not
    again from the cache after another worker wrote it) and store what one process stores. A worker
    claims a batch of 64 items at a time, so more answers than that: several workers can hold batches
    at once."""
    examples = 160
    data = healthbench_file(tmp_path / "hb.jsonl", examples)
    with FakeOpenAIServer(responder=judge_responder(latency=0.2)) as server:
        config = project(tmp_path / "many", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE)
        answering = len(server.chat_requests)
        graded = run_all(config, workers, "grade", "--judge", JUDGE, *BATCHED)
        grading = Counter(json.dumps(r.body, sort_keys=True) for r in server.chat_requests[answering:])
    assert len(grading) == examples  # one call per answer's batch of criteria
    assert set(grading.values()) == {1}  # none sent twice
    found = stored(pg_url)
    assert len(found["grades"]) == examples * CRITERIA
    assert found == one_process_records(tmp_path, data, *BATCHED)
    assert all("grades by" in out for out in graded)
    with Store(pg_url) as store:
        runs = [r for r in store.iter(Run) if r.command == "grade"]
        assert store.state_items("claim") == {}
    shares = [r.counts.get("grade", 0) for r in runs]
    assert sum(shares) == examples * CRITERIA  # each grade written by one worker (how shared is timing)


@pytest.fixture
def empty_pg_url() -> Iterator[str]:
    """A new PostgreSQL database with no livemed schema yet (the workers create it)."""
    import uuid

    import sqlalchemy as sa

    from livemed.store import resolve_url

    base = _postgres_and_program()
    name = f"livemed_test_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(resolve_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
    try:
        yield sa.make_url(resolve_url(base)).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def test_four_update_workers_on_a_new_database_wait_for_the_harvest_and_share_the_curation(
    tmp_path: Path, empty_pg_url: str
) -> None:
    """Four `update`s started at once on an empty database: one creates the schema while the others
    wait (no clash), one harvest keeps the documents (the others wait for it, or harvest again and keep
    nothing new), then all curate: the records of one update, each call sent once."""
    from tests.live.helpers import contents
    from tests.live.helpers import project as live_project

    docs = 79  # every demo document: several curation batches of 16
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        alone = live_project(tmp_path / "alone", docs=docs, url=server.base_url)
        run_all(alone, 1, "update")
        one = sent(server)
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        shared = live_project(tmp_path / "shared", docs=docs, url=server.base_url)
        outputs = run_all(shared, 4, "--store", empty_pg_url, "update")
        four = sent(server)
    assert set(four.values()) == {1}
    assert four == one
    assert contents(shared, empty_pg_url) == contents(alone)
    waited = [out for out in outputs if "another worker on this store harvested (waited" in out]
    with Store(empty_pg_url) as store:
        harvests = [r for r in store.iter(Run) if r.command == "harvest"]
        curations = [r for r in store.iter(Run) if r.command == "curate"]
    # Each worker that did not wait for the harvest ran one itself; a worker that started after it had
    # ended (a loaded machine staggers the starts) harvests again and finds nothing new to keep. How many
    # waited, and how the curation was shared, is timing: what holds whatever the timing is asserted.
    assert len(waited) + len(harvests) == 4
    assert [r.counts.get("demo.kept", 0) > 0 for r in harvests].count(True) == 1
    assert len(curations) == 4
    kept = contents(alone)["docs"]  # the documents the pre-filters kept (the others are not stored)
    assert sum(r.counts.get("processed", 0) for r in curations) == len(kept)  # each curated once
