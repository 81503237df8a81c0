"""Judge validation: metric-grounded preference pairs from real benchmarks, judge runs on them,
correctness / robustness / compliance tables, the rubric grader's own validation, validity cards and
grader comparison. docs/judges.md defines every number."""
