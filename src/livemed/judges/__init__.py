"""Judge validation: metric-grounded preference pairs from real benchmarks, judge runs on them,
correctness / robustness / compliance tables, the rubric grader's own validation, validity cards,
grader comparison, agreement with human labels and batched-vs-per-criterion modes.
docs/judges.md defines every number."""
