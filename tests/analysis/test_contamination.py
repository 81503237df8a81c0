"""Contamination analysis: the insufficient-data guard, the tests, the drift control, BH, the registry."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from livemed.analysis.contamination import AnalysisSettings, Side, analyse, side, verdict_words
from livemed.analysis.cutoffs import CutoffEntry, bundled_cutoffs, find_cutoff, load_cutoffs
from livemed.analysis.inputs import CaseScore
from livemed.common.closed_form import benjamini_hochberg
from livemed.errors import InputFileError
from tests.analysis.builders import START, rows

CUTOFF = (START + timedelta(days=99)).date()  # cases on days 0..99 are pre-cutoff
FAST = AnalysisSettings(resamples=1000, permutations=1000)


def entry(day: date) -> CutoffEntry:
    return CutoffEntry(cutoff=day, source="test")


REGISTRY = {
    "fake/contaminated": entry(CUTOFF),
    "fake/clean": entry(CUTOFF),
    "fake/after": entry(date(2030, 1, 1)),
    "fake/before": entry(date(2020, 1, 1)),
}


def noisy(
    model: str, pre: float, post: float, n_pre: int = 100, n_post: int = 60, seed: int = 0
) -> list[CaseScore]:
    rng = np.random.default_rng(seed)
    values = np.clip(np.r_[rng.normal(pre, 0.1, n_pre), rng.normal(post, 0.1, n_post)], 0, 1)
    return rows(model, list(values))


def by_model(result_rows: list) -> dict:  # type: ignore[type-arg]
    return {r.model: r for r in result_rows}


def test_fewer_than_50_post_cutoff_cases_is_insufficient_data_without_verdict() -> None:
    result = analyse(noisy("fake/contaminated", 0.9, 0.1, n_post=49), REGISTRY, FAST)
    row = result.rows[0]
    assert (row.status, row.n_pre, row.n_post) == ("insufficient data", 100, 49)
    assert row.verdict is None
    assert row.p_mannwhitney is None
    assert row.significant is None
    assert "49 post-cutoff" in row.note
    assert result.summary.n_tested == 0
    assert result.summary.share_significant is None
    assert row.mean_full is not None
    assert row.mean_post is not None

    tested = analyse(noisy("fake/contaminated", 0.9, 0.1, n_post=50), REGISTRY, FAST).rows[0]
    assert tested.status == "tested"
    assert tested.verdict is not None


def test_a_drop_that_controls_do_not_show_is_a_contamination_signal() -> None:
    data = noisy("fake/contaminated", 0.8, 0.5) + noisy("fake/clean", 0.6, 0.6, seed=1)
    data += noisy("fake/after", 0.6, 0.6, seed=2)
    result = analyse(data, REGISTRY, FAST)
    rows_ = by_model(result.rows)
    bad, clean, control = rows_["fake/contaminated"], rows_["fake/clean"], rows_["fake/after"]
    assert control.status == "control"
    assert control.control_kind == "after every case"
    assert bad.p_mannwhitney is not None
    assert bad.p_mannwhitney < 0.001
    assert bad.q_value is not None
    assert bad.q_value < 0.05
    assert bad.pre_minus_post == pytest.approx(bad.mean_pre - bad.mean_post)
    assert bad.full_minus_post == pytest.approx(bad.mean_full - bad.mean_post)
    assert bad.full_minus_post == pytest.approx(100 / 160 * bad.pre_minus_post)
    assert bad.cliffs_delta is not None
    assert bad.cliffs_delta > 0.8
    assert bad.adjusted is not None
    assert bad.adjusted_low is not None
    assert bad.adjusted_low > 0
    assert bad.verdict == "contamination signal"
    assert clean.verdict == "no significant drop"
    assert clean.significant is False
    s = result.summary
    assert (s.n_tested, s.n_significant, s.n_signal, s.share_significant) == (2, 1, 1, 0.5)
    assert s.controls == ["fake/after"]


def test_drift_control_stops_newer_harder_cases_being_called_contamination() -> None:
    data = noisy("fake/contaminated", 0.8, 0.5) + noisy("fake/before", 0.7, 0.4, seed=3)
    row = by_model(analyse(data, REGISTRY, FAST).rows)["fake/contaminated"]
    assert row.significant is True
    assert row.drift == pytest.approx(0.3, abs=0.05)
    assert row.drift_low is not None
    assert row.drift_high is not None
    assert 0 < row.drift_low < row.drift < row.drift_high
    assert row.p_drift is not None
    assert row.p_drift < 0.01
    assert row.adjusted is not None
    assert abs(row.adjusted) < 0.06
    assert row.verdict == "drop not distinguishable from drift"  # the adjusted interval includes 0


def test_without_controls_a_significant_drop_says_so() -> None:
    row = analyse(noisy("fake/contaminated", 0.8, 0.5), REGISTRY, FAST).rows[0]
    assert row.verdict == "significant drop (no drift control)"
    assert row.n_controls == 0


def test_models_without_a_registered_cutoff() -> None:
    row = analyse(noisy("vllm/unknown-model", 0.5, 0.5), REGISTRY, FAST).rows[0]
    assert row.status == "no cutoff"
    assert row.verdict is None


def test_bh_correction_across_models_changes_the_verdict() -> None:
    # four tested models: the q-values are the BH adjustment of their Mann–Whitney p-values
    registry = {f"fake/m{i}": entry(CUTOFF) for i in range(4)}
    data = [r for i in range(3) for r in noisy(f"fake/m{i}", 0.62, 0.58, seed=10 + i)]
    data += noisy("fake/m3", 0.6, 0.6, seed=20)
    result = analyse(data, registry, FAST)
    ps = [r.p_mannwhitney for r in result.rows]
    qs = [r.q_value for r in result.rows]
    assert all(q is not None and p is not None and q >= p for p, q in zip(ps, qs, strict=True))
    assert qs == pytest.approx(benjamini_hochberg([p or 0.0 for p in ps]))
    assert result.summary.n_significant == sum(r.significant is True for r in result.rows)


def test_bundled_registry_names_a_source_for_every_cutoff() -> None:
    registry = bundled_cutoffs()
    assert len(registry) >= 5
    assert all(e.source.strip() and e.cutoff.year >= 2023 for e in registry.values())
    key, found = find_cutoff("openai/gpt-4o-mini", registry)  # type: ignore[misc]
    assert (key, found.cutoff) == ("gpt-4o-mini", date(2023, 10, 31))
    assert find_cutoff("vllm/meta-llama/Llama-3.1-8B-Instruct", registry) is not None
    assert find_cutoff("OPENAI/GPT-4O", registry) is not None  # case-insensitive
    assert find_cutoff("openai/gpt-4o-mini-tts", registry) is None  # no prefix guessing


def test_user_registry_overrides_and_can_drop_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "cutoffs.toml"
    path.write_text('[models."gpt-4o-mini"]\ncutoff = 2024-01-31\nsource = "my notes"\n', encoding="utf-8")
    merged = load_cutoffs(path)
    assert merged["gpt-4o-mini"].cutoff == date(2024, 1, 31)
    assert "gpt-4o" in merged
    path.write_text(
        'include_defaults = false\n[models."x"]\ncutoff = 2024-01-31\nsource = "s"\n', encoding="utf-8"
    )
    assert list(load_cutoffs(path)) == ["x"]


def test_user_entry_wins_when_keyed_by_an_alias_or_another_case(tmp_path: Path) -> None:
    path = tmp_path / "cutoffs.toml"
    path.write_text(
        '[models."gpt-4o-2024-08-06"]\ncutoff = 2024-06-30\nsource = "my notes"\n'
        '[models."GPT-4o-mini"]\ncutoff = 2024-02-29\nsource = "my notes"\n',
        encoding="utf-8",
    )
    merged = load_cutoffs(path)
    key, entry = find_cutoff("openai/gpt-4o-2024-08-06", merged)  # type: ignore[misc]
    assert (key, entry.cutoff) == ("gpt-4o-2024-08-06", date(2024, 6, 30))
    key, entry = find_cutoff("openai/gpt-4o-mini", merged)  # type: ignore[misc]
    assert (key, entry.cutoff) == ("GPT-4o-mini", date(2024, 2, 29))
    key, entry = find_cutoff("openai/gpt-4o", merged)  # type: ignore[misc]
    assert (key, entry.cutoff) == ("gpt-4o", date(2023, 10, 31))  # the bundled entry's other names stay


def test_bad_registry_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cutoffs.toml"
    path.write_text('[models."x"]\ncutoff = 2024-01-31\n', encoding="utf-8")
    with pytest.raises(InputFileError, match=r"cutoffs\.toml.*source"):
        load_cutoffs(path)
    with pytest.raises(InputFileError, match="cannot read"):
        load_cutoffs(tmp_path / "missing.toml")


def test_too_few_pre_cutoff_cases_is_insufficient_data_too() -> None:
    days = list(range(91, 100)) + list(range(100, 160))  # 9 cases up to the cutoff (day 99), 60 after
    row = analyse(rows("fake/contaminated", [0.9] * 9 + [0.1] * 60, days), REGISTRY, FAST).rows[0]
    assert (row.n_pre, row.n_post) == (9, 60)
    assert row.status == "insufficient data"
    assert row.verdict is None


# Every combination of where the pre − post interval (raw) and the drift-adjusted interval lie, and
# whether BH q < alpha: the verdict's words. "—" is no interval (no drift control, for adjusted).
VERDICTS = """
raw         adjusted    q<alpha  verdict
above 0     above 0     yes      contamination signal
above 0     includes 0  yes      drop not distinguishable from drift
above 0     below 0     yes      drop smaller than drift
above 0     —           yes      significant drop (no drift control)
above 0     above 0     no       no significant drop
above 0     includes 0  no       no significant drop
above 0     below 0     no       no significant drop
above 0     —           no       no significant drop
includes 0  above 0     yes      explained by drift
includes 0  below 0     yes      explained by drift
includes 0  includes 0  yes      not distinguishable
includes 0  —           yes      not distinguishable
includes 0  above 0     no       explained by drift
includes 0  below 0     no       explained by drift
includes 0  includes 0  no       no significant drop
includes 0  —           no       no significant drop
below 0     above 0     yes      no significant drop
below 0     includes 0  yes      no significant drop
below 0     below 0     yes      no significant drop
below 0     —           yes      no significant drop
below 0     above 0     no       no significant drop
below 0     includes 0  no       no significant drop
below 0     below 0     no       no significant drop
below 0     —           no       no significant drop
—           above 0     yes      not distinguishable
—           includes 0  yes      not distinguishable
—           below 0     yes      not distinguishable
—           —           yes      not distinguishable
—           above 0     no       not distinguishable
—           includes 0  no       not distinguishable
—           below 0     no       not distinguishable
—           —           no       not distinguishable
"""


def _verdict_table() -> list[tuple[Side | None, Side | None, bool, str]]:
    def cell(text: str) -> Side | None:
        return None if text == "—" else cast(Side, text)

    out = []
    for line in VERDICTS.strip().splitlines()[1:]:
        raw, adjusted, q, verdict = line[:12].strip(), line[12:24].strip(), line[24:33].strip(), line[33:]
        out.append((cell(raw), cell(adjusted), q == "yes", verdict.strip()))
    return out


def test_the_verdict_table_covers_every_combination_once() -> None:
    table = _verdict_table()
    keys = {(raw, adjusted, q) for raw, adjusted, q, _ in table}
    sides: list[Side | None] = ["above 0", "includes 0", "below 0", None]
    assert len(table) == len(keys) == 4 * 4 * 2
    assert keys == {(r, a, q) for r in sides for a in sides for q in (True, False)}


@pytest.mark.parametrize(("raw", "adjusted", "q_significant", "expected"), _verdict_table())
def test_the_verdict_words_of_every_combination_of_intervals(
    raw: Side | None, adjusted: Side | None, q_significant: bool, expected: str
) -> None:
    assert verdict_words(raw, adjusted, q_significant) == expected


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (0.01, 0.3, "above 0"),
        (0.0, 0.3, "includes 0"),  # an interval touching 0 does not exclude it
        (-0.004, 0.401, "includes 0"),  # the interval of issue 34: not "explained by drift"
        (-0.3, 0.0, "includes 0"),
        (0.0, 0.0, "includes 0"),
        (-0.3, -0.01, "below 0"),
        (-2e-16, -1e-16, "includes 0"),  # rounding of a mean of equal scores, not a difference
        (1e-16, 2e-16, "includes 0"),
        (None, 0.3, None),
        (0.1, None, None),
    ],
)
def test_where_an_interval_lies(low: float | None, high: float | None, expected: Side | None) -> None:
    assert side(low, high) == expected


def test_a_significant_drop_whose_adjusted_interval_includes_0_is_not_explained_by_drift() -> None:
    # issue 34's line: a significant raw drop, drift-adjusted interval [−0.004, 0.401]
    assert verdict_words("above 0", side(-0.004, 0.401), True) == "drop not distinguishable from drift"


def test_no_raw_difference_and_a_drift_only_adjusted_difference_is_explained_by_drift() -> None:
    # the model scores 0.6 on every case; the control is much worse on the newer cases, so the adjusted
    # difference (model − control, pre − post) is negative only because of the drift
    data = rows("fake/clean", [0.6] * 160) + noisy("fake/before", 0.8, 0.3, seed=6)
    row = by_model(analyse(data, REGISTRY, FAST).rows)["fake/clean"]
    assert (row.pre_minus_post_low, row.pre_minus_post_high) == pytest.approx((0.0, 0.0), abs=1e-15)
    assert row.adjusted_high is not None
    assert row.adjusted_high < 0
    assert row.drift_low is not None
    assert row.drift_low > 0
    assert (row.verdict, row.significant) == ("explained by drift", False)


def _studies() -> list[list[CaseScore]]:
    """Constructed data: drops and no drops, with and without drift, with a control before or after."""
    studies = []
    for i, (pre, post, c_pre, c_post) in enumerate(
        [(0.8, 0.5, 0.6, 0.6), (0.8, 0.5, 0.7, 0.4), (0.6, 0.6, 0.8, 0.3), (0.6, 0.6, 0.6, 0.6),
         (0.7, 0.6, 0.7, 0.65), (0.5, 0.7, 0.6, 0.6), (0.8, 0.5, 0.6, 0.9), (0.8, 0.5, 0.9, 0.3)]
    ):  # fmt: skip
        control = "fake/before" if i % 2 else "fake/after"
        studies.append(
            noisy("fake/contaminated", pre, post, seed=i) + noisy(control, c_pre, c_post, seed=50 + i)
        )
    studies.append(noisy("fake/contaminated", 0.8, 0.5, seed=99))  # no drift control
    return studies


def _excludes_0(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


def _includes_0(low: float | None, high: float | None) -> bool:
    return low is not None and high is not None and low <= 0 <= high


@pytest.mark.parametrize("data", _studies())
def test_each_verdict_matches_its_intervals_on_constructed_data(data: list[CaseScore]) -> None:
    row = by_model(analyse(data, REGISTRY, FAST).rows)["fake/contaminated"]
    raw, adjusted = (row.pre_minus_post_low, row.pre_minus_post_high), (row.adjusted_low, row.adjusted_high)
    assert row.q_value is not None
    significant = row.q_value < FAST.alpha and (raw[0] or 0.0) > 0
    assert row.significant is significant
    expected = {
        "explained by drift": _excludes_0(*adjusted) and _includes_0(*raw),
        "contamination signal": significant and (adjusted[0] or 0.0) > 0,
        "drop not distinguishable from drift": significant and _includes_0(*adjusted),
        "drop smaller than drift": significant and (adjusted[1] or 0.0) < 0,
        "significant drop (no drift control)": significant and row.adjusted is None,
    }
    holds = [verdict for verdict, condition in expected.items() if condition]
    assert holds == ([row.verdict] if row.verdict in expected else []), (row.verdict, raw, adjusted)
    if row.verdict not in expected:
        assert row.verdict in ("no significant drop", "not distinguishable")


def test_the_constructed_studies_reach_every_verdict_an_interval_can_give() -> None:
    verdicts = {by_model(analyse(d, REGISTRY, FAST).rows)["fake/contaminated"].verdict for d in _studies()}
    assert verdicts == {
        "contamination signal",
        "drop not distinguishable from drift",
        "drop smaller than drift",
        "significant drop (no drift control)",
        "explained by drift",
        "no significant drop",
    }
