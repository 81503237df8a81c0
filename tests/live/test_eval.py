"""`livemed eval` against the local fake server: the same records and scores as the separate commands,
nothing finished paid twice after a kill, and the failure rules when the grader's endpoint fails."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import UserError
from livemed.records import Answer, Grade, GradeFailure, Run, Score
from livemed.store import Store
from tests.fakes.openai_server import Behavior, FakeOpenAIServer, judge_reply, judge_responder
from tests.waits import cached, until

KEY_ENV = "LIVEMED_EVAL_TEST_KEY"
CANDIDATE = "openai/fake-candidate"
JUDGE = "openai/fake-judge"
PROGRAM = Path(sys.executable).with_name("livemed")
EXAMPLES = 8
CRITERIA = 4  # per example: three positive, one negative


def healthbench_file(path: Path, n: int = EXAMPLES) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for i in range(n):
            rubrics = [
                {
                    "criterion": f"Advises rest and fluids ({k}) for case {i}",
                    "points": k + 1,
                    "tags": ["axis:accuracy"],
                }
                for k in range(CRITERIA - 1)
            ] + [
                {
                    "criterion": "Recommends antibiotics without indication",
                    "points": -4,
                    "tags": ["axis:safety"],
                }
            ]
            line = {
                "prompt_id": f"p{i}",
                "prompt": [
                    {"role": "user", "content": f"I have had a cough for {i + 1} days. What should I do?"}
                ],
                "rubrics": rubrics,
                "example_tags": ["theme:context_seeking"],
            }
            handle.write(json.dumps(line) + "\n")
    return path


def project(tmp_path: Path, candidate_url: str, judge_url: str) -> Path:
    """A project folder: livemed.toml (both models priced, so their replies are written at once), a store."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "livemed.toml"
    lines = ['store = "livemed.db"']
    for model, url in ((CANDIDATE, candidate_url), (JUDGE, judge_url)):
        lines += [
            f'[models."{model}"]',
            f'base_url = "{url}"',
            f'api_key_env = "{KEY_ENV}"',
            "max_concurrency = 4",
            "max_retries = 0",
            "timeout_s = 60",
            f'[prices."{model}"]',
            "input = 0.15",
            "output = 0.6",
        ]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return config


def cli(config: Path, *argv: str) -> Any:
    env = {KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    return CliRunner(env=env).invoke(app, ["--config", str(config), *argv])


def program(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The installed `livemed` (what a user runs: its exit code and last line)."""
    if not PROGRAM.exists():
        pytest.skip("the livemed program is not installed in this environment")
    env = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
    command = [str(PROGRAM), "--config", str(config), *argv]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def records(config: Path) -> dict[str, Any]:
    with Store(config.parent / "livemed.db") as store:
        return {
            "answers": sorted((a.id, a.text) for a in store.iter(Answer)),
            "grades": sorted((g.id, g.met, g.explanation) for g in store.iter(Grade)),
            "failures": sorted(f.id for f in store.iter(GradeFailure)),
            "scores": sorted((s.id, s.score, sorted(s.per_tag.items())) for s in store.iter(Score)),
        }


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(responder=judge_responder()) as server:
        yield server


def test_eval_writes_what_the_four_commands_write(tmp_path: Path, judge_server: FakeOpenAIServer) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl")
    url = judge_server.base_url
    separate = project(tmp_path / "separate", url, url)
    for argv in (
        ["import-healthbench", str(data), "--published", "2025-01-01"],
        ["answer", "--model", CANDIDATE],
        ["grade", "--judge", JUDGE],
        ["scores", "--judge", JUDGE, "--convention", "healthbench"],
    ):
        result = cli(separate, *argv)
        assert result.exit_code == 0, result.output
    sent_by_commands = len(judge_server.chat_requests)
    together = project(tmp_path / "together", url, url)
    args = ["eval", str(data), "-m", CANDIDATE, "--judge", JUDGE, "--published", "2025-01-01"]
    result = cli(together, *args, "--convention", "healthbench", "--json", str(tmp_path / "hb.json"))
    assert result.exit_code == 0, result.output
    assert len(judge_server.chat_requests) == 2 * sent_by_commands  # the same calls (no cache shared)
    expected = records(separate)
    assert len(expected["answers"]) == EXAMPLES
    assert len(expected["grades"]) == EXAMPLES * CRITERIA
    assert len(expected["scores"]) == EXAMPLES
    assert records(together) == expected
    metrics = json.loads((tmp_path / "hb.json").read_text())
    assert list(metrics) == sorted(metrics)  # simple-evals sorts its keys
    assert metrics["score"] == metrics["overall_score"] == 1.0  # the fake judge meets every positive
    assert metrics["overall_score:n_samples"] == EXAMPLES
    assert metrics["theme:context_seeking:n_samples"] == EXAMPLES
    assert "axis:safety" not in metrics  # a tag without positive points has no score, as in simple-evals
    with Store(together.parent / "livemed.db") as store:
        [run] = [r for r in store.iter(Run) if r.command == "eval"]
    assert run.outcome == "ok"
    assert (run.counts["answer openai/fake-candidate: answer"], run.counts["grade: grade"]) == (8, 32)


def test_eval_grades_answers_already_in_the_store_and_skips_what_is_done(
    tmp_path: Path, judge_server: FakeOpenAIServer
) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl")
    config = project(tmp_path / "p", judge_server.base_url, judge_server.base_url)
    assert cli(config, "import-healthbench", str(data)).exit_code == 0
    assert cli(config, "answer", "--model", CANDIDATE, "--limit", "3").exit_code == 0
    result = cli(config, "eval", "-m", CANDIDATE, "--judge", JUDGE, "--no-cache")
    assert result.exit_code == 0, result.output
    assert len(judge_server.chat_requests) == 3 + (EXAMPLES - 3) + EXAMPLES * CRITERIA
    again = cli(config, "eval", "-m", CANDIDATE, "--judge", JUDGE, "--no-cache")
    assert again.exit_code == 0, again.output
    assert len(judge_server.chat_requests) == 3 + (EXAMPLES - 3) + EXAMPLES * CRITERIA  # nothing sent
    assert len(records(config)["scores"]) == EXAMPLES


def test_a_failing_grader_endpoint_fails_eval_with_one_line_and_no_scores(
    tmp_path: Path, judge_server: FakeOpenAIServer
) -> None:
    data = healthbench_file(tmp_path / "hb.jsonl")
    with FakeOpenAIServer(default=Behavior(status=500, error_message="grader down")) as dead:
        config = project(tmp_path / "p", judge_server.base_url, dead.base_url)
        result = program(config, "eval", str(data), "-m", CANDIDATE, "--judge", JUDGE)
    assert result.returncode == 1, result.stdout + result.stderr
    line = " ".join(result.stderr.strip().splitlines()[-1].split())
    total = EXAMPLES * CRITERIA
    assert line.startswith(f"error: {total} of {total} criteria failed: ")
    assert f"HTTP 500 from {dead.base_url}" in line
    assert line.endswith("; run again to retry them")
    found = records(config)
    assert len(found["answers"]) == EXAMPLES
    assert found["scores"] == []  # not yet graded: a failed call is never a number
    assert len(found["failures"]) == total
    with Store(config.parent / "livemed.db") as store:
        [run] = [r for r in store.iter(Run) if r.command == "eval"]
    assert run.outcome == "partial"  # the answers succeeded, every grade failed


def test_eval_writes_simple_evals_allresults_beside_the_metrics(tmp_path: Path) -> None:
    """`<stem>_allresults.json` in simple-evals' shape: score, metrics without it, and per sample an
    escaped HTML page, the conversation with the reply, and the graded rubric items. A verdict that
    could not be read leaves its answer not graded (eval exits 1); `scores --policy not-met` may count
    it, and then its rubric item is null (`healthbench_results`), never a made-up grade."""
    import hashlib

    data = healthbench_file(tmp_path / "hb.jsonl", n=2)
    lines = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
    lines[0]["prompt"][0]["content"] += " <script>alert(1)</script>"
    data.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    judge = judge_responder()

    def respond(body: dict[str, Any]) -> Behavior:
        about = any("(1) for case 1" in str(m["content"]) for m in body["messages"])  # the repair too
        return Behavior(text="no verdict here") if about else judge(body)

    with FakeOpenAIServer(responder=respond) as server:
        config = project(tmp_path / "p", server.base_url, server.base_url)
        args = ["eval", str(data), "-m", CANDIDATE, "--judge", JUDGE, "--convention", "healthbench"]
        result = cli(config, *args, "--json", str(tmp_path / "out" / "hb.json"))
        assert result.exit_code == 1  # one verdict unusable: that answer is not graded, nothing ranked
        assert "1 of 8 verdicts unusable (unparsable 1)" in str(result.exception)
        assert not (tmp_path / "out" / "hb_allresults.json").exists()
        cli(config, "scores", "--judge", JUDGE, "--convention", "healthbench", "--policy", "not-met",
            "--max-failure-share", "0.2")  # fmt: skip
        from livemed.domains import medical
        from livemed.interop import healthbench_results as R

        with Store(config.parent / "livemed.db") as store:
            counted = [s for s in store.iter(Score) if s.failure_policy == "not-met"]
            assert len(counted) == 2
            metrics = R.simple_evals_metrics(counted, seed=0)
            full = R.simple_evals_allresults(store, counted, metrics, medical())
        (tmp_path / "out").mkdir(exist_ok=True)
        (tmp_path / "out" / "hb.json").write_text(json.dumps(metrics), encoding="utf-8")
        (tmp_path / "out" / "hb_allresults.json").write_text(json.dumps(full), encoding="utf-8")
    metrics = json.loads((tmp_path / "out" / "hb.json").read_text(encoding="utf-8"))
    full = json.loads((tmp_path / "out" / "hb_allresults.json").read_text(encoding="utf-8"))
    assert set(full) == {"score", "metrics", "htmls", "convos", "metadata"}
    assert full["score"] == metrics["score"]
    assert full["metrics"] == {k: v for k, v in metrics.items() if k != "score"}
    assert "score:n_samples" in full["metrics"]
    samples = full["metadata"]["example_level_metadata"]
    assert len(full["htmls"]) == len(full["convos"]) == len(samples) == 2
    with Store(config.parent / "livemed.db") as store:
        answers = {a.case_id: a for a in store.iter(Answer)}
        scores = {s.case_id: s for s in store.iter(Score)}
    for convo, sample, line in zip(full["convos"], samples, lines, strict=True):
        assert set(sample) == {
            "score",
            "usage",
            "rubric_items",
            "prompt",
            "completion",
            "prompt_id",
            "completion_id",
        }
        answer = answers[f"case:healthbench:{line['prompt_id']}"]
        assert sample["prompt_id"] == line["prompt_id"]
        assert sample["prompt"] == line["prompt"]  # an imported conversation is sent as it is
        assert convo == [*line["prompt"], {"role": "assistant", "content": answer.text}]
        assert sample["completion"] == [{"role": "assistant", "content": answer.text}]
        assert (
            sample["completion_id"] == hashlib.sha256((line["prompt_id"] + answer.text).encode()).hexdigest()
        )
        assert sample["score"] == scores[answer.case_id].score
        assert sample["usage"]["input_tokens"] == answer.prompt_tokens
        assert sample["usage"]["input_cached_tokens"] is None
        items = sample["rubric_items"]
        assert [(i["criterion"], i["points"], i["tags"]) for i in items] == [
            (r["criterion"], r["points"], r["tags"]) for r in line["rubrics"]
        ]
        assert set(items[0]) == {"criterion", "points", "tags", "criteria_met", "explanation"}
    assert [i["criteria_met"] for i in samples[0]["rubric_items"]] == [True, True, True, False]
    unread = samples[1]["rubric_items"][1]
    assert unread["criteria_met"] is None
    assert unread["explanation"] == "no verdict (unparsable): counted as not met"  # --policy not-met
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in full["htmls"][0]
    assert "<script>" not in full["htmls"][0]
    assert "<h3>Sampled message</h3>" in full["htmls"][1]


def test_eval_needs_the_healthbench_convention_for_simple_evals_json(tmp_path: Path) -> None:
    config = project(tmp_path, "http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1")
    result = program(config, "eval", "-m", CANDIDATE, "--judge", JUDGE, "--json", str(tmp_path / "x.json"))
    assert result.returncode == 2
    assert "add --convention healthbench" in result.stderr


# --------------------------------------------------------------------------- kill -9 and run again

ANSWERED = 12  # replies the server gives before it holds every later request open


class HoldAfter:
    """Answers like the judge responder for the first `n` requests, then holds them open."""

    def __init__(self, n: int) -> None:
        self.left = n
        self.hold = True

    def __call__(self, body: dict[str, Any]) -> Behavior:
        if self.left <= 0 and self.hold:
            return Behavior(hang=True)
        self.left -= 1
        users = [m["content"] for m in body["messages"] if m.get("role") == "user"]
        return Behavior(text=judge_reply(users[-1]))


def test_kill_9_during_eval_then_eval_again_pays_for_nothing_finished(tmp_path: Path) -> None:
    if not PROGRAM.exists():
        pytest.skip("the livemed program is not installed in this environment")
    data = healthbench_file(tmp_path / "hb.jsonl")
    responder = HoldAfter(ANSWERED)
    with FakeOpenAIServer(responder=responder) as server:
        config = project(tmp_path / "p", server.base_url, server.base_url)
        args = [str(PROGRAM), "--config", str(config), "eval", str(data), "-m", CANDIDATE, "--judge", JUDGE]
        env = {**os.environ, KEY_ENV: "sk-test-not-real", "COLUMNS": "200"}
        process = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        until(lambda: len(server.chat_requests) > ANSWERED, process, "eval's held calls")
        # every answered reply returned and the next call hangs; kill once the store holds the replies
        paid = {json.dumps([r.body["model"], r.body["messages"]]) for r in server.chat_requests[:ANSWERED]}  # type: ignore[index]
        until(lambda: cached(config.parent / "livemed.db") >= len(paid), process, "the replies' cache writes")
        process.kill()
        process.communicate()
        responder.hold = False
        before = len(server.chat_requests)
        again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        sent = len(server.chat_requests) - before
    total = EXAMPLES + EXAMPLES * CRITERIA  # one call per answer and per criterion
    assert sent == total - ANSWERED  # what was answered before the kill is not paid for again
    assert len(records(config)["scores"]) == EXAMPLES


def test_eval_checks_the_same_modes_and_conventions_as_the_stages() -> None:
    from livemed.cli import eval_command
    from livemed.grade.grader import MODES
    from livemed.score import formula as score

    assert eval_command.MODES == MODES
    assert eval_command.CONVENTIONS == score.CONVENTIONS


def test_several_models_get_one_results_file_each() -> None:
    from livemed.interop.healthbench_results import results_path

    assert results_path(Path("out/r.json"), "openai/gpt-4.1", False) == Path("out/r.json")
    assert results_path(Path("out/r.json"), "openai/gpt-4.1", True) == Path("out/r_openai_gpt-4.1.json")


def test_eval_with_a_healthbench_style_grader_template(
    tmp_path: Path, judge_server: FakeOpenAIServer
) -> None:
    """HealthBench imports graded with a HealthBench-style template: simple-evals' layout reaches the
    judge, the grades are the template's judge's (`<judge>@tpl-<hash>`), and eval scores them."""
    from livemed.grade.template import parse_template

    data = healthbench_file(tmp_path / "hb.jsonl", n=2)
    template = tmp_path / "hb-grader.txt"
    template.write_text(
        "Score the last turn.\n# Conversation\n<<conversation>>\n\n# Rubric item\n<<rubric_item>>\n"
    )
    judge = f"{JUDGE}@tpl-{parse_template(template.read_text()).hash}"
    config = project(tmp_path / "p", judge_server.base_url, judge_server.base_url)
    args = ["eval", str(data), "-m", CANDIDATE, "--judge", JUDGE, "--grader-template", str(template)]
    result = cli(config, *args, "--published", "2025-01-01", "--convention", "healthbench")
    assert result.exit_code == 0, result.output
    prompts = [r.body["messages"][-1]["content"] for r in judge_server.chat_requests if r.body]
    graded = [p for p in prompts if p.startswith("Score the last turn.")]
    assert len(graded) == 2 * CRITERIA
    assert any("\nuser: I have had a cough for 1 days. What should I do?\n\nassistant: " in p for p in graded)
    assert any(p.endswith("# Rubric item\n[-4] Recommends antibiotics without indication\n") for p in graded)
    assert f"scores by {judge}" in " ".join(result.output.split())
    with Store(config.parent / "livemed.db") as store:
        assert {g.judge for g in store.iter(Grade)} == {judge}
        assert {s.judge for s in store.iter(Score)} == {judge}
        [run] = [r for r in store.iter(Run) if r.command == "eval"]
    assert run.settings["grader_template"].startswith("hb-grader.txt sha256:")


def test_a_missing_file_is_one_line_whose_advice_runs(tmp_path: Path, shared_data: Path) -> None:
    """`eval nofile`: the file does not exist (not "pass --format"); without FILE, eval runs on the store."""
    store = ["--store", str(tmp_path / "s.db")]
    runner = CliRunner(env={"COLUMNS": "200"})
    kqa = str(shared_data / "k-qa" / "questions_w_answers.jsonl")
    assert (
        runner.invoke(app, [*store, "import-kqa", kqa, "--published", "2024-01-01", "--limit", "2"]).exit_code
        == 0
    )
    assert runner.invoke(app, [*store, "rubrics", "--writer", "offline/rules"]).exit_code == 0
    argv = [*store, "eval", "-m", "offline/reference", "--judge", "offline/lexical"]
    missing = runner.invoke(app, [*argv[:3], str(tmp_path / "nofile"), *argv[3:]])
    assert isinstance(missing.exception, UserError)
    assert missing.exception.exit_code == 2
    message = str(missing.exception)
    assert message.endswith(
        "does not exist: name a HealthBench, K-QA or livemed JSONL file, or none to "
        "evaluate the store's cases"
    )
    assert "--format" not in message
    advised = runner.invoke(app, argv)  # the advice: no FILE, the store's cases
    assert advised.exit_code == 0, advised.output
    assert "offline/reference" in advised.output
