"""Analysis: pure functions from scores and labels to the tables users publish.

- `inputs`: one score per (model, case) from Score records;
- `leaderboard`: mean with bootstrap interval, per axis, coverage, harm, failures; paired comparison;
- `contamination` (+ `cutoffs`): full vs post-cutoff, pre vs post split, drift control, BH;
- `external`: per-item results from a CSV/JSONL file, or `contamination_check()` from code, for it;
- `trends`: score by month of case publication;
- `taxonomy` (+ `diagnose`, the LLM classifier): root causes of the lowest-scoring answers;
- `stats`: bootstrap, permutation, Mann–Whitney, Cliff's delta, Benjamini–Hochberg;
- `tables`: CSV/JSON writers; `collect`: reads what the analyses need from the store.
"""
