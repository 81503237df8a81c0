"""Regimes side by side: relabelled meta-evaluation tables and gains against the base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app
from livemed.judges.meta import evaluate
from livemed.records import JudgeVerdict
from livemed.store import Store
from livemed.training.compare import PAPER_ROWS, by_regime, gains, parse_regimes


def verdicts(judge: str, right: dict[str, int]) -> list[JudgeVerdict]:
    """Ten medcalc (decomposable, tertile hard) and ten medqa pairs, both orders, one sample each;
    the judge is right on the first `right[dataset]` pairs of each dataset, wrong on the rest."""
    out = []
    for dataset, family in (("medcalc", "decomposable"), ("medqa", "atomic")):
        for i in range(10):
            for order, gold in (("original", "A"), ("swapped", "B")):
                verdict = gold if i < right[dataset] else ("B" if gold == "A" else "A")
                out.append(
                    JudgeVerdict(
                        pair_id=f"pair:{dataset}:{i}",
                        dataset=dataset,
                        family=family,
                        tertile="hard" if family == "decomposable" else None,
                        judge=judge,
                        order=order,
                        gold=gold,
                        verdict=verdict,
                    )
                )
    return out


RUNS = {
    "hf/base": {"medcalc": 6, "medqa": 7},
    "hf/sft": {"medcalc": 7, "medqa": 7},
    "hf/grpo": {"medcalc": 5, "medqa": 6},
    "hf/sft-grpo": {"medcalc": 9, "medqa": 8},
}


def test_gains_against_the_base_by_hand() -> None:
    results = {f"{j} · pairwise": evaluate(verdicts(j, r)) for j, r in RUNS.items()}
    wanted = parse_regimes(["base=hf/base", "grpo=hf/grpo", "sft+grpo=hf/sft-grpo"])
    chosen, missing = by_regime(results, wanted, "pairwise")
    assert missing == []
    assert list(chosen) == ["base (hf/base)", "grpo (hf/grpo)", "sft+grpo (hf/sft-grpo)"]
    table = gains(chosen, "base (hf/base)")
    base, grpo, best, *paper = table.rows
    assert paper == PAPER_ROWS
    assert base["decomposable"] == pytest.approx(0.6)
    assert "Δ average" not in base
    assert best["judge"] == "sft+grpo (hf/sft-grpo)"
    assert best["Δ decomposable"] == pytest.approx(0.3)
    assert best["Δ atomic"] == pytest.approx(0.1)
    assert best["Δ average"] == pytest.approx(0.2)
    assert best["hard"] == pytest.approx(0.9)
    assert grpo["Δ average"] == pytest.approx(-0.1)


def test_regime_specs_are_checked() -> None:
    with pytest.raises(ValueError, match="LABEL=JUDGE"):
        parse_regimes(["hf/base"])
    with pytest.raises(ValueError, match="once"):
        parse_regimes(["a=x", "a=y"])


def test_the_command_prints_the_regimes_and_writes_json(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.put([v for j, r in RUNS.items() for v in verdicts(j, r)])
    args = ["--store", str(db), "judges", "regimes", "--regime", "base=hf/base", "--regime", "sft=hf/sft"]
    result = CliRunner().invoke(app, [*args, "--json", str(tmp_path / "r.json")], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output + repr(result.exception)
    printed = " ".join(result.output.split())
    assert "Regimes against the base" in printed
    assert "Δ against: base (hf/base)" in printed
    assert "sft (hf/sft)" in printed
    assert "paper: SFT→RL 8B" in printed
    payload = json.loads((tmp_path / "r.json").read_text())
    assert payload["sft (hf/sft)"]["decomposable"] == pytest.approx(0.7)
    missing = CliRunner().invoke(app, ["--store", str(db), "judges", "regimes", "--regime", "x=hf/none"])
    assert missing.exception is not None
    assert "no pairwise verdicts stored for hf/none" in str(missing.exception)


def test_a_judge_run_in_two_configurations_is_two_rows_never_missing() -> None:
    results = {
        "hf/sft · pairwise · temperature 0.0": evaluate(verdicts("hf/sft", RUNS["hf/sft"])),
        "hf/sft · pairwise · temperature 1.0": evaluate(verdicts("hf/sft", RUNS["hf/sft"])),
        "hf/sft-grpo · pairwise": evaluate(verdicts("hf/sft-grpo", RUNS["hf/sft-grpo"])),
    }
    chosen, missing = by_regime(results, parse_regimes(["sft=hf/sft", "base=hf/base"]), "pairwise")
    assert missing == ["hf/base"]
    assert list(chosen) == ["sft (hf/sft · temperature 0.0)", "sft (hf/sft · temperature 1.0)"]
