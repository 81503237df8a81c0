"""`hf/PATH`: resolved lazily (no torch until a call), batched generate through the engine, output parsed."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from livemed.models import Settings, get_model
from livemed.models.hf import HFModel, fingerprint
from livemed.store import Store
from tests.training.builders import judge_all
from tests.training.extra import needs_train


@needs_train
def test_hf_ids_resolve_without_importing_torch(tmp_path: Path) -> None:
    code = (
        "from livemed.models import get_model\n"
        f"m = get_model('hf/{tmp_path}')\n"
        "import sys\n"
        "assert m.id.startswith('hf/') and m.endpoint.startswith('hf:')\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'torch', 'transformers', 'trl'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_the_extra_an_hf_model_is_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    from livemed.errors import MissingDependencyError

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    with pytest.raises(
        MissingDependencyError, match=r"torch is not installed; run: pip install 'livemed\[train\]'"
    ):
        get_model(f"hf/{tmp_path}")


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="the train extra is installed here")
def test_the_installed_program_says_what_to_install_for_hf(tmp_path: Path) -> None:
    livemed = Path(sys.executable).with_name("livemed")
    store = tmp_path / "s.db"
    done = subprocess.run(
        [str(livemed), "--store", str(store), "answer", "--model", f"hf/{tmp_path}"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "pip install 'livemed[train]'" in line


def test_the_endpoint_changes_when_the_checkpoint_does(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"one")
    before = HFModel(str(tmp_path)).endpoint
    assert before == f"hf:{tmp_path.resolve()}#{fingerprint(tmp_path)}"
    (tmp_path / "model.safetensors").write_bytes(b"longer")
    assert HFModel(str(tmp_path)).endpoint != before
    assert HFModel("org/hub-model").endpoint == "hf:org/hub-model"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from livemed.training.tiny import build_tiny_base

    return build_tiny_base(tmp_path_factory.mktemp("hf") / "tiny", ["<answer>[[A]]</answer>"], seed=0)


@needs_train
def test_concurrent_calls_are_one_batched_generate_and_the_parser_reads_them(
    tiny: Path, sqlite_store: Store
) -> None:
    from livemed.judges.parse import parse_pairwise
    from livemed.models import Completion

    model = get_model(f"hf/{tiny}")
    assert isinstance(model, HFModel)
    loaded = model.load()
    batches: list[int] = []
    generate = loaded.model.generate

    def counting(**kwargs):  # type: ignore[no-untyped-def]
        batches.append(kwargs["input_ids"].shape[0])
        return generate(**kwargs)

    loaded.model.generate = counting
    sampled = Settings(temperature=1.0, max_tokens=12, seed=3)
    first = judge_all(model, sqlite_store, sampled)
    assert batches == [6]  # six concurrent calls, one left-padded generate
    for reply in first:
        assert isinstance(reply, Completion)
        assert reply.model == model.id
        assert reply.finish_reason in {"stop", "length"}
        assert reply.completion_tokens <= 13
        assert reply.prompt_tokens > 100
        parsed = parse_pairwise(reply.text, reply.reasoning)  # a random model: invalid, never a crash
        assert parsed.valid or parsed.reason
    again = judge_all(model, sqlite_store, sampled)  # the response cache answers
    assert batches == [6]
    assert [r.text for r in again] == [r.text for r in first]  # type: ignore[union-attr]
    fresh = judge_all(HFModel(str(tiny)), None, sampled)  # a new model, no cache: the seed decides
    assert [r.text for r in fresh] == [r.text for r in first]  # type: ignore[union-attr]


@needs_train
def test_whitespace_only_replies_are_no_text_as_from_a_server(tiny: Path) -> None:
    from livemed.models import CallFailure

    # this random model's greedy continuation is newlines only: a failed call ("truncated"), not a verdict
    replies = judge_all(HFModel(str(tiny)), None, Settings(temperature=0, max_tokens=6))
    assert all(isinstance(r, CallFailure) and r.reason == "truncated" for r in replies)
    # with a stop string the reply ends there, the stop string left out (as a server does): nothing left
    stopped = judge_all(HFModel(str(tiny)), None, Settings(temperature=0, max_tokens=6, stop=("\n\n",)))
    assert all(isinstance(r, CallFailure) and r.reason == "no_text" for r in stopped)


@needs_train
def test_a_folder_that_is_no_checkpoint_is_a_model_wide_failure(tmp_path: Path) -> None:
    from livemed.models import CallFailure

    [reply, *_] = judge_all(HFModel(str(tmp_path)), None, Settings(max_tokens=4))
    assert isinstance(reply, CallFailure)
    assert reply.reason == "fatal"
    assert "cannot load the checkpoint" in reply.detail
