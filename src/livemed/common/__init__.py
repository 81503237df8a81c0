"""Shared helpers that belong to no stage: text tools, atomic writes, data blocks, and the statistics:
`stats` (every bootstrap and permutation test, the score conventions' aggregates and the leaderboard
ranking) and `closed_form` (the statistics computed without resampling: rank tests, effect sizes,
correlation, FDR, the bimodality coefficient, Wilson's proportion)."""
