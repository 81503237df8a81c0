"""Analysis: the tables users publish, from scores, labels and the cases behind them.

The computations are pure functions over records (`leaderboard`, `contamination` with `cutoffs`,
`trends`, `taxonomy`, `bimodality`, `external`); the modules that read the store say so in their
docstring and only gather what those functions need (`collect`, `window`, `funnel`, `completeness`,
`fairness`, `length`, `provenance`). Statistics come from `common/stats.py`; `table_files` writes CSV/JSON.
"""
