"""Analysis: the tables users publish, from scores, labels and the cases behind them.

The computations are pure functions over records (`leaderboard`, `contamination` with `cutoffs`,
`trends`, `taxonomy`, `bimodality`, `external`); seven modules read the store to gather what they
need (`collect`, `window`, `funnel`, `completeness`, `fairness`, `length`, `provenance`).
Statistics come from `common/stats.py` (resampled) and `common/closed_form.py` (closed form);
`table_files` writes CSV/JSON.
"""
