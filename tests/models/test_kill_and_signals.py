"""`kill -9` and SIGTERM on a real `livemed answer`: how many paid calls the next run makes again.

The server answers the first ANSWERED requests and then holds every later one open, so the process is
killed while calls are in flight and after ANSWERED paid replies have returned.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from livemed.records import Run
from livemed.store import Store
from tests.builders import make_case
from tests.fakes.openai_server import Behavior, FakeOpenAIServer
from tests.models.conftest import KEY_ENV
from tests.waits import cached, until

CASES = 12
ANSWERED = 6
CONCURRENCY = 2
PROGRAM = Path(sys.executable).with_name("livemed")


def start_answer(tmp_path: Path, server: FakeOpenAIServer, api_key: str) -> subprocess.Popen[str]:
    if not PROGRAM.exists():
        pytest.skip("the livemed program is not installed in this environment")
    with Store(tmp_path / "s.db") as store:
        store.put(
            [make_case(f"demo:{i}", query=f"Question {i}: what can I take for my toe?") for i in range(CASES)]
        )
    config = tmp_path / "livemed.toml"
    config.write_text(
        f'[models."openai/fake-gpt"]\nbase_url = "{server.base_url}"\napi_key_env = "{KEY_ENV}"\n'
        f"max_concurrency = {CONCURRENCY}\ntimeout_s = 120\n"
        '[prices."openai/fake-gpt"]\ninput = 0.15\noutput = 0.6\n',
        encoding="utf-8",
    )
    server.script(*(Behavior(text=f"answer {i}") for i in range(ANSWERED)))
    server.default = Behavior(hang=True)
    args = [
        str(PROGRAM),
        "-c",
        str(config),
        "--store",
        str(tmp_path / "s.db"),
        "answer",
        "-m",
        "openai/fake-gpt",
    ]
    env = {**os.environ, KEY_ENV: api_key, "COLUMNS": "200"}
    return subprocess.Popen(
        args, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def wait_for_hanging_calls(tmp_path: Path, server: FakeOpenAIServer, process: subprocess.Popen[str]) -> None:
    """Until every answered call has returned, the next calls hang and the store holds the answered
    replies (a wait for that state, not a timing check: that a paid reply is written in the loop turn
    after it returns is tests/models/test_cache_and_secrets.py's, in one process)."""
    until(lambda: len(server.chat_requests) >= ANSWERED + CONCURRENCY, process, "the hanging calls")
    until(lambda: cached(tmp_path / "s.db") >= ANSWERED, process, "the answered replies' cache writes")


def repeated_on_rerun(tmp_path: Path, server: FakeOpenAIServer, api_key: str) -> int:
    """Requests a second run makes for calls the first run had already been answered."""
    server.default = Behavior(text="late answer")
    before = len(server.chat_requests)
    config = tmp_path / "livemed.toml"
    args = [
        str(PROGRAM),
        "-c",
        str(config),
        "--store",
        str(tmp_path / "s.db"),
        "answer",
        "-m",
        "openai/fake-gpt",
    ]
    env = {**os.environ, KEY_ENV: api_key, "COLUMNS": "200"}
    done = subprocess.run(args, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    sent = len(server.chat_requests) - before
    return sent - (CASES - ANSWERED)  # the calls never answered are rightly sent again


def test_kill_9_after_paid_replies_returned_repeats_none_of_them(
    tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    process = start_answer(tmp_path, server, api_key)
    wait_for_hanging_calls(tmp_path, server, process)
    process.kill()  # SIGKILL: no handler, no flush, no exit code of livemed's own
    process.communicate()
    assert repeated_on_rerun(tmp_path, server, api_key) == 0


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_sigint_mark_the_run_interrupted_and_repeat_nothing(
    signum: int, status: int, tmp_path: Path, server: FakeOpenAIServer, api_key: str
) -> None:
    process = start_answer(tmp_path, server, api_key)
    wait_for_hanging_calls(tmp_path, server, process)
    process.send_signal(signum)
    out, err = process.communicate(timeout=60)
    assert process.returncode == status, out + err
    assert api_key not in out + err
    with Store(tmp_path / "s.db") as store:
        (run,) = list(store.iter(Run))
    assert run.outcome == "interrupted"
    assert run.usage["openai/fake-gpt"].calls >= ANSWERED
    assert repeated_on_rerun(tmp_path, server, api_key) == 0
