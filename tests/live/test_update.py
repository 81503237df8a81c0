"""`livemed update`: every stage for what is new only, a Run per stage and one for the update, the
store lock, and a `kill -9` mid-run resumed with nothing lost, nothing duplicated and no finished call
paid again."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from livemed.errors import StageBusyError
from livemed.records import Run, utcnow
from livemed.store import Store, leases
from tests.fakes.openai_server import FakeOpenAIServer, judge_responder
from tests.live.helpers import cli, contents, program, program_args, project
from tests.live.test_eval import HoldAfter  # answers n requests, then holds the rest open
from tests.waits import cached, until


def runs(config: Path) -> list[Run]:
    with Store(config.parent / "livemed.db") as store:
        return sorted(store.iter(Run), key=lambda r: r.started_at)


def test_update_runs_every_stage_and_a_second_update_finds_nothing_new(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=10)
    first = cli(config, "update")
    assert first.exit_code == 0, first.output
    stored = contents(config)
    assert stored["cases"]
    assert len(stored["scores"]) == len(stored["answers"]) == len(stored["cases"])
    update = [r for r in runs(config) if r.command == "update"]
    assert len(update) == 1
    assert update[0].outcome == "ok"
    stage_runs = [r for r in runs(config) if r.settings.get("update") == update[0].run_id]
    assert [r.command for r in stage_runs] == ["harvest", "curate", "rubrics", "eval", "scores"]
    assert update[0].counts["curate: cases"] == len(stored["cases"])
    assert update[0].counts["scores: scores"] == len(stored["scores"])

    second = cli(config, "update")
    assert second.exit_code == 0, second.output
    assert contents(config) == stored  # idempotent
    last = [r for r in runs(config) if r.command == "update"][-1]
    assert last.counts["harvest: documents kept"] == 0
    assert last.counts["curate: cases"] == 0
    assert last.counts["answers and grades: answers"] == 0
    assert last.counts["scores: scores"] == 0


def test_new_documents_are_the_only_work_of_the_next_update(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=6)
    assert cli(config, "update").exit_code == 0
    before = contents(config)
    lines = (config.parent / "docs.jsonl").read_text(encoding="utf-8")
    project(tmp_path / "q", docs=6, skip=6)  # the next six demo documents, appended to the source
    more = (tmp_path / "q" / "docs.jsonl").read_text(encoding="utf-8")
    (config.parent / "docs.jsonl").write_text(lines + more, encoding="utf-8")
    result = cli(config, "update")
    assert result.exit_code == 0, result.output
    after = contents(config)
    new_cases = set(after["cases"]) - set(before["cases"])
    last = [r for r in runs(config) if r.command == "update"][-1]
    assert new_cases
    assert last.counts["curate: cases"] == len(new_cases)
    assert last.counts["answers and grades: answers"] == len(new_cases)
    assert set(before["answers"]) <= set(after["answers"])


def test_without_models_update_harvests_and_curates_and_says_what_it_skipped(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=5, update="")
    result = cli(config, "update")
    assert result.exit_code == 0, result.output
    assert "rubrics: skipped — no rubric writer" in result.output
    assert "answers and grades: skipped — no candidate models" in result.output
    assert "set [update] writer" in result.output  # not eaten as Rich markup
    assert "([update] models)" in result.output
    assert "( models)" not in result.output
    stored = contents(config)
    assert stored["docs"]
    assert stored["cases"]
    assert not stored["rubrics"]
    assert not stored["answers"]


def test_a_second_update_exits_with_one_line_while_another_holds_the_store_lock(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=3)
    other = subprocess.Popen(["sleep", "60"])  # a live process on this host holds the lock
    try:
        with Store(config.parent / "livemed.db") as store:
            holder = leases.Holder("someone", "update", other.pid, leases.this_host(), utcnow().isoformat())
            leases.acquire(store, "update", holder)
        result = cli(config, "update")
        assert isinstance(result.exception, StageBusyError)  # one line, exit 2 (`livemed.cli.run`)
        assert "another `livemed update` is already running" in str(result.exception)
        assert not contents(config)["docs"]  # nothing was done
        started = time.monotonic()
        waited = cli(config, "update", "--wait", "0.5")
        assert isinstance(waited.exception, StageBusyError)  # still held after half a second
        assert time.monotonic() - started >= 0.5
    finally:
        other.kill()
        other.wait()
    assert cli(config, "update").exit_code == 0  # its holder is gone: the lock is taken over


def test_a_source_that_fails_fails_the_update_with_one_line_and_the_rest_goes_on(tmp_path: Path) -> None:
    config = project(tmp_path / "p", docs=4)
    (config.parent / "docs.jsonl").unlink()
    result = cli(config, "update")
    assert result.exit_code == 1
    assert "demo documents not found" in result.output
    assert "[yellow]" not in result.output  # the markup is rendered, not printed
    update = [r for r in runs(config) if r.command == "update"][-1]
    assert update.outcome == "failed"
    assert "harvest:" in (update.error or "")


# --------------------------------------------------------------------------- kill -9 and run again

ANSWERED = 10  # replies the server gives before it holds every later request open


def request_keys(server: FakeOpenAIServer) -> list[str]:
    return [json.dumps(r.body["messages"], sort_keys=True) for r in server.chat_requests]  # type: ignore[index]


def test_kill_9_during_update_then_update_again_equals_an_uninterrupted_update(tmp_path: Path) -> None:
    with FakeOpenAIServer(responder=judge_responder()) as clean:
        reference = project(tmp_path / "clean", docs=6, url=clean.base_url)
        done = program(reference, "update")
        assert done.returncode == 0, done.stdout + done.stderr
        total = len(clean.chat_requests)
    responder = HoldAfter(ANSWERED)
    with FakeOpenAIServer(responder=responder) as server:
        config = project(tmp_path / "p", docs=6, url=server.base_url)
        args, env = program_args(config, "update")
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        until(lambda: len(server.chat_requests) > ANSWERED, process, "update's held calls")
        # every answered reply returned and the next call hangs; kill once the store holds the replies
        paid = {json.dumps([r.body["model"], r.body["messages"]]) for r in server.chat_requests[:ANSWERED]}  # type: ignore[index]
        until(lambda: cached(config.parent / "livemed.db") >= len(paid), process, "the replies' cache writes")
        process.kill()  # SIGKILL: no clean-up of any kind
        process.communicate()
        answered = set(request_keys(server)[:ANSWERED])
        responder.hold = False
        before = len(server.chat_requests)
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stdout + again.stderr
        resent = request_keys(server)[before:]
    assert len(resent) == total - ANSWERED  # nothing answered before the kill is paid for again
    assert not answered & set(resent)
    assert contents(config) == contents(reference)
    killed = next(r for r in runs(config) if r.command == "update")
    assert killed.outcome == "interrupted"  # found dead by the second update
