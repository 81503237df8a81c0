"""The failure rules, through the installed `livemed` against a local OpenAI-compatible server.

- A command whose items ended as failed calls exits 1 with one line (`N of M … failed: <cause>; run
  again to retry them`) and its Run says `failed` (every item) or `partial` (some).
- An answer with a failed grader call is not yet graded: no Score, and no ranking without
  --allow-incomplete.
- A run killed with `kill -9` is marked `interrupted` by the next command, with its flushed usage.
- A second process of the same stage and model on a store stops with one line (a lease).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.records import Answer, Grade, GradeFailure, Rejection, Rubric, Run, Score
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

LIVEMED = Path(sys.executable).parent / "livemed"
MODEL = "vllm/fake-model"
KEY_ENV = "LIVEMED_FAILURE_TEST_KEY"


def _project(tmp_path: Path, base_url: str, *, extra: str = "", store: str = "livemed.db") -> Path:
    """A demo project with offline cases, rubrics and reference answers; MODEL points at `base_url`."""
    config = tmp_path / "livemed.toml"
    config.write_text(
        f'store = "{store}"\ncutoff = 2024-01-01\n[models."{MODEL}"]\nbase_url = "{base_url}"\n'
        f'api_key_env = "{KEY_ENV}"\nmax_retries = 0\ntimeout_s = 5\n{extra}',
        encoding="utf-8",
    )
    from livemed.demo import demo_evidence_path

    for argv in (
        ["harvest", "--source", "demo", "--until", "2024-03-31"],
        ["curate", "--evidence", str(demo_evidence_path())],
        ["rubrics", "--writer", "offline/rules"],
        ["answer", "--model", "offline/reference"],
    ):
        result = CliRunner().invoke(app, ["--config", str(config), *argv])
        assert result.exit_code == 0, result.output
    return config


def livemed(config: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [str(LIVEMED), "--config", str(config), *argv],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def last_line(result: subprocess.CompletedProcess[str]) -> str:
    return " ".join(result.stderr.strip().splitlines()[-1].split())


def runs(config: Path, command: str, model: str | None = None) -> list[Run]:
    with Store(config.parent / "livemed.db") as store:
        found = [r for r in store.iter(Run) if r.command == command and (model is None or model in r.models)]
    return sorted(found, key=lambda r: r.started_at)


@pytest.fixture
def dead() -> Iterator[FakeOpenAIServer]:
    """Every call is refused: HTTP 401."""
    with FakeOpenAIServer(default=Behavior(status=401, error_message="Incorrect API key provided")) as fake:
        yield fake


def test_a_dead_judge_fails_grade_and_never_becomes_a_score(tmp_path: Path, dead: FakeOpenAIServer) -> None:
    config = _project(tmp_path, dead.base_url, extra="max_concurrency = 1\n")
    with Store(tmp_path / "livemed.db") as store:
        answers = store.count()["answer"]
        criteria = sum(len(r.criteria) for r in store.iter(Rubric))
    graded = livemed(config, "grade", "--judge", MODEL)
    assert graded.returncode == 1
    line = last_line(graded)
    assert line.startswith(f"error: {criteria} of {criteria} criteria failed: ")
    assert f"HTTP 401 from {dead.base_url}" in line
    assert line.endswith("; run again to retry them")
    assert len(dead.chat_requests) == 1  # a refused key disables the model: later calls are not sent
    [run] = runs(config, "grade")
    assert (run.outcome, run.counts["call_failed"]) == ("failed", criteria)

    scored = livemed(config, "scores", "--judge", MODEL)
    assert scored.returncode == 1
    assert f"offline/reference (0 of {answers} answers graded)" in last_line(scored)
    with Store(tmp_path / "livemed.db") as store:
        assert store.count().get(Score.kind, 0) == 0  # a dead judge gives no score, never 0.000
        assert all(f.call_failed for f in store.iter(GradeFailure))
    board = livemed(config, "leaderboard", "--judge", MODEL)
    assert board.returncode == 2  # nothing to rank: a user error naming what to do
    assert "unknown judge (with livemed scores" in board.stderr


def test_a_dead_candidate_fails_answer_and_the_rerun_retries_only_what_failed(
    tmp_path: Path,
) -> None:
    def reply(body: dict[str, Any]) -> Behavior:
        prompt = body["messages"][-1]["content"]
        return Behavior(status=500) if sum(map(ord, prompt)) % 3 == 0 else Behavior(text="Rest and fluids.")

    with FakeOpenAIServer(responder=reply) as server:
        config = _project(tmp_path, server.base_url)
        first = livemed(config, "answer", "--model", MODEL)
        failed = sum(1 for r in _rejections(tmp_path) if r.stage == "answer")
        cases = len(server.chat_requests)
        assert 0 < failed < cases
        assert first.returncode == 1
        assert last_line(first).startswith(f"error: {failed} of {cases} answers failed: ")
        assert runs(config, "answer")[-1].outcome == "partial"

        server.responder = lambda body: Behavior(text="Rest and fluids.")
        second = livemed(config, "answer", "--model", MODEL)
        assert second.returncode == 0, second.stderr
        assert len(server.chat_requests) == cases + failed  # only the failed ones were sent again
        assert runs(config, "answer")[-1].outcome == "ok"
        with Store(tmp_path / "livemed.db") as store:
            assert sum(1 for a in store.iter(Answer) if a.model == MODEL) == cases
        assert not [r for r in _rejections(tmp_path) if r.stage == "answer"]  # stale rejections gone


def _rejections(tmp_path: Path) -> list[Rejection]:
    with Store(tmp_path / "livemed.db") as store:
        return list(store.iter(Rejection))


def test_a_dead_rubric_writer_and_curator_fail_and_are_retried(
    tmp_path: Path, dead: FakeOpenAIServer
) -> None:
    config = _project(tmp_path, dead.base_url)
    with Store(tmp_path / "livemed.db") as store:
        store.delete(Rubric.kind, list(store.ids(Rubric.kind))[:2])
    for _ in range(2):  # a failed call is not a verdict: the next run tries the case again
        result = livemed(config, "rubrics", "--writer", MODEL)
        assert result.returncode == 1, result.stdout
        assert last_line(result).startswith("error: 2 of 2 cases failed: ")
        assert "skipping" not in result.stdout
    assert [r.outcome for r in runs(config, "rubrics")][-2:] == ["failed", "failed"]

    from livemed.demo import demo_evidence_path

    evidence = str(demo_evidence_path())
    curated = livemed(config, "curate", "--model", MODEL, "--redo", "--limit", "2", "--evidence", evidence)
    assert curated.returncode == 1
    assert last_line(curated).startswith("error: 2 of 2 documents failed: ")


def test_a_killed_run_is_marked_interrupted_with_its_flushed_usage(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behavior(text="Rest and fluids.", latency=0.5)) as server:
        config = _project(tmp_path, server.base_url, extra="max_concurrency = 1\n")
        env = {KEY_ENV: "sk-test-not-real", "LIVEMED_HEARTBEAT_S": "0.2"}
        process = subprocess.Popen(
            [str(LIVEMED), "--config", str(config), "answer", "--model", MODEL],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(lambda: any(r.usage for r in runs(config, "answer", MODEL)), seconds=60)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        [killed] = runs(config, "answer", MODEL)
        assert killed.outcome == "running"
        flushed = killed.usage[MODEL].calls
        assert flushed >= 1

        livemed(config, "answer", "--model", MODEL)  # the next command on the store notices
        marked = runs(config, "answer", MODEL)[0]
        assert marked.run_id == killed.run_id
        assert marked.outcome == "interrupted"
        assert f"process {process.pid}" in (marked.error or "")
        assert marked.usage[MODEL].calls == flushed


def test_a_second_process_on_the_same_stage_stops_with_one_line(tmp_path: Path, any_store: Store) -> None:
    """On SQLite the second `answer` of one model refuses; on PostgreSQL (CI) it shares the stage with the
    first (`store.claims`, tests/integration/test_scale_out.py). Either way nothing is paid twice."""
    shared = any_store.dialect == "postgresql"
    location = any_store.url if any_store.dialect == "postgresql" else "livemed.db"
    with FakeOpenAIServer(default=Behavior(text="Rest and fluids.", latency=3.0)) as server:
        config = _project(tmp_path, server.base_url, extra="max_concurrency = 1\n", store=str(location))
        env = {**os.environ, KEY_ENV: "sk-test-not-real"}
        first = subprocess.Popen(
            [str(LIVEMED), "--config", str(config), "answer", "--model", MODEL],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for(lambda: len(server.chat_requests) > 0, seconds=60)
            second = livemed(config, "answer", "--model", MODEL)
            if shared:  # it took the items the first had not claimed and waited for the rest
                assert second.returncode == 0, second.stderr
            else:
                assert second.returncode == 2
                line = last_line(second)
                assert line.startswith("error: another `livemed answer` is already running this stage on ")
                assert f"pid {first.pid}" in line
            other = livemed(config, "answer", "--model", "offline/empty")  # another model: its own lease
            assert other.returncode == 0, other.stderr
            assert first.wait(timeout=120) == 0
        finally:
            if first.poll() is None:
                first.kill()
        with Store(location if any_store.dialect == "postgresql" else tmp_path / "livemed.db") as store:
            answers = sum(1 for a in store.iter(Answer) if a.model == MODEL)
            mine = [r.outcome for r in store.iter(Run) if r.command == "answer" and MODEL in r.models]
        assert answers > 0
        assert len(server.chat_requests) == answers  # nothing was paid for twice
        assert mine == (["ok", "ok"] if shared else ["ok"])  # the refused one left no Run


def test_grades_of_a_failed_call_leave_the_answer_unscored_until_regraded(tmp_path: Path) -> None:
    """Some criteria fail, the rest are graded: the answer has no score until a rerun fills them."""
    flaky = {"on": True, "n": 0}

    def reply(body: dict[str, Any]) -> Behavior:
        flaky["n"] += 1
        if flaky["on"] and flaky["n"] <= 2:  # the first answer's first criteria
            return Behavior(status=503)
        return Behavior(text='{"explanation": "ok", "criteria_met": true}')

    with FakeOpenAIServer(responder=reply) as server:
        config = _project(tmp_path, server.base_url, extra="max_concurrency = 1\n")
        first = livemed(config, "grade", "--judge", MODEL)
        assert first.returncode == 1
        with Store(tmp_path / "livemed.db") as store:
            pending = {f.answer_id for f in store.iter(GradeFailure) if f.call_failed}
            answers = store.count()["answer"]
        assert 0 < len(pending) < answers
        scored = livemed(config, "scores", "--judge", MODEL, "--allow-incomplete")
        assert scored.returncode == 0, scored.stderr
        with Store(tmp_path / "livemed.db") as store:
            assert {s.answer_id for s in store.iter(Score)}.isdisjoint(pending)
            assert store.count()[Score.kind] == answers - len(pending)
        assert f"{answers - len(pending)}/{answers}" in scored.stdout

        flaky["on"] = False
        assert livemed(config, "grade", "--judge", MODEL).returncode == 0
        assert livemed(config, "scores", "--judge", MODEL).returncode == 0
        with Store(tmp_path / "livemed.db") as store:
            assert store.count()[Score.kind] == answers
            assert store.count().get(GradeFailure.kind, 0) == 0
            assert store.count()[Grade.kind] == sum(len(r.criteria) for r in store.iter(Rubric))


def _wait_for(condition: Any, *, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # the store may be mid-write
            pass
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


@pytest.mark.parametrize(
    "reply",
    ['{"verdicts": []}', '{"ok": true}', "I cannot help with that."],
    ids=["no-verdicts", "other-json", "refusal"],
)
def test_a_grader_that_gave_no_usable_verdict_has_graded_nothing(tmp_path: Path, reply: str) -> None:
    """A batched grader whose every reply is valid HTTP but holds no usable verdict: `grade` exits 1
    with one line, its Run is failed, and `scores` ranks no one (never 0.000, never "graded N/N")."""
    with FakeOpenAIServer(default=Behavior(text=reply)) as server:
        config = _project(tmp_path, server.base_url)
        with Store(tmp_path / "livemed.db") as store:
            answers = store.count()["answer"]
            criteria = sum(len(r.criteria) for r in store.iter(Rubric))
        graded = livemed(config, "grade", "--judge", MODEL, "--mode", "batched")
        assert graded.returncode == 1, graded.stderr
        line = last_line(graded)
        reason = "missing_verdict" if reply == '{"verdicts": []}' else "unparsable"
        assert line == (
            f"error: {criteria} of {criteria} verdicts unusable ({reason} {criteria}): their answers are "
            f"not graded; grade them again with `livemed grade --judge {MODEL} --retry-failures`"
        )
        [run] = runs(config, "grade")
        assert (run.outcome, run.counts["unusable"]) == ("failed", criteria)

        for policy in ("strict", "not-met", "exclude"):
            scored = livemed(config, "scores", "--judge", MODEL, "--policy", policy)
            assert scored.returncode == 1, scored.stdout
            assert f"offline/reference (0 of {answers} answers graded)" in last_line(scored)
            assert f"grade --judge {MODEL} --retry-failures" in last_line(scored)
            assert f"unusable verdicts, offline/reference: {criteria} of {criteria} (100.0%)" in scored.stdout
            assert "0.000" not in scored.stdout
        with Store(tmp_path / "livemed.db") as store:
            assert store.count().get(Score.kind, 0) == 0

        evaluated = livemed(
            config, "eval", "--model", "offline/reference", "--judge", MODEL, "--mode", "batched"
        )
        assert evaluated.returncode == 1
        assert "verdicts unusable" in last_line(evaluated) or "not ranked" in last_line(evaluated)
        with Store(tmp_path / "livemed.db") as store:
            assert store.count().get(Score.kind, 0) == 0


def test_a_few_unusable_verdicts_are_counted_only_when_asked_and_below_the_share(tmp_path: Path) -> None:
    """One unusable verdict among many: strict leaves its answer ungraded; `--policy not-met` scores it
    as not met when its share is at most --max-failure-share (the share shown); above it, it is refused."""
    sent = {"n": 0}

    def reply(body: dict[str, Any]) -> Behavior:
        sent["n"] += 1
        repair = any(m.get("role") == "assistant" for m in body.get("messages") or [])
        if sent["n"] == 1 or repair:  # the first criterion's call, and its one repair
            return Behavior(text="met, I suppose")
        return Behavior(text='{"explanation": "ok", "criteria_met": true}')

    with FakeOpenAIServer(responder=reply) as server:
        config = _project(tmp_path, server.base_url, extra="max_concurrency = 1\n")
        with Store(tmp_path / "livemed.db") as store:
            answers = store.count()["answer"]
            criteria = sum(len(r.criteria) for r in store.iter(Rubric))
        graded = livemed(config, "grade", "--judge", MODEL)
        assert graded.returncode == 1
        assert last_line(graded).startswith(f"error: 1 of {criteria} verdicts unusable (unparsable 1)")
        strict = livemed(config, "scores", "--judge", MODEL)
        assert strict.returncode == 1
        assert f"({answers - 1} of {answers} answers graded)" in last_line(strict)
        allowed = f"{2 / criteria:.3f}"  # twice the share of one verdict
        counted = livemed(
            config, "scores", "--judge", MODEL, "--policy", "not-met", "--max-failure-share", allowed
        )
        assert counted.returncode == 0, counted.stderr
        share = f"{1 / criteria:.1%}"
        assert f"unusable verdicts, offline/reference: 1 of {criteria} ({share}); counted as not-met" in (
            counted.stdout
        )
        assert f"{answers}/{answers}" in counted.stdout
        windowed = livemed(
            config, "scores", "--judge", MODEL, "--policy", "not-met", "--max-failure-share", allowed,
            "--min-date", "2000-01-01",
        )  # fmt: skip
        assert windowed.returncode == 0, windowed.stderr  # a date window keeps the shares and their limit
        assert f"({share}); counted as not-met" in windowed.stdout
        refused = livemed(
            config, "scores", "--judge", MODEL, "--policy", "not-met", "--max-failure-share", "0"
        )
        assert refused.returncode == 1
        assert "above --max-failure-share 0" in refused.stdout
