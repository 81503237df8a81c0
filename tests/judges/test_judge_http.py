"""`livemed judges run` against a real HTTP endpoint (the fake OpenAI-compatible server): every reply
that came is a sample (a rambling judge's invalid share is its true one), verdicts of another
configuration are other verdicts, and a dead endpoint stops after K failed requests with one line."""

from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from livemed.cli import app
from livemed.common.prompts import parse_blocks
from livemed.records import Answer, JudgeVerdict, Pair, Rejection
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer

JUDGE = "vllm/rambler"
RAMBLE = "<think>Response A names the population; then again B might, so let me weigh them once more and"


def project(folder: Path, url: str, **settings: object) -> Path:
    """livemed.toml for JUDGE at `url` (4 calls in flight, no retries unless set) and a store."""
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "livemed.toml"
    lines = ['store = "livemed.db"', f'[models."{JUDGE}"]', f'base_url = "{url}"', "max_concurrency = 4"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in {"max_retries": 0, **settings}.items()]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def cli(config: Path, *argv: str, code: int = 0) -> str:
    result = CliRunner().invoke(app, ["--config", str(config), *argv], env={"COLUMNS": "250"})
    assert result.exit_code == code, result.output + repr(result.exception)
    failure = (
        str(result.exception) if result.exception and not isinstance(result.exception, SystemExit) else ""
    )
    return " ".join((result.output + " " + failure).split())


def built(config: Path) -> list[Pair]:
    cli(config, "judges", "build", "--dataset", "pico")
    with Store(config.parent / "livemed.db") as store:
        return list(store.iter(Pair))


class Rambler:
    """Every third of each ten requests (in arrival order: 30 % exactly) is an unclosed `<think>`; the
    others choose slot B. Counts what it sent: rambles, and B replies where B is the worse response."""

    def __init__(self, pairs: list[Pair]) -> None:
        self.better = {frozenset((p.chosen.text, p.rejected.text)): p.chosen.text for p in pairs}
        self.counter = itertools.count()
        self.lock = threading.Lock()
        self.rambled = self.wrong = self.answered = 0

    def __call__(self, body: dict[str, Any]) -> Behavior:
        blocks = [b.text for b in parse_blocks(body["messages"][-1]["content"]) if b.name == "response"]
        with self.lock:
            if next(self.counter) % 10 < 3:
                self.rambled += 1
                return Behavior(text=RAMBLE)
            self.answered += 1
            self.wrong += self.better[frozenset(blocks)] != blocks[1]
        return Behavior(text="<think>B is closer to the abstract.</think><answer>[[B]]</answer>")


def report(config: Path) -> dict[str, Any]:
    out = config.parent / "report.json"
    cli(config, "judges", "report", "--json", str(out))
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))["judges"]
    return data


def test_a_rambling_judges_invalid_share_is_its_true_one_and_a_rerun_asks_nothing(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = project(tmp_path, server.base_url)
        rambler = server.responder = Rambler(built(config))
        argv = ("judges", "run", "--judge", JUDGE, "--limit", "10", "--samples", "2")
        cli(config, *argv)  # every reply came: no failed call, exit 0
        assert server.count == 40
        assert rambler.rambled == 12
        [(label, tables)] = report(config).items()
        assert label == f"{JUDGE} · pairwise"
        pico = tables["datasets"]["pico"]
        assert pico["samples"] == {"correct": 40 - 12 - rambler.wrong, "wrong": rambler.wrong, "invalid": 12}
        assert pico["coverage"]["samples_invalid"] == 12
        share = tables["pooled"]["invalid_share"]
        assert share["value"] == rambler.rambled / (rambler.rambled + rambler.wrong)
        assert share["n"] == rambler.rambled + rambler.wrong
        again = cli(config, *argv)
        assert server.count == 40  # the invalid samples are samples: nothing is asked again
        assert "40 already done" in again
    with Store(tmp_path / "livemed.db") as store:
        invalid = [v for v in store.iter(JudgeVerdict) if not v.valid]
        assert store.count().get("rejection", 0) == 0
    assert len(invalid) == 12
    assert {(v.raw, v.reason) for v in invalid} == {(RAMBLE, "unclosed <think> (no </think>)")}


def test_another_temperature_or_max_tokens_makes_new_verdicts_and_keeps_the_old(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behavior(text="<think>A</think><answer>[[A]]</answer>")) as server:
        config = project(tmp_path, server.base_url)
        built(config)
        argv = ("judges", "run", "--judge", JUDGE, "--limit", "3")
        cli(config, *argv)
        assert "6 seen, 0 already done, wrote 6 judge" in cli(config, *argv, "--temperature", "0.0")
        assert server.count == 12
        assert [r.body["temperature"] for r in server.chat_requests[6:]] == [0.0] * 6  # type: ignore[index]
        cli(config, *argv, "--temperature", "0.0", "--max-tokens", "64")
        assert server.count == 18
        assert [r.body["max_tokens"] for r in server.chat_requests[12:]] == [64] * 6  # type: ignore[index]
        cli(config, *argv, "--temperature", "0.0")
        assert server.count == 18  # each configuration resumes on its own
        labels = sorted(report(config))
    with Store(tmp_path / "livemed.db") as store:
        assert store.count()["judge_verdict"] == 18
    assert labels == [
        f"{JUDGE} · pairwise · max_tokens 64, temperature 0.0",
        f"{JUDGE} · pairwise · max_tokens None, temperature 0.0",
        f"{JUDGE} · pairwise · max_tokens None, temperature 1.0",
    ]


def test_a_dead_endpoint_stops_after_20_failed_requests_with_one_line(tmp_path: Path) -> None:
    with FakeOpenAIServer(default=Behavior(status=500, error_message="judge down")) as dead:
        config = project(tmp_path, dead.base_url)
        pairs = built(config)
        text = cli(config, "judges", "run", "--judge", JUDGE, code=1)
        assert 20 <= dead.count <= 20 + 4  # K, and the calls in flight when the 20th failed
    total = len(pairs) * 2
    stop = f"stopped after 20 consecutive failures from {dead.base_url}: HTTP 500 from {dead.base_url}"
    assert f"{total} of {total} samples failed: {stop}" in text
    with Store(tmp_path / "livemed.db") as store:
        assert store.count().get("judge_verdict", 0) == 0
        assert sum(1 for r in store.iter(Rejection) if r.call_failed) == total
    with FakeOpenAIServer(default=Behavior(text="<think>A</think><answer>[[A]]</answer>")) as alive:
        project(tmp_path, alive.base_url)
        cli(config, "judges", "run", "--judge", JUDGE, "--limit", "5")  # a rerun resumes
        assert alive.count == 10


def test_an_endpoint_that_dies_mid_answer_keeps_what_it_answered(tmp_path: Path, shared_data: Path) -> None:
    """Every stage's calls stop the same way (here `answer`, after 5 with `max_consecutive_failures`)."""
    served = itertools.count()

    def dies_after_8(body: dict[str, Any]) -> Behavior:
        return Behavior(text="Rest and fluids.") if next(served) < 8 else Behavior(status=503)

    with FakeOpenAIServer(responder=dies_after_8) as server:
        config = project(tmp_path, server.base_url, max_retries=2, max_consecutive_failures=5)
        kqa = str(shared_data / "k-qa" / "questions_w_answers.jsonl")
        cli(config, "import-kqa", kqa, "--published", "2024-01-01", "--limit", "30")
        text = cli(config, "answer", "--model", JUDGE, code=1)
        # 5 requests failed after their 3 attempts each; the ones in flight (4 slots) end on the stop
        assert 8 + 5 * 3 <= server.count <= 8 + 3 * (5 + 2 * 4)
    assert f"stopped after 5 consecutive failures from {server.base_url}: HTTP 503" in text
    with Store(tmp_path / "livemed.db") as store:
        assert store.count()["answer"] == 8  # what came before the stop is kept
        assert all(a.text == "Rest and fluids." for a in store.iter(Answer))
