"""What `livemed demo` says after its contamination step: the simulations' verdicts, plainly labelled.

The demo's cutoffs are SIMULATED (`livemed.demo.SIMULATED_CUTOFF`, `CONTROL_CUTOFF`) and
`offline/memorised` is a simulation of a contaminated model (`livemed.answer.simulation`), so the
verdicts show what the analysis does, not a finding about any real model. This reads the
`contamination.json` the step wrote and prints one line a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the analysis imports scipy: `livemed --help` must not pay for it
    from livemed.analysis.contamination import ContaminationResult, ContaminationRow

HEADLINE = (
    "[bold yellow]These are simulations.[/] The cutoffs are declared by the demo, not real training cutoffs; "
    "offline/memorised answers the cases published by its cutoff from the reference advice."
)


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def describe(row: ContaminationRow) -> str:
    """One line for a model: its verdict (or status), pre − post and the drift-adjusted delta, each with
    its interval (the verdict's words follow them: `analysis.contamination.verdict_words`)."""
    if row.status == "control":
        return f"{row.model}: drift control ({row.control_kind}; cutoff {row.cutoff})"
    if row.status != "tested":
        return f"{row.model}: {row.status} ({row.note})"
    raw = _with_interval(row.pre_minus_post, row.pre_minus_post_low, row.pre_minus_post_high)
    adjusted = _with_interval(row.adjusted, row.adjusted_low, row.adjusted_high)
    return (
        f"{row.model}: [bold]{row.verdict}[/] (pre − post {raw}, "
        f"q {row.q_value if row.q_value is None else f'{row.q_value:.3g}'}, drift-adjusted {adjusted})"
    )


def _with_interval(value: float | None, low: float | None, high: float | None) -> str:
    """`+0.323 [+0.227, +0.423]`: the estimate and the interval its verdict words follow."""
    if low is None or high is None:
        return _num(value)
    return f"{_num(value)} [{low:+.3f}, {high:+.3f}]"


def simulation_lines(result: ContaminationResult) -> list[str]:
    return [HEADLINE, *(f"  {describe(row)}" for row in result.rows)]


def print_simulations(path: Path) -> None:
    """Print the simulations' verdicts from a `contamination.json` (nothing when it is missing)."""
    from livemed.analysis.contamination import ContaminationResult
    from livemed.cli.context import console

    if not path.exists():
        return
    result = ContaminationResult.model_validate_json(path.read_text(encoding="utf-8"))
    for line in simulation_lines(result):
        console.print(line)
