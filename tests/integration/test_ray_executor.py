"""The Ray executor on a local Ray instance: the same records and scores as the default executor,
each call sent once, and one request rate for all workers (measured at the local fake server)."""

from __future__ import annotations

from pathlib import Path

import pytest

from livemed.records import Grade, Score
from livemed.store import Store
from tests.fakes.openai_server import FakeOpenAIServer, judge_responder
from tests.integration import test_scale_out
from tests.integration.test_scale_out import run_all, sent, start, stored
from tests.live.test_eval import CANDIDATE, CRITERIA, JUDGE, healthbench_file

pytest.importorskip("ray")
pytestmark = [pytest.mark.ray, pytest.mark.postgres]
EXAMPLES = 15
RAY = ["[executor]", 'kind = "ray"', "workers = 2"]
pg_url = test_scale_out.pg_url  # the fixture: a fresh PostgreSQL database


def project(folder: Path, store_url: str, server_url: str, *, judge_rpm: float | None = None) -> Path:
    from tests.integration.test_scale_out import project as base

    extra = [f"requests_per_minute = {judge_rpm}"] if judge_rpm else []
    config = base(folder, store_url, server_url, *extra)
    config.write_text(config.read_text(encoding="utf-8") + "\n".join(RAY) + "\n", encoding="utf-8")
    return config


def scores(url: str) -> list[tuple[str, float | None]]:
    with Store(url) as store:
        return sorted((s.id, s.score) for s in store.iter(Score))


def test_ray_workers_write_what_the_default_executor_writes(tmp_path: Path, pg_url: str) -> None:
    from tests.conftest import _fresh_postgres, _postgres_url

    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    steps = [["answer", "--model", CANDIDATE], ["grade", "--judge", JUDGE], ["scores", "--judge", JUDGE]]
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        config = project(tmp_path / "ray", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        outputs = [run_all(config, 1, *step)[0] for step in steps]
        calls = sent(server)
    assert "ray (local instance): 2 worker(s)" in outputs[1]
    assert set(calls.values()) == {1}
    assert len(calls) == EXAMPLES * (1 + CRITERIA)
    base = _postgres_url()
    assert base is not None
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        for other in _fresh_postgres(base):
            default = project(tmp_path / "default", other.url, server.base_url)
            run_all(default, 1, "import-healthbench", str(data), "--published", "2025-01-01")
            for step in steps:
                run_all(default, 1, *step, *(["--executor", "inprocess"] if step[0] != "scores" else []))
            expected, expected_scores = stored(other.url), scores(other.url)
    assert stored(pg_url) == expected
    assert scores(pg_url) == expected_scores
    assert len(expected_scores) == EXAMPLES
    with Store(pg_url) as store:
        assert {g.id for g in store.iter(Grade)} == {g[0] for g in expected["grades"]}
        assert store.state_items("claim") == {}


def test_the_request_rate_of_a_model_holds_for_all_ray_workers(tmp_path: Path, pg_url: str) -> None:
    rpm = 600.0  # 10 a second, bursts of 10: 60 calls take at least 5 s whatever the workers
    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    with FakeOpenAIServer(responder=judge_responder()) as server:
        config = project(tmp_path / "p", pg_url, server.base_url, judge_rpm=rpm)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE, "--executor", "inprocess")
        answered = len(server.chat_requests)
        [output] = run_all(config, 1, "grade", "--judge", JUDGE)
        times = sorted(r.received_at for r in server.chat_requests[answered:])
    assert len(times) == EXAMPLES * CRITERIA
    assert f"{EXAMPLES * CRITERIA} request(s) booked on the shared rate" in output
    workers = [line for line in output.splitlines() if line.startswith("--- worker")]
    assert len(workers) == 2
    per_second = rpm / 60
    assert times[-1] - times[0] >= (len(times) - per_second) / per_second * 0.9
    # never ahead of one schedule: the k-th call no earlier than its slot (bursts of one second's worth);
    # a loaded machine may delay calls (they then arrive late, together), never bring one forward
    ahead = [k for k, t in enumerate(times) if t - times[0] < (k - per_second) / per_second - 1.0]
    assert ahead == []


def test_an_unreachable_cluster_is_one_line(tmp_path: Path, pg_url: str) -> None:
    config = project(tmp_path / "p", pg_url, "http://127.0.0.1:9/v1")
    text = config.read_text(encoding="utf-8").replace('kind = "ray"', 'kind = "ray"\naddress = "127.0.0.1:9"')
    config.write_text(text, encoding="utf-8")
    process = start(config, "grade", "--judge", JUDGE)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1, out + err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1].startswith("error: cannot reach the Ray cluster at 127.0.0.1:9: ")
    assert "refused" in lines[-1]


def _ray_workers_below(pid: int) -> list[int]:
    """The pids of the Ray task processes running our `worker` among the descendants of `pid`."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                if b"ray::worker" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
            except OSError:
                continue
    return found


def test_a_killed_ray_worker_is_run_again_and_nothing_is_lost(tmp_path: Path, pg_url: str) -> None:
    import os
    import signal
    import time

    data = healthbench_file(tmp_path / "hb.jsonl", EXAMPLES)
    total = EXAMPLES * CRITERIA
    with FakeOpenAIServer(responder=judge_responder(latency=0.3)) as server:
        config = project(tmp_path / "p", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE, "--executor", "inprocess")
        driver = start(config, "grade", "--judge", JUDGE)
        deadline = time.monotonic() + 120
        with Store(pg_url) as store:
            while next(store.ids("grade"), None) is None and time.monotonic() < deadline:
                time.sleep(0.2)
        victims = _ray_workers_below(driver.pid)
        assert victims, "no Ray worker process found"
        os.kill(victims[0], signal.SIGKILL)
        out, err = driver.communicate(timeout=300)
        calls = sent(server)
    assert driver.returncode == 0, out + err
    assert out.count("--- worker") == 2
    found = stored(pg_url)
    assert len(found["grades"]) == total  # nothing lost
    assert sum(n - 1 for n in calls.values()) <= 8  # at most the killed worker's calls in flight again


def test_workers_whose_calls_failed_fail_the_command_with_one_line(tmp_path: Path, pg_url: str) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl", 3)
    with FakeOpenAIServer(responder=judge_responder()) as server:
        config = project(tmp_path / "p", pg_url, server.base_url)
        run_all(config, 1, "import-healthbench", str(data), "--published", "2025-01-01")
        run_all(config, 1, "answer", "--model", CANDIDATE, "--executor", "inprocess")
    text = config.read_text(encoding="utf-8").replace(server.base_url, "http://127.0.0.1:9/v1")
    config.write_text(text, encoding="utf-8")  # the grader's endpoint is gone now
    process = start(config, "grade", "--judge", JUDGE)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 1, out + err
    line = [line for line in err.splitlines() if line.strip()][-1]
    assert line.startswith("error: ")
    assert "of 2 Ray workers failed; first: error: " in line
    assert "failed: " in line  # the worker's own one-line failure (its criteria's calls failed)


def test_update_on_two_ray_workers_stores_what_one_update_stores(tmp_path: Path, pg_url: str) -> None:
    """The whole week (`update`: harvest → curate → rubrics → answers → grades → scores) fanned out
    over two Ray workers on one PostgreSQL store: one update's records, each call sent once."""
    from tests.live.helpers import contents
    from tests.live.helpers import project as live_project

    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        alone = live_project(tmp_path / "alone", docs=20, url=server.base_url)
        run_all(alone, 1, "update")
        one = sent(server)
    with FakeOpenAIServer(responder=judge_responder(latency=0.02)) as server:
        shared = live_project(tmp_path / "ray", docs=20, url=server.base_url)
        with shared.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(["", "[executor]", "workers = 2", ""]))
        [output] = run_all(shared, 1, "--store", pg_url, "update", "--executor", "ray")
        two = sent(server)
    assert "ray (local instance): 2 worker(s)" in output
    assert set(two.values()) == {1}
    assert two == one
    assert contents(shared, pg_url) == contents(alone)
    with Store(pg_url) as store:
        assert store.state_items("claim") == {}
