"""The pairs file, the held-out split by item, and the CLI's refusals (none of it needs torch)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.errors import InputFileError, LivemedError
from livemed.records import Pair
from livemed.training.judging import read_pairs, split_heldout
from tests.training.builders import make_pair, make_pairs, write_pairs


def cli(tmp_path: Path, *args: str, code: int) -> str:
    """The one-line message of a refused command (what `livemed` prints) and its exit code."""
    result = CliRunner().invoke(app, ["--store", str(tmp_path / "s.db"), *args], env={"COLUMNS": "200"})
    error = result.exception
    if isinstance(error, LivemedError):
        assert error.exit_code == code, repr(error)
        return str(error)
    assert result.exit_code == code, result.output + repr(error)
    return " ".join(result.output.split())


def test_read_pairs_reports_bad_lines_with_file_and_line(tmp_path: Path) -> None:
    path = write_pairs(make_pairs(2), tmp_path / "pairs.jsonl")
    with path.open("a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"kind": "run_state", "x": 1}) + "\n")
        handle.write(json.dumps({"kind": "judge_pair", "dataset": "medqa"}) + "\n")
    items = list(read_pairs(path))
    assert [type(i) for i in items[:2]] == [Pair, Pair]
    errors = [i for i in items if isinstance(i, InputFileError)]
    assert len(errors) == 3
    assert [f"{path}:{n}" in str(e) for n, e in zip((3, 4, 5), errors, strict=True)] == [True] * 3


def test_heldout_split_keeps_items_whole_and_is_seeded() -> None:
    pairs = [make_pair(i, item=f"item{i // 3}") for i in range(60)]  # 20 items, 3 pairs each
    train, held = split_heldout(pairs, 0.25, seed=0)
    assert len(train) + len(held) == 60
    assert 0 < len(held) < 60
    assert not {p.parent_id for p in train} & {p.parent_id for p in held}
    assert split_heldout(pairs, 0.25, seed=0) == (train, held)
    assert split_heldout(pairs, 0.25, seed=1) != (train, held)
    assert split_heldout(pairs, 0.0, seed=0) == (pairs, [])
    with pytest.raises(ValueError, match="held-out fraction"):
        split_heldout(pairs, 1.0, seed=0)


def test_sft_without_a_teacher_is_refused(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(2), tmp_path / "p.jsonl")
    args = ["judges", "train", "--regime", "sft+grpo", "--base", "x", "--pairs", str(pairs), "--out", "o"]
    assert "give --teacher provider/model" in cli(tmp_path, *args, code=2)


def test_grpo_batch_that_does_not_fit_the_generations_is_refused(tmp_path: Path) -> None:
    pairs = write_pairs(make_pairs(2), tmp_path / "p.jsonl")
    args = ["judges", "train", "--regime", "grpo", "--base", "x", "--pairs", str(pairs), "--out", "o"]
    out = cli(tmp_path, *args, "--batch-size", "6", "--num-generations", "4", code=2)
    assert "must be a multiple of --num-generations (4)" in out
    out = cli(
        tmp_path, *args, "--batch-size", "4", "--num-generations", "4", "--reward", "consistency", code=2
    )
    assert "consistency reward needs both orders of a pair in one batch" in out
    assert "regime" in cli(tmp_path, *args[:3], "dpo", *args[4:], code=2)


def test_without_the_extra_the_command_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "trl", None)  # `import trl` now raises ImportError
    pairs = write_pairs(make_pairs(2), tmp_path / "p.jsonl")
    args = ["judges", "train", "--regime", "grpo", "--base", "x", "--pairs", str(pairs), "--out", "o"]
    assert "pip install 'livemed[train]'" in cli(tmp_path, *args, code=2)


def test_the_cli_registers_train_and_regimes_without_torch() -> None:
    import subprocess

    code = (
        "import sys\nfrom livemed.cli import app\n"
        "from livemed.cli.stage_commands import judges_app\n"
        "names = {c.name for c in judges_app.registered_commands}\n"
        "assert {'train', 'regimes'} <= names, names\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'torch', 'transformers', 'trl', 'datasets'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
